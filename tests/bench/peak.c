// Wasm SIMD throughput probe: 12 independent f32x4 multiply-then-add chains.
// Each chain step is one f32x4.mul and one f32x4.add = 8 flops; the chains do
// not depend on each other, so the CPU can overlap them and we measure the
// arithmetic throughput rather than the latency of one chain.
// Built by tests/bench/bench.mjs with:
//   emcc -O3 -msimd128 -sSTANDALONE_WASM --no-entry peak.c -o build/bench/peak.wasm
#include <wasm_simd128.h>

#define CHAINS 12
#define UNROLL 4

// Flops done by peak_run(iters): iters * UNROLL * CHAINS * 8.
__attribute__((export_name("peak_flops_per_iter")))
int peak_flops_per_iter(void) { return UNROLL * CHAINS * 8; }

__attribute__((export_name("peak_run")))
float peak_run(int iters, float seed) {
  // m < 1 and a small so every chain converges to a/(1-m) and never overflows.
  const v128_t m = wasm_f32x4_splat(0.999f);
  const v128_t a = wasm_f32x4_splat(seed * 1e-3f);
  v128_t acc[CHAINS];
  for (int c = 0; c < CHAINS; c++) acc[c] = wasm_f32x4_splat(seed + (float)c);
  for (int it = 0; it < iters; it++) {
    for (int u = 0; u < UNROLL; u++) {
      // fully unrolled by the compiler (constant trip counts)
      for (int c = 0; c < CHAINS; c++) acc[c] = wasm_f32x4_add(wasm_f32x4_mul(acc[c], m), a);
    }
  }
  // Fold the chains so none of the work is dead code.
  v128_t s = acc[0];
  for (int c = 1; c < CHAINS; c++) s = wasm_f32x4_add(s, acc[c]);
  return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1) +
         wasm_f32x4_extract_lane(s, 2) + wasm_f32x4_extract_lane(s, 3);
}

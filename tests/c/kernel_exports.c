/* kernel_exports.c: the kernels of c_src/kernels.c exported one by one with
 * a scratch arena, so that tests/kernels.test.mjs can run the SIMD and the
 * scalar wasm builds of them on the same inputs. Built by build.sh into
 * build/wasm-test/; not part of the shipped wasm. */
#include <emscripten.h>

#include "kernels.h"

static float arena[1 << 18];

/* The scratch the tests lay their tensors out in: 1 MiB of floats. */
EMSCRIPTEN_KEEPALIVE float *kt_arena(void) { return arena; }
EMSCRIPTEN_KEEPALIVE int kt_arena_floats(void) { return (int)(sizeof arena / sizeof arena[0]); }

/* c (M, N) = alpha * a (M, K) @ b (K, N), dense rows. */
EMSCRIPTEN_KEEPALIVE void kt_gemm(float *c, const float *a, const float *b, int M, int N, int K, float alpha) {
    attn_gemm(c, N, a, K, b, N, M, N, K, alpha);
}

/* c (M, N) = alpha * a (M, K) @ bt^T, bt (N, K) packed into `packed` (N * K) first. */
EMSCRIPTEN_KEEPALIVE void kt_gemm_packed(float *c, float *packed, const float *a, const float *bt,
                                         int M, int N, int K, float alpha) {
    attn_pack_strips(packed, bt, N, K);
    attn_gemm_packed(c, N, a, K, packed, M, N, K, alpha);
}

/* x (rows, n) <- softmax of each row, in place. */
EMSCRIPTEN_KEEPALIVE void kt_softmax(float *x, int rows, int n) { attn_softmax_rows(x, n, rows, n); }

/* c (M, N) = alpha * a^T @ b, a (K, M), b (K, N), dense rows. */
EMSCRIPTEN_KEEPALIVE void kt_gemm_tn(float *c, const float *a, const float *b, int M, int N, int K, float alpha) {
    attn_gemm_tn(c, N, a, M, b, N, M, N, K, alpha);
}

/* c (M, N) += alpha * a (M, K) @ b (K, N), dense rows. */
EMSCRIPTEN_KEEPALIVE void kt_gemm_add(float *c, const float *a, const float *b, int M, int N, int K, float alpha) {
    attn_gemm_add(c, N, a, K, b, N, M, N, K, alpha);
}

/* dst (cols, rows) = src (rows, cols)^T. */
EMSCRIPTEN_KEEPALIVE void kt_transpose(float *dst, const float *src, int rows, int cols) {
    attn_transpose(dst, src, rows, cols);
}

/* dx (rows, n) <- the softmax backward of p, dp (rows, n). */
EMSCRIPTEN_KEEPALIVE void kt_softmax_backward(float *dx, const float *p, const float *dp, int rows, int n) {
    attn_softmax_backward_rows(dx, p, dp, n, rows, n);
}

/* One online-softmax tile: s (rows, n) in place; m, factor, sum (rows). */
EMSCRIPTEN_KEEPALIVE void kt_softmax_tile_online(float *s, float *m, float *factor, float *sum, int rows, int n) {
    attn_softmax_tile_online(s, m, factor, sum, n, rows, n);
}

/* acc (rows, n) <- acc * factor[r] + x (rows, n). */
EMSCRIPTEN_KEEPALIVE void kt_rescale_add(float *acc, const float *x, const float *factor, int rows, int n) {
    attn_rescale_add(acc, x, factor, rows, n);
}

/* 1 when every entry of x (n) is finite. */
EMSCRIPTEN_KEEPALIVE int kt_all_finite(const float *x, int n) { return attn_all_finite(x, n); }

/* kernels.c: matmul, softmax and transpose, scalar and wasm SIMD128.
 *
 * Layout of this file: for each kernel, the scalar reference first, then the
 * SIMD version, then the public function that picks one. The SIMD code is
 * written against wasm_simd128.h directly; each vector loop is followed by
 * an explicit tail (by 8, then 4, then 1).
 */
#include <math.h>
#include <string.h>

#include "kernels.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#define ATTN_SIMD 1
#else
#define ATTN_SIMD 0
#endif

/* The scalar paths stay compiled in the SIMD build too, next to their SIMD
 * versions; there some are only reference code. */
#define SCALAR_PATH __attribute__((unused)) static

const char *attn_kernel_isa(void) { return ATTN_SIMD ? "wasm-simd128" : "scalar"; }

/* ======================================================================== */
/* Matmul                                                                    */
/* ======================================================================== */

/* c (M, N) = alpha * a (M, K) @ b (K, N). For each output entry the products
 * are added in order k = 0..K-1, then scaled once: the SIMD path below keeps
 * exactly that order, so both paths give the same bits. */
static void gemm_scalar(float *c, int ldc, const float *a, int lda, const float *b,
                        int ldb, int M, int N, int K, float alpha) {
    for (int i = 0; i < M; i++) {
        float *c_i = c + (long)i * ldc;
        const float *a_i = a + (long)i * lda;
        for (int j = 0; j < N; j++) c_i[j] = 0.0f;
        for (int kk = 0; kk < K; kk++) {
            const float a_ik = a_i[kk];
            const float *b_k = b + (long)kk * ldb;
            for (int j = 0; j < N; j++) c_i[j] += a_ik * b_k[j];
        }
        for (int j = 0; j < N; j++) c_i[j] *= alpha;
    }
}

#if ATTN_SIMD
/* One tile of up to 4 rows by 8 columns, c (rows, 8) = alpha * a @ b. The
 * accumulators stay in registers over the whole K loop: each b load serves
 * every row, each broadcast a value serves two vectors. */
static void gemm_tile_4x8(float *c, int ldc, const float *a, int lda, const float *b,
                          int ldb, int rows, int K, v128_t alpha) {
    v128_t acc[4][2];
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = wasm_f32x4_splat(0.0f);
    for (int kk = 0; kk < K; kk++) {
        const float *b_k = b + (long)kk * ldb;
        const v128_t b0 = wasm_v128_load(b_k);
        const v128_t b1 = wasm_v128_load(b_k + 4);
        for (int r = 0; r < rows; r++) {  /* rows is 4 except at the M tail */
            const v128_t a_rk = wasm_f32x4_splat(a[(long)r * lda + kk]);
            acc[r][0] = wasm_f32x4_add(acc[r][0], wasm_f32x4_mul(a_rk, b0));
            acc[r][1] = wasm_f32x4_add(acc[r][1], wasm_f32x4_mul(a_rk, b1));
        }
    }
    for (int r = 0; r < rows; r++) {
        wasm_v128_store(c + (long)r * ldc, wasm_f32x4_mul(acc[r][0], alpha));
        wasm_v128_store(c + (long)r * ldc + 4, wasm_f32x4_mul(acc[r][1], alpha));
    }
}

/* The N tail: one tile of up to 4 rows by 4 columns. */
static void gemm_tile_4x4(float *c, int ldc, const float *a, int lda, const float *b,
                          int ldb, int rows, int K, v128_t alpha) {
    v128_t acc[4];
    for (int r = 0; r < 4; r++) acc[r] = wasm_f32x4_splat(0.0f);
    for (int kk = 0; kk < K; kk++) {
        const v128_t b0 = wasm_v128_load(b + (long)kk * ldb);
        for (int r = 0; r < rows; r++) {
            const v128_t a_rk = wasm_f32x4_splat(a[(long)r * lda + kk]);
            acc[r] = wasm_f32x4_add(acc[r], wasm_f32x4_mul(a_rk, b0));
        }
    }
    for (int r = 0; r < rows; r++) wasm_v128_store(c + (long)r * ldc, wasm_f32x4_mul(acc[r], alpha));
}

static void gemm_simd(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                      int M, int N, int K, float alpha) {
    const v128_t alpha4 = wasm_f32x4_splat(alpha);
    for (int i = 0; i < M; i += 4) {
        const int rows = M - i < 4 ? M - i : 4;
        const float *a_i = a + (long)i * lda;
        float *c_i = c + (long)i * ldc;
        int j = 0;
        for (; j + 8 <= N; j += 8) gemm_tile_4x8(c_i + j, ldc, a_i, lda, b + j, ldb, rows, K, alpha4);
        for (; j + 4 <= N; j += 4) gemm_tile_4x4(c_i + j, ldc, a_i, lda, b + j, ldb, rows, K, alpha4);
        if (j < N) gemm_scalar(c_i + j, ldc, a_i, lda, b + j, ldb, rows, N - j, K, alpha);
    }
}
#endif

void attn_gemm(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
               int M, int N, int K, float alpha) {
#if ATTN_SIMD
    gemm_simd(c, ldc, a, lda, b, ldb, M, N, K, alpha);
#else
    gemm_scalar(c, ldc, a, lda, b, ldb, M, N, K, alpha);
#endif
}

/* ======================================================================== */
/* Softmax over the last axis                                                */
/* ======================================================================== */

/* x (n) <- softmax(x), in place. Three passes: max, exp-sum, normalise. */
SCALAR_PATH void softmax_row_scalar(float *x, int n) {
    float max = -INFINITY;
    for (int j = 0; j < n; j++) max = x[j] > max ? x[j] : max;
    float sum = 0.0f;
    for (int j = 0; j < n; j++) {
        x[j] = expf(x[j] - max);
        sum += x[j];
    }
    for (int j = 0; j < n; j++) x[j] /= sum;
}

#if ATTN_SIMD
/* exp(x) for x <= 0, four lanes at once, to about 1 ulp.
 * Range reduction x = n*ln2 + r with |r| <= ln2/2, then a degree-7 Taylor
 * polynomial for exp(r), then scaling by 2^n built in the exponent bits.
 * Below -87.33 (where 2^n would leave the normal range) the result is 0,
 * so exp(-INFINITY) is exactly 0. NaN stays NaN. */
static v128_t exp_nonpositive_f32x4(v128_t x) {
    const v128_t log2e = wasm_f32x4_splat(1.44269504088896341f);
    const v128_t ln2_hi = wasm_f32x4_splat(0.693145751953125f);
    const v128_t ln2_lo = wasm_f32x4_splat(1.428606765330187045e-06f);
    const v128_t cutoff = wasm_f32x4_splat(-87.33654f);
    const v128_t underflow = wasm_f32x4_lt(x, cutoff);
    const v128_t xc = wasm_f32x4_max(x, cutoff);  /* keeps NaN: max propagates it */

    const v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(xc, log2e));
    v128_t r = wasm_f32x4_sub(xc, wasm_f32x4_mul(n, ln2_hi));
    r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, ln2_lo));

    v128_t p = wasm_f32x4_splat(1.0f / 5040.0f);
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f / 720.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f / 120.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f / 24.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f / 6.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(0.5f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f));

    /* 2^n: (n + 127) << 23 as float bits. n is in [-126, 0] here. */
    const v128_t bits = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(n),
                                                      wasm_i32x4_splat(127)), 23);
    const v128_t result = wasm_f32x4_mul(p, bits);
    return wasm_v128_andnot(result, underflow);  /* underflow lanes -> +0 */
}

static void softmax_row_simd(float *x, int n) {
    /* 1. max */
    v128_t max4 = wasm_f32x4_splat(-INFINITY);
    int j = 0;
    for (; j + 4 <= n; j += 4) max4 = wasm_f32x4_max(max4, wasm_v128_load(x + j));
    max4 = wasm_f32x4_max(max4, wasm_i32x4_shuffle(max4, max4, 2, 3, 0, 1));
    max4 = wasm_f32x4_max(max4, wasm_i32x4_shuffle(max4, max4, 1, 0, 3, 2));
    float max = wasm_f32x4_extract_lane(max4, 0);
    for (; j < n; j++) max = x[j] > max ? x[j] : max;

    /* 2. exp and sum */
    const v128_t max_v = wasm_f32x4_splat(max);
    v128_t sum4 = wasm_f32x4_splat(0.0f);
    for (j = 0; j + 4 <= n; j += 4) {
        const v128_t e = exp_nonpositive_f32x4(wasm_f32x4_sub(wasm_v128_load(x + j), max_v));
        wasm_v128_store(x + j, e);
        sum4 = wasm_f32x4_add(sum4, e);
    }
    float sum = (wasm_f32x4_extract_lane(sum4, 0) + wasm_f32x4_extract_lane(sum4, 1)) +
                (wasm_f32x4_extract_lane(sum4, 2) + wasm_f32x4_extract_lane(sum4, 3));
    for (; j < n; j++) {
        x[j] = expf(x[j] - max);
        sum += x[j];
    }

    /* 3. normalise */
    const v128_t sum_v = wasm_f32x4_splat(sum);
    for (j = 0; j + 4 <= n; j += 4) wasm_v128_store(x + j, wasm_f32x4_div(wasm_v128_load(x + j), sum_v));
    for (; j < n; j++) x[j] /= sum;
}
#endif

void attn_softmax_rows(float *x, int ld, int rows, int n) {
    for (int r = 0; r < rows; r++) {
#if ATTN_SIMD
        softmax_row_simd(x + (long)r * ld, n);
#else
        softmax_row_scalar(x + (long)r * ld, n);
#endif
    }
}

/* ======================================================================== */
/* Transpose                                                                 */
/* ======================================================================== */

/* dst (cols, rows) = src (rows, cols)^T. Memory-bound and done once per
 * head, so the scalar loop serves both builds. */
void attn_transpose(float *dst, const float *src, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(long)c * rows + r] = src[(long)r * cols + c];
}

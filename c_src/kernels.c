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

/* ======================================================================== */
/* Matmul                                                                    */
/* ======================================================================== */

/* c (M, N) = alpha * a (M, K) @ b (K, N). For each output entry the products
 * are added in order k = 0..K-1, then scaled once: the SIMD path below keeps
 * exactly that order, so both paths give the same bits. */
SCALAR_PATH void gemm_scalar(float *c, int ldc, const float *a, int lda, const float *b,
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
/* The tiles below are always inlined and called with a constant `rows`
 * (4, or 1 at the M tail), so their loops unroll and the accumulators stay
 * in registers. */
#define TILE static inline __attribute__((always_inline)) void

/* c (rows, 8) = alpha * a (rows, K) @ b (K, 8). Each b load serves every
 * row; each broadcast a value serves two vectors. */
TILE gemm_tile_x8(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                  const int rows, int K, v128_t alpha) {
    v128_t acc[4][2];
    for (int r = 0; r < rows; r++) acc[r][0] = acc[r][1] = wasm_f32x4_splat(0.0f);
    for (int kk = 0; kk < K; kk++) {
        const float *b_k = b + (long)kk * ldb;
        const v128_t b0 = wasm_v128_load(b_k);
        const v128_t b1 = wasm_v128_load(b_k + 4);
        for (int r = 0; r < rows; r++) {
            const v128_t a_rk = wasm_v128_load32_splat(a + (long)r * lda + kk);
            acc[r][0] = wasm_f32x4_add(acc[r][0], wasm_f32x4_mul(a_rk, b0));
            acc[r][1] = wasm_f32x4_add(acc[r][1], wasm_f32x4_mul(a_rk, b1));
        }
    }
    for (int r = 0; r < rows; r++) {
        wasm_v128_store(c + (long)r * ldc, wasm_f32x4_mul(acc[r][0], alpha));
        wasm_v128_store(c + (long)r * ldc + 4, wasm_f32x4_mul(acc[r][1], alpha));
    }
}

/* The N tail by 4: c (rows, 4) = alpha * a (rows, K) @ b (K, 4). */
TILE gemm_tile_x4(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                  const int rows, int K, v128_t alpha) {
    v128_t acc[4];
    for (int r = 0; r < rows; r++) acc[r] = wasm_f32x4_splat(0.0f);
    for (int kk = 0; kk < K; kk++) {
        const v128_t b0 = wasm_v128_load(b + (long)kk * ldb);
        for (int r = 0; r < rows; r++) {
            const v128_t a_rk = wasm_v128_load32_splat(a + (long)r * lda + kk);
            acc[r] = wasm_f32x4_add(acc[r], wasm_f32x4_mul(a_rk, b0));
        }
    }
    for (int r = 0; r < rows; r++) wasm_v128_store(c + (long)r * ldc, wasm_f32x4_mul(acc[r], alpha));
}

/* One band of `rows` rows across all N columns: by 8, then 4, then 1. */
TILE gemm_band(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
               const int rows, int N, int K, float alpha) {
    const v128_t alpha4 = wasm_f32x4_splat(alpha);
    int j = 0;
    for (; j + 8 <= N; j += 8) gemm_tile_x8(c + j, ldc, a, lda, b + j, ldb, rows, K, alpha4);
    for (; j + 4 <= N; j += 4) gemm_tile_x4(c + j, ldc, a, lda, b + j, ldb, rows, K, alpha4);
    if (j < N) gemm_scalar(c + j, ldc, a, lda, b + j, ldb, rows, N - j, K, alpha);
}

static void gemm_simd(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                      int M, int N, int K, float alpha) {
    int i = 0;
    for (; i + 4 <= M; i += 4)
        gemm_band(c + (long)i * ldc, ldc, a + (long)i * lda, lda, b, ldb, 4, N, K, alpha);
    for (; i < M; i++)
        gemm_band(c + (long)i * ldc, ldc, a + (long)i * lda, lda, b, ldb, 1, N, K, alpha);
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
/* exp(x) for x <= 0, four lanes at once, to about 1 ulp (XNNPACK's method).
 * Range reduction x = n*ln2 + t with |t| <= ln2/2: adding a "magic" number
 * rounds x*log2(e) to the integer n and leaves n + 127 in the low mantissa
 * bits, which shifted into the exponent field give 2^n. Then a degree-7
 * Taylor polynomial for exp(t). Below -87.33 (where 2^n would leave the
 * normal range) the lane is set to +0, so exp(-INFINITY) is exactly 0; what
 * the arithmetic made of such lanes does not matter. NaN stays NaN. */
static v128_t exp_nonpositive_f32x4(v128_t x) {
    const v128_t log2e = wasm_f32x4_splat(1.44269504088896341f);
    const v128_t magic = wasm_f32x4_splat(12583039.0f); /* 0x1.8000FEp23: 1.5 * 2^23 + 127 */
    const v128_t ln2_hi = wasm_f32x4_splat(0.693145751953125f);
    const v128_t ln2_lo = wasm_f32x4_splat(1.428606765330187045e-06f);
    const v128_t cutoff = wasm_f32x4_splat(-87.33654f);
    const v128_t underflow = wasm_f32x4_lt(x, cutoff);

    v128_t n = wasm_f32x4_add(wasm_f32x4_mul(x, log2e), magic);
    const v128_t two_n = wasm_i32x4_shl(n, 23);  /* (n + 127) << 23 */
    n = wasm_f32x4_sub(n, magic);
    v128_t t = wasm_f32x4_sub(x, wasm_f32x4_mul(n, ln2_hi));
    t = wasm_f32x4_sub(t, wasm_f32x4_mul(n, ln2_lo));

    v128_t p = wasm_f32x4_splat(1.0f / 5040.0f);
    p = wasm_f32x4_add(wasm_f32x4_mul(p, t), wasm_f32x4_splat(1.0f / 720.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, t), wasm_f32x4_splat(1.0f / 120.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, t), wasm_f32x4_splat(1.0f / 24.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, t), wasm_f32x4_splat(1.0f / 6.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, t), wasm_f32x4_splat(0.5f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, t), wasm_f32x4_splat(1.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, t), wasm_f32x4_splat(1.0f));

    return wasm_v128_andnot(wasm_f32x4_mul(p, two_n), underflow); /* underflow lanes -> +0 */
}

/* x (n) <- softmax(x), in place: the same three passes, four lanes at a time. */
static void softmax_row_simd(float *x, int n) {
    /* 1. max */
    v128_t max4 = wasm_f32x4_splat(-INFINITY);
    int j = 0;
    /* pmax is a plain compare-and-pick (one instruction on x86), enough here:
     * scores are never NaN, they were checked finite or set to -INFINITY. */
    for (; j + 4 <= n; j += 4) max4 = wasm_f32x4_pmax(max4, wasm_v128_load(x + j));
    max4 = wasm_f32x4_pmax(max4, wasm_i32x4_shuffle(max4, max4, 2, 3, 0, 1));
    max4 = wasm_f32x4_pmax(max4, wasm_i32x4_shuffle(max4, max4, 1, 0, 3, 2));
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

/* x (rows, n), row stride ld: softmax of each row, in place. */
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

/* src (rows, cols) -> strips of ATTN_STRIP rows, each transposed:
 * strip s is (cols, w) at dst + s * ATTN_STRIP * cols, w = its row count
 * (ATTN_STRIP, or less for the last). A matmul reading a strip walks
 * contiguous memory, where a plain transpose would jump a whole row of
 * src per step. */
void attn_pack_strips(float *dst, const float *src, int rows, int cols) {
    for (int r0 = 0; r0 < rows; r0 += ATTN_STRIP) {
        const int w = rows - r0 < ATTN_STRIP ? rows - r0 : ATTN_STRIP;
        attn_transpose(dst + (long)r0 * cols, src + (long)r0 * cols, w, cols);
    }
}

/* c (M, N) = alpha * a (M, K) @ bt^T; strip s of `packed` is (K, w). */
void attn_gemm_packed(float *c, int ldc, const float *a, int lda, const float *packed,
                      int M, int N, int K, float alpha) {
    for (int j0 = 0; j0 < N; j0 += ATTN_STRIP) {
        const int w = N - j0 < ATTN_STRIP ? N - j0 : ATTN_STRIP;
        attn_gemm(c + j0, ldc, a, lda, packed + (long)j0 * K, w, M, w, K, alpha);
    }
}

/* ======================================================================== */
/* Transposed matmul (backward pass)                                         */
/* ======================================================================== */

/* c (M, N) = alpha * a^T @ b, a (K, M), b (K, N): row i of c gathers column i
 * of a. Same order of additions as gemm_scalar, so both paths give the same
 * bits. */
SCALAR_PATH void gemm_tn_scalar(float *c, int ldc, const float *a, int lda, const float *b,
                                int ldb, int M, int N, int K, float alpha) {
    for (int i = 0; i < M; i++) {
        float *c_i = c + (long)i * ldc;
        for (int j = 0; j < N; j++) c_i[j] = 0.0f;
        for (int kk = 0; kk < K; kk++) {
            const float a_ki = a[(long)kk * lda + i];
            const float *b_k = b + (long)kk * ldb;
            for (int j = 0; j < N; j++) c_i[j] += a_ki * b_k[j];
        }
        for (int j = 0; j < N; j++) c_i[j] *= alpha;
    }
}

#if ATTN_SIMD
/* c (rows, 8) = alpha * a^T @ b (K, 8), a (K, rows): the gemm_tile_x8 tile
 * with a read down its columns. */
TILE gemm_tn_tile_x8(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                     const int rows, int K, v128_t alpha) {
    v128_t acc[4][2];
    for (int r = 0; r < rows; r++) acc[r][0] = acc[r][1] = wasm_f32x4_splat(0.0f);
    for (int kk = 0; kk < K; kk++) {
        const float *b_k = b + (long)kk * ldb;
        const float *a_k = a + (long)kk * lda;
        const v128_t b0 = wasm_v128_load(b_k);
        const v128_t b1 = wasm_v128_load(b_k + 4);
        for (int r = 0; r < rows; r++) {
            const v128_t a_kr = wasm_v128_load32_splat(a_k + r);
            acc[r][0] = wasm_f32x4_add(acc[r][0], wasm_f32x4_mul(a_kr, b0));
            acc[r][1] = wasm_f32x4_add(acc[r][1], wasm_f32x4_mul(a_kr, b1));
        }
    }
    for (int r = 0; r < rows; r++) {
        wasm_v128_store(c + (long)r * ldc, wasm_f32x4_mul(acc[r][0], alpha));
        wasm_v128_store(c + (long)r * ldc + 4, wasm_f32x4_mul(acc[r][1], alpha));
    }
}

/* The N tail by 4: c (rows, 4) = alpha * a^T @ b (K, 4). */
TILE gemm_tn_tile_x4(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                     const int rows, int K, v128_t alpha) {
    v128_t acc[4];
    for (int r = 0; r < rows; r++) acc[r] = wasm_f32x4_splat(0.0f);
    for (int kk = 0; kk < K; kk++) {
        const v128_t b0 = wasm_v128_load(b + (long)kk * ldb);
        for (int r = 0; r < rows; r++) {
            const v128_t a_kr = wasm_v128_load32_splat(a + (long)kk * lda + r);
            acc[r] = wasm_f32x4_add(acc[r], wasm_f32x4_mul(a_kr, b0));
        }
    }
    for (int r = 0; r < rows; r++) wasm_v128_store(c + (long)r * ldc, wasm_f32x4_mul(acc[r], alpha));
}

/* One band of `rows` rows of c (columns of a) across all N: by 8, 4, then 1. */
TILE gemm_tn_band(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                  const int rows, int N, int K, float alpha) {
    const v128_t alpha4 = wasm_f32x4_splat(alpha);
    int j = 0;
    for (; j + 8 <= N; j += 8) gemm_tn_tile_x8(c + j, ldc, a, lda, b + j, ldb, rows, K, alpha4);
    for (; j + 4 <= N; j += 4) gemm_tn_tile_x4(c + j, ldc, a, lda, b + j, ldb, rows, K, alpha4);
    if (j < N) gemm_tn_scalar(c + j, ldc, a, lda, b + j, ldb, rows, N - j, K, alpha);
}

static void gemm_tn_simd(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                         int M, int N, int K, float alpha) {
    int i = 0;
    for (; i + 4 <= M; i += 4) gemm_tn_band(c + (long)i * ldc, ldc, a + i, lda, b, ldb, 4, N, K, alpha);
    for (; i < M; i++) gemm_tn_band(c + (long)i * ldc, ldc, a + i, lda, b, ldb, 1, N, K, alpha);
}
#endif

void attn_gemm_tn(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                  int M, int N, int K, float alpha) {
#if ATTN_SIMD
    gemm_tn_simd(c, ldc, a, lda, b, ldb, M, N, K, alpha);
#else
    gemm_tn_scalar(c, ldc, a, lda, b, ldb, M, N, K, alpha);
#endif
}

/* ======================================================================== */
/* Softmax backward                                                          */
/* ======================================================================== */

/* dx (n) = p * (dp - sum_j dp_j p_j). Two passes: the row's dot, then the
 * product. dx may alias dp. */
SCALAR_PATH void softmax_backward_row_scalar(float *dx, const float *p, const float *dp, int n) {
    float dot = 0.0f;
    for (int j = 0; j < n; j++) dot += dp[j] * p[j];
    for (int j = 0; j < n; j++) dx[j] = p[j] * (dp[j] - dot);
}

#if ATTN_SIMD
/* The same two passes, four lanes at a time. */
static void softmax_backward_row_simd(float *dx, const float *p, const float *dp, int n) {
    /* 1. dot = sum_j dp_j p_j */
    v128_t dot4 = wasm_f32x4_splat(0.0f);
    int j = 0;
    for (; j + 4 <= n; j += 4)
        dot4 = wasm_f32x4_add(dot4, wasm_f32x4_mul(wasm_v128_load(dp + j), wasm_v128_load(p + j)));
    float dot = (wasm_f32x4_extract_lane(dot4, 0) + wasm_f32x4_extract_lane(dot4, 1)) +
                (wasm_f32x4_extract_lane(dot4, 2) + wasm_f32x4_extract_lane(dot4, 3));
    for (; j < n; j++) dot += dp[j] * p[j];

    /* 2. dx = p * (dp - dot) */
    const v128_t dot_v = wasm_f32x4_splat(dot);
    for (j = 0; j + 4 <= n; j += 4)
        wasm_v128_store(dx + j, wasm_f32x4_mul(wasm_v128_load(p + j),
                                               wasm_f32x4_sub(wasm_v128_load(dp + j), dot_v)));
    for (; j < n; j++) dx[j] = p[j] * (dp[j] - dot);
}
#endif

/* dx, p, dp (rows, n), row stride ld: the softmax backward of each row. */
void attn_softmax_backward_rows(float *dx, const float *p, const float *dp, int ld, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        const long at = (long)r * ld;
#if ATTN_SIMD
        softmax_backward_row_simd(dx + at, p + at, dp + at, n);
#else
        softmax_backward_row_scalar(dx + at, p + at, dp + at, n);
#endif
    }
}

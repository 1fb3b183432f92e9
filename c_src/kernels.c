/* kernels.c: matmul (and the packing of K into strips), softmax and its
 * backward, transpose, the online-softmax tile and rescale-add of the tiled
 * path, and the finiteness check; scalar and wasm SIMD128.
 *
 * Layout of this file: for each kernel, the scalar reference first, then the
 * SIMD version, then the public function that picks one. The SIMD code is
 * written against wasm_simd128.h directly; each vector loop is followed by
 * an explicit tail: by 4, then 1 for most kernels; the matmul by panels of
 * 16, 8 and 4 columns, then the scalar path for the last 1 to 3; the
 * finiteness check by 16, 4, then 1. The softmax backward sits next to the
 * softmax it differentiates.
 */
#include <math.h>

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
/* Matmul: a @ b, c += a @ b and a^T @ b for the backward pass            */
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

/* c (M, N) = alpha * A @ b, or c += alpha * A @ b when `add`; b (K, N).
 * Entry (i, kk) of A is at a[i * a_row + kk * a_col]: A is a (M, K) itself
 * with a_row = lda, a_col = 1, or the transpose of a (K, M) with a_row = 1,
 * a_col = lda. Entry (i, j) of c is the dot of row i of A with column j of
 * b: its products are added in order k = 0..K-1 from 0, scaled once, then
 * added to c (when `add`). The SIMD path keeps exactly that order, and so
 * does gemm_scalar, so all give the same bits. */
SCALAR_PATH void gemm_dot_scalar(float *c, int ldc, const float *a, int a_row, int a_col, const float *b,
                                 int ldb, int M, int N, int K, float alpha, int add) {
    for (int i = 0; i < M; i++) {
        float *c_i = c + (long)i * ldc;
        const float *a_i = a + (long)i * a_row;
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int kk = 0; kk < K; kk++) sum += a_i[(long)kk * a_col] * b[(long)kk * ldb + j];
            c_i[j] = add ? c_i[j] + sum * alpha : sum * alpha;
        }
    }
}

#if ATTN_SIMD
/* The tiles below are always inlined and called with constant `rows`,
 * `vecs` and `add`, so their loops unroll and the accumulators stay in
 * registers. Two rows by sixteen columns is the largest tile whose eight
 * accumulators, four b vectors and two broadcasts fit the sixteen vector
 * registers of x86-64 without spilling. */
#define TILE static inline __attribute__((always_inline)) void

/* c (rows, 4 * vecs) = alpha * a (rows, K) @ b (K, 4 * vecs), or
 * c += alpha * a @ b when `add`; rows <= 2, vecs <= 4. Entry (r, kk) of a
 * is at a[r * a_row + kk * a_col], so the same tile reads a by rows (gemm)
 * or down its columns (gemm_tn). Each b vector serves both rows; each
 * broadcast a value serves every vector. The loop walks pointers (b_k down
 * the rows of b, a_k along a) instead of computing b + kk * ldb and
 * a + kk * a_col at every step: Emscripten builds with loop strength
 * reduction off, and those multiplies would otherwise add to the work. */
TILE gemm_tile(float *c, int ldc, const float *a, int a_row, int a_col, const float *b, int ldb,
               const int rows, const int vecs, int K, v128_t alpha, const int add) {
    v128_t acc[2][4];
    for (int r = 0; r < rows; r++)
        for (int x = 0; x < vecs; x++) acc[r][x] = wasm_f32x4_splat(0.0f);
    const float *a_k = a;
    for (const float *b_k = b, *b_end = b + (long)K * ldb; b_k != b_end; b_k += ldb, a_k += a_col) {
        v128_t a_rk[2];
        a_rk[0] = wasm_v128_load32_splat(a_k);
        if (rows == 2) a_rk[1] = wasm_v128_load32_splat(a_k + a_row);
        for (int x = 0; x < vecs; x++) {
            const v128_t b_x = wasm_v128_load(b_k + 4 * x);
            for (int r = 0; r < rows; r++) acc[r][x] = wasm_f32x4_add(acc[r][x], wasm_f32x4_mul(a_rk[r], b_x));
        }
    }
    for (int r = 0; r < rows; r++)
        for (int x = 0; x < vecs; x++) {
            float *c_rx = c + (long)r * ldc + 4 * x;
            const v128_t scaled = wasm_f32x4_mul(acc[r][x], alpha);
            wasm_v128_store(c_rx, add ? wasm_f32x4_add(wasm_v128_load(c_rx), scaled) : scaled);
        }
}

/* One panel of 4 * vecs columns of c, all M rows: bands of two rows, then
 * one. The panel's b (K, 4 * vecs) stays in L1 while every band reads it. */
TILE gemm_panel(float *c, int ldc, const float *a, int a_row, int a_col, const float *b, int ldb,
                int M, const int vecs, int K, v128_t alpha, const int add) {
    int i = 0;
    for (; i + 2 <= M; i += 2)
        gemm_tile(c + (long)i * ldc, ldc, a + (long)i * a_row, a_row, a_col, b, ldb, 2, vecs, K, alpha, add);
    if (i < M) gemm_tile(c + (long)i * ldc, ldc, a + (long)i * a_row, a_row, a_col, b, ldb, 1, vecs, K, alpha, add);
}

/* c (M, N) (+)= alpha * A @ b with A = a (M, K), or A = a^T for a (K, M)
 * when `tn`: panels of 16 columns, then 8 and 4, and the scalar path for
 * the last 1 to 3 columns. */
TILE gemm_rows(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
               int M, int N, int K, float alpha, const int tn, const int add) {
    const int a_row = tn ? 1 : lda, a_col = tn ? lda : 1;
    const v128_t alpha4 = wasm_f32x4_splat(alpha);
    int j = 0;
    for (; j + 16 <= N; j += 16) gemm_panel(c + j, ldc, a, a_row, a_col, b + j, ldb, M, 4, K, alpha4, add);
    if (j + 8 <= N) gemm_panel(c + j, ldc, a, a_row, a_col, b + j, ldb, M, 2, K, alpha4, add), j += 8;
    if (j + 4 <= N) gemm_panel(c + j, ldc, a, a_row, a_col, b + j, ldb, M, 1, K, alpha4, add), j += 4;
    if (j == N) return;
    if (tn || add) gemm_dot_scalar(c + j, ldc, a, a_row, a_col, b + j, ldb, M, N - j, K, alpha, add);
    else gemm_scalar(c + j, ldc, a, lda, b + j, ldb, M, N - j, K, alpha);
}

/* Floats of A that one chunk of rows may hold: a quarter of a 32 KiB L1. */
#define GEMM_CHUNK_FLOATS 2048

/* The same product, by chunks of rows of A small enough to stay in L1
 * while every panel reads them; the sums are those of gemm_rows. */
TILE gemm_simd(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
               int M, int N, int K, float alpha, const int tn, const int add) {
    int chunk = GEMM_CHUNK_FLOATS / (K > 0 ? K : 1);
    chunk = chunk < 2 ? 2 : chunk & ~1; /* whole bands of two rows */
    for (int i0 = 0; i0 < M; i0 += chunk) {
        const int m = M - i0 < chunk ? M - i0 : chunk;
        gemm_rows(c + (long)i0 * ldc, ldc, a + (long)i0 * (tn ? 1 : lda), lda, b, ldb, m, N, K, alpha, tn, add);
    }
}
#endif

/* Multiply-adds of the product kernels since the core was loaded. */
static double madds;

/* The count above: M * N * K per call of a product kernel. */
double attn_madds_counted(void) { return madds; }

/* c (M, N) = alpha * a (M, K) @ b (K, N), not counted: attn_gemm and
 * attn_gemm_packed count their whole product, then call this. */
static void gemm(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                 int M, int N, int K, float alpha) {
#if ATTN_SIMD
    gemm_simd(c, ldc, a, lda, b, ldb, M, N, K, alpha, 0, 0);
#else
    gemm_scalar(c, ldc, a, lda, b, ldb, M, N, K, alpha);
#endif
}

/* c (M, N) = alpha * a (M, K) @ b (K, N); row strides ldc, lda, ldb.
 * Counts M * N * K multiply-adds. */
void attn_gemm(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
               int M, int N, int K, float alpha) {
    madds += (double)M * N * K;
    gemm(c, ldc, a, lda, b, ldb, M, N, K, alpha);
}

/* c (M, N) += alpha * a (M, K) @ b (K, N); row strides ldc, lda, ldb.
 * Counts M * N * K multiply-adds. */
void attn_gemm_add(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                   int M, int N, int K, float alpha) {
    madds += (double)M * N * K;
#if ATTN_SIMD
    gemm_simd(c, ldc, a, lda, b, ldb, M, N, K, alpha, 0, 1);
#else
    gemm_dot_scalar(c, ldc, a, lda, 1, b, ldb, M, N, K, alpha, 1);
#endif
}

/* c (M, N) = alpha * a^T @ b, a (K, M), b (K, N); row strides ldc, lda, ldb.
 * Counts M * N * K multiply-adds. */
void attn_gemm_tn(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                  int M, int N, int K, float alpha) {
    madds += (double)M * N * K;
#if ATTN_SIMD
    gemm_simd(c, ldc, a, lda, b, ldb, M, N, K, alpha, 1, 0);
#else
    gemm_dot_scalar(c, ldc, a, 1, lda, b, ldb, M, N, K, alpha, 0);
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

/* ======================================================================== */
/* Transpose                                                                 */
/* ======================================================================== */

/* dst (cols, rows) = src (rows, cols)^T. */
SCALAR_PATH void transpose_scalar(float *dst, const float *src, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(long)c * rows + r] = src[(long)r * cols + c];
}

#if ATTN_SIMD
/* dst (4, 4), row stride ld <- the 4x4 block a, b, c, d (four source rows,
 * four columns each) transposed. */
TILE store_transposed_4x4(float *dst, long ld, v128_t a, v128_t b, v128_t c, v128_t d) {
    const v128_t ab_lo = wasm_i32x4_shuffle(a, b, 0, 4, 1, 5); /* a0 b0 a1 b1 */
    const v128_t cd_lo = wasm_i32x4_shuffle(c, d, 0, 4, 1, 5);
    const v128_t ab_hi = wasm_i32x4_shuffle(a, b, 2, 6, 3, 7); /* a2 b2 a3 b3 */
    const v128_t cd_hi = wasm_i32x4_shuffle(c, d, 2, 6, 3, 7);
    wasm_v128_store(dst, wasm_i32x4_shuffle(ab_lo, cd_lo, 0, 1, 4, 5));          /* column 0 */
    wasm_v128_store(dst + ld, wasm_i32x4_shuffle(ab_lo, cd_lo, 2, 3, 6, 7));     /* column 1 */
    wasm_v128_store(dst + 2 * ld, wasm_i32x4_shuffle(ab_hi, cd_hi, 0, 1, 4, 5));
    wasm_v128_store(dst + 3 * ld, wasm_i32x4_shuffle(ab_hi, cd_hi, 2, 3, 6, 7));
}

/* The same transpose in blocks of 4x4, four rows of dst at a time, each
 * written from start to end; the last 1 to 3 rows and columns of src one
 * by one. Only data moves, so both paths give the same bits. */
static void transpose_simd(float *dst, const float *src, int rows, int cols) {
    int c = 0;
    for (; c + 4 <= cols; c += 4) {
        float *d = dst + (long)c * rows; /* (4, rows) */
        int r = 0;
        for (; r + 4 <= rows; r += 4) {
            const float *s = src + (long)r * cols + c;
            store_transposed_4x4(d + r, rows, wasm_v128_load(s), wasm_v128_load(s + cols),
                                 wasm_v128_load(s + 2L * cols), wasm_v128_load(s + 3L * cols));
        }
        for (; r < rows; r++)
            for (int x = 0; x < 4; x++) d[(long)x * rows + r] = src[(long)r * cols + c + x];
    }
    for (; c < cols; c++)
        for (int r = 0; r < rows; r++) dst[(long)c * rows + r] = src[(long)r * cols + c];
}
#endif

/* dst (cols, rows) = src (rows, cols)^T. */
void attn_transpose(float *dst, const float *src, int rows, int cols) {
#if ATTN_SIMD
    transpose_simd(dst, src, rows, cols);
#else
    transpose_scalar(dst, src, rows, cols);
#endif
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

/* b (K, N) -> its columns in strips of ATTN_STRIP: strip s, (K, w), at
 * dst + s * ATTN_STRIP * K, the layout attn_pack_strips makes of b^T. A
 * matmul by b then reads each strip from contiguous memory instead of a
 * short piece of every row of b. A loop, not memcpy: a call for every
 * row piece of ATTN_STRIP floats costs more than its copy. */
void attn_pack_columns(float *dst, const float *b, int K, int N) {
    for (int j0 = 0; j0 < N; j0 += ATTN_STRIP) {
        const int w = N - j0 < ATTN_STRIP ? N - j0 : ATTN_STRIP;
        float *strip = dst + (long)j0 * K;
        for (int kk = 0; kk < K; kk++)
            for (int c = 0; c < w; c++) strip[(long)kk * w + c] = b[(long)kk * N + j0 + c];
    }
}

/* c (M, N) = alpha * a (M, K) @ bt^T; strip s of `packed` is (K, w).
 * Counts M * N * K multiply-adds, once for all its strips. */
void attn_gemm_packed(float *c, int ldc, const float *a, int lda, const float *packed,
                      int M, int N, int K, float alpha) {
    madds += (double)M * N * K;
    for (int j0 = 0; j0 < N; j0 += ATTN_STRIP) {
        const int w = N - j0 < ATTN_STRIP ? N - j0 : ATTN_STRIP;
        gemm(c + j0, ldc, a, lda, packed + (long)j0 * K, w, M, w, K, alpha);
    }
}

/* ======================================================================== */
/* Online softmax, one key tile at a time                                    */
/* ======================================================================== */

/* s (rows, n), stride ld, in place <- exp(s - m_new); m, factor, sum (rows).
 * The recurrence of FlashAttention for one tile: new max, the rescale of the
 * old running values, and the tile's exp-sum. */
SCALAR_PATH void softmax_tile_online_scalar(float *s, float *m, float *factor, float *sum,
                                            int ld, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        float *s_r = s + (long)r * ld;
        float m_new = m[r];
        for (int j = 0; j < n; j++) m_new = s_r[j] > m_new ? s_r[j] : m_new;
        if (m_new == -INFINITY) { /* nothing allowed yet: keep l = 0, acc = 0 */
            for (int j = 0; j < n; j++) s_r[j] = 0.0f;
            factor[r] = 1.0f;
            sum[r] = 0.0f;
            continue;
        }
        float tile_sum = 0.0f;
        for (int j = 0; j < n; j++) tile_sum += (s_r[j] = expf(s_r[j] - m_new));
        factor[r] = expf(m[r] - m_new); /* m[r] = -INFINITY gives 0 */
        sum[r] = tile_sum;
        m[r] = m_new;
    }
}

/* acc (rows, n) <- acc * factor[r] + x (rows, n). */
SCALAR_PATH void rescale_add_scalar(float *acc, const float *x, const float *factor, int rows, int n) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < n; c++) acc[(long)r * n + c] = acc[(long)r * n + c] * factor[r] + x[(long)r * n + c];
}

#if ATTN_SIMD
/* The same tile, four lanes at a time, with the exp of softmax_row_simd. */
static void softmax_tile_online_simd(float *s, float *m, float *factor, float *sum,
                                     int ld, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        float *s_r = s + (long)r * ld;
        /* 1. the tile's max, joined with the running max */
        v128_t max4 = wasm_f32x4_splat(m[r]);
        int j = 0;
        for (; j + 4 <= n; j += 4) max4 = wasm_f32x4_pmax(max4, wasm_v128_load(s_r + j));
        max4 = wasm_f32x4_pmax(max4, wasm_i32x4_shuffle(max4, max4, 2, 3, 0, 1));
        max4 = wasm_f32x4_pmax(max4, wasm_i32x4_shuffle(max4, max4, 1, 0, 3, 2));
        float m_new = wasm_f32x4_extract_lane(max4, 0);
        for (; j < n; j++) m_new = s_r[j] > m_new ? s_r[j] : m_new;
        if (m_new == -INFINITY) { /* nothing allowed yet: keep l = 0, acc = 0 */
            for (j = 0; j < n; j++) s_r[j] = 0.0f;
            factor[r] = 1.0f;
            sum[r] = 0.0f;
            continue;
        }
        /* 2. exp and sum */
        const v128_t m_v = wasm_f32x4_splat(m_new);
        v128_t sum4 = wasm_f32x4_splat(0.0f);
        for (j = 0; j + 4 <= n; j += 4) {
            const v128_t e = exp_nonpositive_f32x4(wasm_f32x4_sub(wasm_v128_load(s_r + j), m_v));
            wasm_v128_store(s_r + j, e);
            sum4 = wasm_f32x4_add(sum4, e);
        }
        float tile_sum = (wasm_f32x4_extract_lane(sum4, 0) + wasm_f32x4_extract_lane(sum4, 1)) +
                         (wasm_f32x4_extract_lane(sum4, 2) + wasm_f32x4_extract_lane(sum4, 3));
        for (; j < n; j++) tile_sum += (s_r[j] = expf(s_r[j] - m_new));
        /* 3. the rescale of the old running values */
        factor[r] = expf(m[r] - m_new);
        sum[r] = tile_sum;
        m[r] = m_new;
    }
}

/* acc (rows, n) <- acc * factor[r] + x (rows, n), four lanes at a time. */
static void rescale_add_simd(float *acc, const float *x, const float *factor, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        float *a = acc + (long)r * n;
        const float *x_r = x + (long)r * n;
        const v128_t f = wasm_f32x4_splat(factor[r]);
        int c = 0;
        for (; c + 4 <= n; c += 4)
            wasm_v128_store(a + c, wasm_f32x4_add(wasm_f32x4_mul(wasm_v128_load(a + c), f), wasm_v128_load(x_r + c)));
        for (; c < n; c++) a[c] = a[c] * factor[r] + x_r[c];
    }
}
#endif

/* s (rows, n), row stride ld, in place <- exp(s - m_new); m, factor, sum
 * (rows): one key tile of the online softmax (see kernels.h). */
void attn_softmax_tile_online(float *s, float *m, float *factor, float *sum, int ld, int rows, int n) {
#if ATTN_SIMD
    softmax_tile_online_simd(s, m, factor, sum, ld, rows, n);
#else
    softmax_tile_online_scalar(s, m, factor, sum, ld, rows, n);
#endif
}

/* acc (rows, n) <- acc * factor[r] + x (rows, n); factor (rows). */
void attn_rescale_add(float *acc, const float *x, const float *factor, int rows, int n) {
#if ATTN_SIMD
    rescale_add_simd(acc, x, factor, rows, n);
#else
    rescale_add_scalar(acc, x, factor, rows, n);
#endif
}

/* ======================================================================== */
/* Finiteness of a row                                                       */
/* ======================================================================== */

/* x (n): 1 when every entry is finite. */
SCALAR_PATH int all_finite_scalar(const float *x, int n) {
    float zero = 0.0f;
    for (int j = 0; j < n; j++) zero += x[j] * 0.0f;
    return zero == 0.0f;
}

#if ATTN_SIMD
/* The same question, sixteen entries per step, by the bits: an entry is
 * finite when its exponent field is not all ones, that is when its bits
 * without the sign are below those of +Infinity (0x7f800000). The largest
 * of those bits over the row answers for all of it; an integer max is
 * cheaper than the mul and add of the scalar path, and four running maxima
 * keep the loop free of a dependency chain. */
static int all_finite_simd(const float *x, int n) {
    const v128_t magnitude = wasm_i32x4_splat(0x7fffffff);
    v128_t m0 = wasm_i32x4_splat(0), m1 = m0, m2 = m0, m3 = m0;
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        m0 = wasm_u32x4_max(m0, wasm_v128_and(wasm_v128_load(x + j), magnitude));
        m1 = wasm_u32x4_max(m1, wasm_v128_and(wasm_v128_load(x + j + 4), magnitude));
        m2 = wasm_u32x4_max(m2, wasm_v128_and(wasm_v128_load(x + j + 8), magnitude));
        m3 = wasm_u32x4_max(m3, wasm_v128_and(wasm_v128_load(x + j + 12), magnitude));
    }
    for (; j + 4 <= n; j += 4) m0 = wasm_u32x4_max(m0, wasm_v128_and(wasm_v128_load(x + j), magnitude));
    const v128_t m = wasm_u32x4_max(wasm_u32x4_max(m0, m1), wasm_u32x4_max(m2, m3));
    if (!wasm_i32x4_all_true(wasm_u32x4_lt(m, wasm_i32x4_splat(0x7f800000)))) return 0;
    for (; j < n; j++)
        if (!isfinite(x[j])) return 0;
    return 1;
}
#endif

/* x (n): 1 when every entry is finite, else 0. */
int attn_all_finite(const float *x, int n) {
#if ATTN_SIMD
    return all_finite_simd(x, n);
#else
    return all_finite_scalar(x, n);
#endif
}

/* kernels.h: the few numeric kernels every attention step is built from.
 *
 * Each kernel has a scalar path and, in the SIMD build, a wasm SIMD128 path
 * next to it in kernels.c. Both compute the same thing; the matmul is
 * bit-identical between them (same accumulation order, no FMA), the softmax
 * agrees within float32 rounding.
 */
#ifndef ATTENTION_KERNELS_H
#define ATTENTION_KERNELS_H

/* The multiply-adds the matrix-product kernels below have done since the
 * core was loaded: each call of attn_gemm, attn_gemm_packed, attn_gemm_add
 * or attn_gemm_tn adds M * N * K once, before its loops (a double counts
 * exactly up to 2^53). attn_last_call_madds (attention.c) reports the share
 * of one call from JS. Nothing else is counted: not softmax, the online
 * rescale, biases, RoPE or the lesson helpers' own loops. */
double attn_madds_counted(void);

/* c (M, N) = alpha * a (M, K) @ b (K, N).
 * Row strides: lda for a, ldb for b, ldc for c. c must not alias a or b. */
void attn_gemm(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
               int M, int N, int K, float alpha);

/* x (rows, n), row stride ld: each row <- softmax(row), in place.
 * Stable: subtracts the row max. -INFINITY entries become exactly 0.
 * A row of only -INFINITY becomes NaN (callers refuse such rows first). */
void attn_softmax_rows(float *x, int ld, int rows, int n);

/* dst (cols, rows) = transpose of src (rows, cols). */
void attn_transpose(float *dst, const float *src, int rows, int cols);

/* src (rows, cols) packed as transposed strips of ATTN_STRIP rows: strip s,
 * (cols, w), starts at dst + s * ATTN_STRIP * cols. dst holds rows * cols. */
#define ATTN_STRIP 16
void attn_pack_strips(float *dst, const float *src, int rows, int cols);

/* b (K, N) packed as strips of ATTN_STRIP columns, (K, w) each: the
 * layout attn_pack_strips gives b^T, for attn_gemm_packed. dst holds K * N. */
void attn_pack_columns(float *dst, const float *b, int K, int N);

/* c (M, N) = alpha * a (M, K) @ bt^T, with bt (N, K) packed by
 * attn_pack_strips: one matmul per strip of ATTN_STRIP columns of c. */
void attn_gemm_packed(float *c, int ldc, const float *a, int lda, const float *packed,
                      int M, int N, int K, float alpha);

/* One key tile of the online softmax, for `rows` query rows.
 * s (rows, n), row stride ld: the tile's masked scores, in place <- exp(s - m_new);
 * m (rows): running max, updated to m_new = max(m, max of the tile);
 * factor (rows) <- exp(m_old - m_new), the rescale of what was summed before;
 * sum (rows) <- the sum of the tile's exp values.
 * A row with only -INFINITY so far keeps m = -INFINITY, gets factor 1,
 * sum 0 and a tile of zeros (never NaN). */
void attn_softmax_tile_online(float *s, float *m, float *factor, float *sum, int ld, int rows, int n);

/* acc (rows, n) <- acc * factor[r] + x (rows, n), row by row; both rows
 * contiguous (stride n). */
void attn_rescale_add(float *acc, const float *x, const float *factor, int rows, int n);

/* Whether every entry of x (n) is finite. Scalar: x * 0 is 0 for a finite x
 * and NaN for NaN or +-Infinity, so one sum of x * 0 answers for the whole
 * row. SIMD: the largest magnitude bits, compared with those of Infinity. */
int attn_all_finite(const float *x, int n);

/* ------------------------------------------------------------------------ */
/* Kernels for the backward pass                                            */
/* ------------------------------------------------------------------------ */

/* c (M, N) = alpha * a^T @ b, with a (K, M) and b (K, N) row-major.
 * Row strides: lda for a, ldb for b, ldc for c. c must not alias a or b.
 * Products are added in order k = 0..K-1, then scaled once, on both paths. */
void attn_gemm_tn(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                  int M, int N, int K, float alpha);

/* c (M, N) += alpha * a (M, K) @ b (K, N), as attn_gemm: the products of
 * an entry are summed and scaled as there, then added to c. A backward that
 * walks blocks of rows accumulates dK and dV with it. */
void attn_gemm_add(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                   int M, int N, int K, float alpha);

/* The softmax backward, row by row: for p = softmax(x) and dp = dL/dp,
 * dx = p * (dp - sum_j dp_j p_j). dx (rows, n), p (rows, n), dp (rows, n),
 * all with row stride ld. dx may be dp itself (in place). Entries where
 * p == 0 get dx == 0 (as +0 or -0). */
void attn_softmax_backward_rows(float *dx, const float *p, const float *dp, int ld, int rows, int n);

#endif /* ATTENTION_KERNELS_H */

/* attention.h: the attention-lab C core.
 *
 * Scaled dot-product attention (SDPA), multi-head attention and the lesson's
 * sampling demos. Built three ways from the same sources: wasm with SIMD128,
 * wasm scalar, and native (gcc, with sanitizers) for the C tests.
 *
 * Conventions
 * - Tensors are row-major float32. Every function states its shapes first.
 * - Masks are *allowed* masks: 1 = this query may attend to this key.
 * - Every entry point returns an attn_status. On failure attn_last_error()
 *   says why, naming the argument, dimension or row. Nothing here aborts or
 *   exits on bad input.
 */
#ifndef ATTENTION_H
#define ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#define ATTN_API EMSCRIPTEN_KEEPALIVE
#else
#define ATTN_API
#endif

/* ------------------------------------------------------------------------ */
/* Status codes and the last error                                          */
/* ------------------------------------------------------------------------ */

/* Keep in step with STATUS_CODES in web/attention.js. */
typedef enum {
    ATTN_OK = 0,
    ATTN_BAD_ARGUMENT = 1,    /* a missing, wrong-typed or out-of-range argument */
    ATTN_SHAPE_MISMATCH = 2,  /* dims that must agree do not */
    ATTN_NON_FINITE_INPUT = 3,/* NaN or +-Infinity in an input */
    ATTN_ALL_MASKED_ROW = 4,  /* a query row with no allowed key */
    ATTN_TOO_LARGE = 5,       /* the request does not fit in memory */
    ATTN_OVERFLOW = 6         /* scores or outputs overflow float32 */
} attn_status;

/* Why the last failing call failed ("" after a success), and its status. */
ATTN_API const char *attn_last_error(void);
ATTN_API int attn_last_status(void);

/* Largest single request, in bytes, that the core will try to allocate. */
#define ATTN_MAX_REQUEST_BYTES (1536.0 * 1024.0 * 1024.0)

/* ------------------------------------------------------------------------ */
/* Break-it bugs: deliberate variants of the correct code path              */
/* ------------------------------------------------------------------------ */

/* Keep in step with BUGS in web/attention.js. */
typedef enum {
    ATTN_BUG_NONE = 0,
    ATTN_BUG_SOFTMAX_OVER_QUERIES = 1,  /* normalise over dim -2, not keys */
    ATTN_BUG_MASK_AFTER_SOFTMAX = 2,    /* softmax first, then zero blocked weights */
    ATTN_BUG_MASK_OUTPUT = 3,           /* leave logits unmasked, mask only the output */
    ATTN_BUG_NO_CAUSAL_MASK = 4,        /* ignore the causal flag */
    ATTN_BUG_CAUSAL_UPPER = 5,          /* triu instead of tril */
    ATTN_BUG_INVERTED_MASK = 6,         /* read the allowed mask as a blocked mask */
    ATTN_BUG_PADDING_ON_QUERIES = 7,    /* padding mask applied to query rows */
    ATTN_BUG_NO_SCALE = 8,              /* skip 1/sqrt(dk) */
    ATTN_BUG_SCALE_BY_DK = 9,           /* divide by dk instead of sqrt(dk) */
    ATTN_BUG_HEADS_WITHOUT_TRANSPOSE = 10, /* MHA: (B,T,C) -> (B,H,T,D) by reshape only */
    ATTN_BUG_MERGE_WITHOUT_TRANSPOSE = 11, /* MHA: join heads by reshape only */
    ATTN_BUG_NO_ALL_MASKED_GUARD = 12,  /* let an all-masked row reach softmax */
    ATTN_BUG_NO_RESCALE = 13,           /* tiled path: drop exp(m_old - m_new) */
    ATTN_BUG_COUNT = 14
} attn_bug;

/* ------------------------------------------------------------------------ */
/* Scaled dot-product attention                                             */
/* ------------------------------------------------------------------------ */

/* An allowed mask broadcast to (B, H, Tq, Tk) by element strides: entry
 * (b, h, i, j) is data[b*sb + h*sh + i*sq + j*sk]; a stride of 0 repeats a
 * dim of size 1. data == NULL means every key is allowed. */
typedef struct {
    const uint8_t *data;
    long sb, sh, sq, sk;
} attn_mask;

/* out (B, H, Tq, dv); weights, scores (B, H, Tq, Tk) or NULL;
 * q (B, H, Tq, dk), k (B, H, Tk, dk), v (B, H, Tk, dv).
 * scores are the scaled logits before masking. With weights and scores
 * NULL and no bug (or ATTN_BUG_NO_RESCALE) it runs the tiled path below;
 * with weights NULL and a bug, rows are done a few at a time. Either way the
 * (Tq, Tk) matrices are then never materialised.
 * With causal set, key j is allowed for query i only if j <= i + causal_offset
 * (0: top-left aligned, as in PyTorch; multi-head attention passes the
 * position difference), ANDed with the mask. bug is ATTN_BUG_NONE except in
 * the break-it lab. */
int attn_sdpa(float *out, float *weights, float *scores,
              const float *q, const float *k, const float *v,
              attn_mask mask, int B, int H, int Tq, int Tk, int dk, int dv,
              float scale, int causal, int causal_offset, int bug);

/* The tiled online-softmax forward (FlashAttention's recurrence), which
 * attn_sdpa also runs when it keeps no weights or scores and no bug is on.
 * out (B, H, Tq, dv); q, k, v, mask, causal as attn_sdpa. Keys go in tiles
 * of block_keys (>= 1); per query row it keeps a running max m, a running
 * sum l and an output accumulator, rescaled by exp(m_old - m_new) as each
 * tile arrives. Memory O(T d): no (Tq, Tk) matrix, not even per block.
 * trace (B, H, Tq, tiles, 3 + dv) or NULL, tiles = ceil(Tk / block_keys):
 * after each tile, per query row, { m, l, rescale factor, accumulator }.
 * bug: ATTN_BUG_NONE or ATTN_BUG_NO_RESCALE. */
int attn_sdpa_tiled(float *out, float *trace, const float *q, const float *k, const float *v,
                    attn_mask mask, int B, int H, int Tq, int Tk, int dk, int dv,
                    float scale, int causal, int causal_offset, int block_keys, int bug);

/* Key tile width attn_sdpa uses on its tiled path. */
#define ATTN_TILE_KEYS 128

/* The same, with the mask spelled out as plain arguments for the JS side. */
ATTN_API int attn_sdpa_tiled_js(float *out, float *trace,
                                const float *q, const float *k, const float *v,
                                const uint8_t *mask, int msb, int msh, int msq, int msk,
                                int B, int H, int Tq, int Tk, int dk, int dv,
                                float scale, int causal, int block_keys, int bug);

/* attn_sdpa with the mask spelled out as plain arguments for the JS side. */
ATTN_API int attn_sdpa_js(float *out, float *weights, float *scores,
                          const float *q, const float *k, const float *v,
                          const uint8_t *mask, int msb, int msh, int msq, int msk,
                          int B, int H, int Tq, int Tk, int dk, int dv,
                          float scale, int causal, int bug);

/* Observability for one attention call, for the lesson page.
 * stats[4] <- { max |score|, fraction of masked logits, max |row sum - 1|,
 *               max weight on a blocked key }.
 * scores, weights (B, H, Tq, Tk); mask and causal as given to attn_sdpa. */
ATTN_API int attn_observe(float *stats, const float *scores, const float *weights,
                          const uint8_t *mask, int msb, int msh, int msq, int msk,
                          int B, int H, int Tq, int Tk, int causal);

/* ------------------------------------------------------------------------ */
/* Memory shared with JS                                                     */
/* ------------------------------------------------------------------------ */

/* One reusable buffer of at least `bytes` bytes for a call's tensors; it only
 * grows. Refuses requests above ATTN_MAX_REQUEST_BYTES with ATTN_TOO_LARGE
 * before allocating. Returns NULL on failure. `bytes` is a double so that a
 * size computed in JS cannot wrap around. */
ATTN_API void *attn_workspace(double bytes);

ATTN_API void *attn_alloc(double bytes);  /* checked malloc, NULL + error on failure */
ATTN_API void attn_free(void *p);         /* NULL-safe */

/* ------------------------------------------------------------------------ */
/* Multi-head attention (mha.c)                                             */
/* ------------------------------------------------------------------------ */

typedef struct attn_mha attn_mha;

/* A module with d_model = num_heads * head_dim; weights drawn from seed. */
ATTN_API attn_mha *attn_mha_create(int d_model, int num_heads, int bias, int rope,
                                   uint32_t seed);
ATTN_API void attn_mha_free(attn_mha *m);

/* The module's parameters, which = 0..3 for the q, k, v and out
 * projections: weight (d_model, d_model) in nn.Linear's (out, in) layout,
 * bias (d_model), NULL when the module has no bias. Read-only pointers;
 * attn_mha_set copies new values in (bias may be NULL when there is none). */
ATTN_API const float *attn_mha_weight(const attn_mha *m, int which);
ATTN_API const float *attn_mha_bias(const attn_mha *m, int which);
ATTN_API int attn_mha_set(attn_mha *m, int which, const float *weight, const float *bias);

/* out (B, Tq, C), weights (B, H, Tq, Tk) or NULL;
 * query (B, Tq, C), kv (B, Tkn, C) or NULL for self-attention (Tkn = Tq);
 * past_k, past_v (B, H, Tp, D) cached keys/values (already rotated) and
 * past_valid (B, Tp), all NULL when Tp = 0; new_k, new_v (B, H, Tk, D) and
 * new_valid (B, Tk) receive the updated cache when not NULL, Tk = Tp + Tkn.
 * key_pad (B, Tkn) marks real new keys, or NULL; query_pad (B, Tq) marks
 * real queries (padded query rows of out are zeroed), or NULL;
 * mask: allowed mask broadcast to (B, H, Tq, Tk) by strides, or NULL.
 * Positions: query i is at q_offset + i, key j of the full K at k_offset + j;
 * they drive RoPE and the causal rule. */
ATTN_API int attn_mha_forward(attn_mha *m, float *out, float *weights,
                              const float *query, const float *kv,
                              int B, int Tq, int Tkn,
                              const float *past_k, const float *past_v,
                              const uint8_t *past_valid, int Tp,
                              float *new_k, float *new_v, uint8_t *new_valid,
                              const uint8_t *key_pad, const uint8_t *query_pad,
                              const uint8_t *mask, int msb, int msh, int msq, int msk,
                              int causal, int q_offset, int k_offset, int bug);

/* ------------------------------------------------------------------------ */
/* Rotary position embeddings (rope.c)                                      */
/* ------------------------------------------------------------------------ */

/* x (BH, T, D) <- RoPE in place, split-halves pairing: entry d < D/2 turns
 * with entry d + D/2 by the angle positions[t] * base^(-2d/D).
 * positions (T); D even; base > 0 (10000 in the multi-head module). */
ATTN_API int attn_rope(float *x, const double *positions, int BH, int T, int D, double base);

/* The rotation without checks: positions (T), or first_pos + t when NULL. */
void attn_rope_rotate(float *x, const double *positions, double first_pos, int BH, int T, int D, double base);

/* ------------------------------------------------------------------------ */
/* Lesson demos (lesson.c)                                                  */
/* ------------------------------------------------------------------------ */

/* unscaled, scaled (count): dot products of seeded unit-variance q, k of
 * width dk, raw and divided by sqrt(dk). var[2] <- their variances. */
ATTN_API int attn_sample_dots(float *unscaled, float *scaled, float *var,
                              int dk, int count, uint32_t seed);

/* peak[2] <- mean over `count` rows of the largest softmax weight among
 * `keys` keys, with and without the 1/sqrt(dk) scale. */
ATTN_API int attn_softmax_peak(float *peak, int dk, int keys, int count, uint32_t seed);

/* ------------------------------------------------------------------------ */
/* Shared internals                                                         */
/* ------------------------------------------------------------------------ */

int attn_fail(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void attn_clear_error(void);

/* First non-finite entry of x (n) as its index, or -1 when all are finite. */
long attn_find_non_finite(const float *x, long n);

/* Deterministic random numbers (xorshift-based; same on every build). */
typedef struct {
    uint64_t s;
    float spare;    /* normals are made in pairs: the second waits here */
    int has_spare;
} attn_rng;
void attn_rng_seed(attn_rng *r, uint32_t seed);
float attn_rng_uniform(attn_rng *r);  /* in [0, 1) */
float attn_rng_normal(attn_rng *r);   /* mean 0, variance 1 */

#endif /* ATTENTION_H */

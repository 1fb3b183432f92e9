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
    ATTN_OVERFLOW = 6,        /* scores or outputs overflow float32 */
    /* multi-head attention */
    ATTN_HEADS_DO_NOT_DIVIDE = 7, /* d_model is not a multiple of num_heads */
    ATTN_ROPE_ODD_HEAD_DIM = 8,   /* RoPE needs an even head width */
    ATTN_EMPTY_QUERY = 9,         /* a query with no token */
    ATTN_CACHE_MISMATCH = 10,     /* a KV cache that does not fit the call */
    ATTN_NEGATIVE_OFFSET = 11,    /* a position offset below 0 */
    ATTN_MODULE_FREED = 12,       /* a call on a freed module */
    ATTN_NO_SAVED_FORWARD = 13,   /* backward with no forward that saved for it */
    ATTN_BACKWARD_THROUGH_CACHE = 14 /* backward through a forward that used the KV cache */
} attn_status;

/* Why the last failing call failed ("" after a success), and its status.
 * The message is NUL-terminated within ATTN_ERROR_BYTES bytes, a size JS
 * reads with attn_error_bytes(). */
#define ATTN_ERROR_BYTES 512
ATTN_API const char *attn_last_error(void);
ATTN_API int attn_last_status(void);
ATTN_API int attn_error_bytes(void);

/* Largest single request, in bytes, that the core will try to allocate. */
#define ATTN_MAX_REQUEST_BYTES (1536.0 * 1024.0 * 1024.0)

/* ------------------------------------------------------------------------ */
/* Break-it bugs: deliberate variants of the correct code path              */
/* ------------------------------------------------------------------------ */

/* Keep in step with BUGS in web/attention.js. */
typedef enum {
    ATTN_BUG_NONE = 0,
    ATTN_BUG_SOFTMAX_OVER_QUERIES = 1,  /* normalise over dim -2, not keys */
    ATTN_BUG_MASK_AFTER_SOFTMAX = 2,    /* softmax first, then zero blocked probabilities */
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
    ATTN_BUG_SOFTMAX_BACKWARD_NO_ROWSUM = 13, /* backward: dS = P * dP, no row sum */
    ATTN_BUG_GRAD_THROUGH_BLOCKED = 14, /* backward: blocked weights taken as uniform */
    ATTN_BUG_NO_RESCALE = 15,           /* tiled path: drop exp(m_old - m_new) */
    ATTN_BUG_STALE_CACHE_OFFSET = 16,   /* MHA with a cache: new queries at position 0 */
    ATTN_BUG_COUNT = 17
} attn_bug;

/* ------------------------------------------------------------------------ */
/* Which keys a query may see                                               */
/* ------------------------------------------------------------------------ */

/* An allowed mask broadcast to (B, H, Tq, Tk) by element strides: entry
 * (b, h, i, j) is data[b*sb + h*sh + i*sq + j*sk]; a stride of 0 repeats a
 * dim of size 1. data == NULL means every key is allowed. */
typedef struct {
    const uint8_t *data;
    long sb, sh, sq, sk;
} attn_mask;

/* The visibility rule of one call: key j is visible to query i of head
 * (b, h) when all three hold
 *   mask(b, h, i, j)                         the broadcast allowed mask
 *   key_padding_mask[b*Tk + j]               the key is a real token
 *   !causal || j <= i + causal_offset        the causal triangle
 * A NULL rule pointer means every key is visible. causal_offset 0 aligns the
 * triangle top-left, as PyTorch does; multi-head attention passes the
 * position difference between the first query and the first key.
 * Layout for JS (wasm32: pointers and longs are 4 bytes), 8 int32 words:
 *   [0] mask.data [1] sb [2] sh [3] sq [4] sk [5] key_padding_mask
 *   [6] causal    [7] causal_offset */
typedef struct {
    attn_mask mask;
    const uint8_t *key_padding_mask; /* (B, Tk): 1 = real key, 0 = padding; NULL = all real */
    int causal;
    int causal_offset;
} attn_visibility;

#define ATTN_VISIBILITY_WORDS 8

/* allowed (B, H, Tq, Tk) <- 1 where the rule lets query i see key j, else 0. */
ATTN_API int attn_allowed_pairs(uint8_t *allowed, const attn_visibility *vis,
                                int B, int H, int Tq, int Tk);

/* ------------------------------------------------------------------------ */
/* Scaled dot-product attention                                             */
/* ------------------------------------------------------------------------ */

/* The dims of one attention call. Layout for JS: 6 int32 words in this order. */
typedef struct {
    int B, H;   /* batch, heads */
    int Tq, Tk; /* queries, keys */
    int dk, dv; /* width of q and k, width of v */
} attn_dims;

#define ATTN_DIMS_WORDS 6

/* out (B, H, Tq, dv); probs, scores (B, H, Tq, Tk) or NULL;
 * q (B, H, Tq, dk), k (B, H, Tk, dk), v (B, H, Tk, dv).
 * scores are the scaled logits before masking, probs the attention
 * probabilities. With probs and scores NULL and no bug (or
 * ATTN_BUG_NO_RESCALE) it runs the tiled path, attn_sdpa_tiled; with probs
 * NULL and another bug, query rows are done a block at a time. Either way the
 * (Tq, Tk) matrices are then never materialised. vis is the visibility rule
 * (NULL: all keys visible). bug is ATTN_BUG_NONE except in
 * the break-it lab. */
ATTN_API int attn_sdpa(float *out, float *probs, float *scores,
                       const float *q, const float *k, const float *v,
                       const attn_visibility *vis, const attn_dims *dims, float scale, int bug);

/* The backward of attn_sdpa: gradients of a loss L given dout = dL/dout.
 * dq (B, H, Tq, dk), dk (B, H, Tk, dk), dv (B, H, Tk, dv) receive dL/dq,
 * dL/dk, dL/dv; dscores (B, H, Tq, Tk) or NULL receives dL/dscores (the
 * scaled logits attn_sdpa returns as scores), dprobs (B, H, Tq, Tk) or NULL
 * receives dL/dprobs. dout (B, H, Tq, dv); q, k, v, vis, dims, scale and bug
 * as given to attn_sdpa (here dk and dv name gradient buffers; the widths
 * are dims->dk, dims->dv). probs (B, H, Tq, Tk) are the probabilities
 * attn_sdpa returned for these inputs, or NULL: then they are recomputed
 * from q and k (a fifth more matmul work, and the exponentials). Given
 * probabilities are checked first: finite, in [0, 1], exactly 0 on blocked
 * pairs, each row summing to 1; they work with no bug or a backward bug
 * only (a forward bug's backward recomputes its own).
 * Blocked pairs get exactly 0 in dscores and dprobs, and a key no query may
 * see gets exactly 0 in dk and dv. A forward bug gives the gradient of that
 * bugged forward; the two backward bugs change only the backward. */
ATTN_API int attn_sdpa_backward(float *dq, float *dk, float *dv, float *dscores, float *dprobs,
                                const float *dout, const float *probs,
                                const float *q, const float *k, const float *v,
                                const attn_visibility *vis, const attn_dims *dims, float scale, int bug);

/* Dropout on the attention probabilities (inverted dropout): after the
 * softmax, probability (b, h, i, j) is kept when the seeded uniform number
 * of its flat index is >= p, and then scaled by 1/(1 - p); dropped ones
 * become 0. Rows no longer sum to 1; their expected sum still does.
 * keep (B, H, Tq, Tk) <- 1 kept, 0 dropped, or NULL. Layout for JS (wasm32),
 * 3 words: [0] p (float32) [1] seed [2] keep. */
typedef struct {
    float p;        /* 0 <= p < 1 */
    uint32_t seed;
    uint8_t *keep;
} attn_dropout;

#define ATTN_DROPOUT_WORDS 3

/* attn_sdpa with dropout on the probabilities (dropout NULL: none). out is
 * then probs (after dropout) times v; probs are the dropped-out ones. */
ATTN_API int attn_sdpa_dropout(float *out, float *probs, float *scores,
                               const float *q, const float *k, const float *v,
                               const attn_visibility *vis, const attn_dims *dims, float scale,
                               const attn_dropout *dropout, int bug);

/* The tiled online-softmax forward (FlashAttention's recurrence), which
 * attn_sdpa runs when it keeps no probabilities or scores and no bug is on.
 * out (B, H, Tq, dv); q, k, v, vis, dims as attn_sdpa. Keys go in tiles of
 * block_keys (>= 1); per query row it keeps a running max m, a running sum l
 * and an output accumulator, rescaled by exp(m_old - m_new) as each tile
 * arrives. Memory O(T d): no (Tq, Tk) matrix, not even per block.
 * trace (B, H, Tq, tiles, 3 + dv) or NULL, tiles = ceil(Tk / block_keys):
 * after each tile, per query row, { m, l, rescale factor, accumulator }.
 * bug: ATTN_BUG_NONE or ATTN_BUG_NO_RESCALE. */
ATTN_API int attn_sdpa_tiled(float *out, float *trace, const float *q, const float *k, const float *v,
                             const attn_visibility *vis, const attn_dims *dims, float scale,
                             int block_keys, int bug);

/* Key tile width attn_sdpa uses on its tiled path. */
#define ATTN_TILE_KEYS 128

/* Observability of one attention call, judged by the correct rule vis.
 * stats[4] <- { max |score|, fraction of blocked pairs, max |row sum - 1|,
 *               max |probability| on a blocked pair } (NaN when a row sum or
 *               a blocked probability is NaN);
 * where[7] <- { b, h, i } of the row with the largest row-sum error and
 *             { b, h, i, j } of the largest blocked probability, each -1 when
 *             there is none (error exactly 0, every blocked probability 0).
 * A NaN counts as the largest. scores may be NULL (max |score| is then 0);
 * scores, probs (B, H, Tq, Tk). */
ATTN_API int attn_observe(float *stats, int32_t *where, const float *scores, const float *probs,
                          const attn_visibility *vis, int B, int H, int Tq, int Tk);

/* ------------------------------------------------------------------------ */
/* Memory shared with JS                                                     */
/* ------------------------------------------------------------------------ */

/* One reusable buffer of at least `bytes` bytes for a call's tensors; it only
 * grows. Refuses requests above ATTN_MAX_REQUEST_BYTES with ATTN_TOO_LARGE
 * before allocating. Returns NULL on failure. `bytes` is a double so that a
 * size computed in JS cannot wrap around. */
ATTN_API void *attn_workspace(double bytes);

/* The most scratch memory, in bytes, the core held at once since the last
 * attn_workspace call (each JS call starts with one), beyond the workspace
 * and what was held before: the call's own working memory. */
ATTN_API double attn_scratch_peak_bytes(void);

/* The multiply-adds of the matrix products the core did since the last
 * attn_workspace call (each JS call starts with one): M * N * K for each
 * product (M, K) @ (K, N) its kernels computed. For attn_sdpa of dims
 * (B, H, Tq, Tk, dk, dv) that is B*H*Tq*Tk*dk for the scores plus
 * B*H*Tq*Tk*dv for the mix, with two exceptions on the tiled path: under
 * a causal rule it skips the mix of a key tile that lies wholly after the
 * diagonal for a whole block of 16 query rows (their scores are computed all
 * the same), and tiles that are not whole strips of ATTN_STRIP keys have
 * their scores computed over the whole strips (attn_sdpa_tiled with such a
 * block_keys). attn_mha_forward adds its four projections, N * C * C each
 * for N = B * tokens projected (the new tokens only, with a cache).
 * Softmax (exp, sums, divisions), the online rescale, masks, biases, RoPE
 * and the lesson helpers' own dots are not counted. */
ATTN_API double attn_last_call_madds(void);

void *attn_alloc(double bytes);  /* checked malloc, NULL + error on failure */
void attn_free(void *p);         /* NULL-safe */

/* Scratch from the caller: while an arena is set, attn_alloc stacks its
 * blocks in base (`bytes` long) instead of asking the heap, and attn_free
 * pops them; a block that does not fit still comes from the heap. base NULL
 * unsets it. Every block taken from an arena must be freed before the
 * arena is unset or replaced. The trainer sets its own arena around each
 * call, so a training step allocates nothing. */
void attn_scratch_arena(void *base, double bytes);

/* An upper bound of the scratch bytes one attn_sdpa, attn_sdpa_dropout or
 * attn_sdpa_backward call with these dims takes from attn_alloc, bug or
 * not: the arena size that serves any of them without the heap. */
double attn_sdpa_scratch_bytes(const attn_dims *dims);

/* How many heap allocations (malloc calls) the core has made since it was
 * loaded: tests count them around a call that must allocate nothing. */
ATTN_API double attn_heap_allocations(void);

/* ------------------------------------------------------------------------ */
/* Multi-head attention (mha.c)                                             */
/* ------------------------------------------------------------------------ */

typedef struct attn_mha attn_mha;

/* A module with d_model = num_heads * head_dim; parameters drawn from seed. */
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

/* The KV cache of one forward call. past_* hold what an earlier call
 * returned in new_*; new_* receive [past, new] along T when not NULL.
 * Layout for JS (wasm32), 7 int32 words in field order. */
typedef struct {
    const float *past_k, *past_v;             /* (B, H, Tp, D), already rotated; NULL when Tp = 0 */
    const uint8_t *past_key_padding_mask;     /* (B, Tp): 1 = real key */
    int Tp;                                   /* cached keys */
    float *new_k, *new_v;                     /* (B, H, Tp + Tkn, D) or NULL */
    uint8_t *new_key_padding_mask;            /* (B, Tp + Tkn) or NULL */
} attn_kv_cache;

#define ATTN_KV_CACHE_WORDS 7

/* Which keys each query sees in multi-head attention, by position: query i
 * is at q_offset + i, key j of the full K at k_offset + j; they drive RoPE
 * and the causal rule. Layout for JS (wasm32), 10 int32 words in field order
 * (attn_mask's five first). */
typedef struct {
    attn_mask mask;                         /* allowed, broadcast to (B, H, Tq, Tk); data NULL: none */
    const uint8_t *key_padding_mask;        /* (B, Tkn): 1 = real new key; NULL = all real */
    const uint8_t *query_padding_mask;      /* (B, Tq): 1 = real query; padded rows of out are 0 */
    int causal;
    int q_offset, k_offset;                 /* >= 0 */
} attn_mha_visibility;

#define ATTN_MHA_VISIBILITY_WORDS 10

/* out (B, Tq, C), probs (B, H, Tq, Tk) or NULL;
 * query (B, Tq, C), kv (B, Tkn, C) or NULL for self-attention (Tkn = Tq);
 * cache NULL or as above, Tk = Tp + Tkn; vis NULL (every key visible, no
 * offsets) or as above. */
ATTN_API int attn_mha_forward(float *out, float *probs, attn_mha *m,
                              const float *query, const float *kv, int B, int Tq, int Tkn,
                              const attn_kv_cache *cache, const attn_mha_visibility *vis, int bug);

/* The position attn_mha_forward gives its first query, asked to put it at
 * q_offset after Tp cached keys, with bug: q_offset, or 0 under
 * stale-cache-offset with a non-empty cache. -1 for a negative q_offset or
 * Tp, or an unknown bug. */
ATTN_API int attn_mha_query_position(int q_offset, int Tp, int bug);

/* Backward for multi-head attention. attn_mha_save_next(m, 1) makes the
 * next attn_mha_forward keep what backward needs (copies of its inputs and
 * activations), replacing what an earlier forward kept; forwards that do not
 * ask leave it alone. A forward that used the KV cache keeps only that fact,
 * and backward refuses it.
 * dquery (B, Tq, C); dkv (B, Tk, C) for cross-attention (unused, may be
 * NULL, for self-attention); dweight (4, C, C) for q, k, v, out in (out, in)
 * layout; dbias (4, C) or NULL; dout (B, Tq, C) = dL/dout of the saved
 * forward. Padded queries pass no gradient. */
ATTN_API void attn_mha_save_next(attn_mha *m, int on);
ATTN_API int attn_mha_backward(attn_mha *m, float *dquery, float *dkv, float *dweight, float *dbias,
                               const float *dout);

/* ------------------------------------------------------------------------ */
/* Rotary position embeddings (rope.c)                                      */
/* ------------------------------------------------------------------------ */

/* x (BH, T, D) <- RoPE in place, split-halves pairing: entry d < D/2 turns
 * with entry d + D/2 by the angle positions[t] * base^(-2d/D).
 * positions (T); D even; base > 0 (ATTN_ROPE_BASE in the multi-head module). */
ATTN_API int attn_rope(float *x, const double *positions, int BH, int T, int D, double base);

/* The base of RoPE's angles, as in the original RoPE paper and Llama. */
#define ATTN_ROPE_BASE 10000.0

/* The rotation without checks: positions (T), or first_pos + t when NULL;
 * direction 1 turns forward, -1 back (the inverse and transpose). */
void attn_rope_rotate(float *x, const double *positions, double first_pos, int BH, int T, int D, double base,
                      int direction);

/* ------------------------------------------------------------------------ */
/* Lesson demos (lesson.c)                                                  */
/* ------------------------------------------------------------------------ */

/* The ranges the demos accept (web/attention.js checks the same). */
#define ATTN_DOTS_MAX_DK 65536
#define ATTN_DOTS_MAX_COUNT (1 << 20)
#define ATTN_PEAK_MAX_DK 4096
#define ATTN_PEAK_MAX_KEYS 1024
#define ATTN_PEAK_MAX_COUNT 65536

/* unscaled, scaled (count): dot products of seeded unit-variance q, k of
 * width dk, raw and divided by sqrt(dk). var[2] <- their variances. */
ATTN_API int attn_sample_dots(float *unscaled, float *scaled, float *var,
                              int dk, int count, uint32_t seed);

/* peak[2] <- mean over `count` rows of the largest softmax weight among
 * `keys` keys, with and without the 1/sqrt(dk) scale. */
ATTN_API int attn_softmax_peak(float *peak, int dk, int keys, int count, uint32_t seed);

/* The gradient lesson's loss L = 1/2 sum (out - target)^2 and its steps.
 * loss[1] <- L over n entries (summed in double); dout (n) <- out - target,
 * dL/dout, or NULL to skip it. */
ATTN_API int attn_squared_error(float *loss, float *dout, const float *out, const float *target, int n);

/* x_next (n) <- x - lr * dx: one step of gradient descent. */
ATTN_API int attn_descend(float *x_next, const float *x, const float *dx, float lr, int n);

/* slope[1] <- (L(q + eps e) - L(q - eps e)) / (2 eps), the central difference
 * of L = 1/2 ||attn_sdpa(q, k, v) - target||^2 along entry `at` of q.
 * q (B, H, Tq, dk), k (B, H, Tk, dk), v (B, H, Tk, dv), target (B, H, Tq, dv);
 * vis, dims and scale as for attn_sdpa. eps must change q[at] in float32
 * both ways and be at most max(1, |q[at]|) (ATTN_BAD_ARGUMENT), and each
 * side's loss must fit in float32 (ATTN_OVERFLOW). */
ATTN_API int attn_sdpa_loss_slope(float *slope, const float *q, const float *k, const float *v,
                                  const float *target, const attn_visibility *vis,
                                  const attn_dims *dims, float scale, int at, float eps);

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

/* The head split and merge of multi-head attention (mha.c), also used by the
 * trainer: heads (B, H, T, D) <- x (B, T, C) viewed as (B, T, H, D) and
 * transposed; and back. C = H * D. */
void attn_split_heads(float *heads, const float *x, int B, int T, int H, int D);
void attn_merge_heads(float *x, const float *heads, int B, int T, int H, int D);

/* Deterministic random numbers (xorshift-based; same on every build). */
typedef struct {
    uint64_t s;
    float spare;    /* normals are made in pairs: the second waits here */
    int has_spare;
} attn_rng;
void attn_rng_seed(attn_rng *r, uint32_t seed);
float attn_rng_uniform(attn_rng *r);  /* in [0, 1) */
float attn_rng_normal(attn_rng *r);   /* mean 0, variance 1 */
float attn_hash_uniform(uint32_t seed, uint64_t counter); /* in [0, 1), stateless */

/* ------------------------------------------------------------------------ */
/* Training a tiny attention-only model (train.c)                           */
/* ------------------------------------------------------------------------ */

/* Keep in step with TRAIN_TASKS in web/attention.js. */
typedef enum {
    ATTN_TASK_PREVIOUS_TOKEN = 0, /* predict the token one position back */
    ATTN_TASK_INDUCTION = 1,      /* n tokens, repeated: predict the repeat */
    ATTN_TASK_REVERSE = 2,        /* n tokens, then reversed: predict the mirror */
    ATTN_TASK_COUNT = 3
} attn_task;

#define ATTN_TRAIN_MAX_D_MODEL 64
#define ATTN_TRAIN_MAX_HEADS 4
#define ATTN_TRAIN_MAX_SEQ_LEN 32
#define ATTN_TRAIN_MAX_VOCAB 64
#define ATTN_TRAIN_MAX_BATCH 32
#define ATTN_TRAIN_MAX_TENSORS 13

/* One parameter tensor (rows, cols) at `offset` floats into the block. */
typedef struct {
    const char *name;
    long offset;
    int rows, cols;
    int decay; /* AdamW weight decay applies */
} attn_tensor_info;

typedef struct attn_trainer attn_trainer;

/* A model of `layers` (1 or 2) attention-only layers of `heads` heads,
 * d_model wide, on sequences of seq_len tokens from a vocabulary of `vocab`,
 * trained on `task` with batches of `batch`, AdamW at rate lr, all drawn
 * from seed. causal: the attention rule in training; bug: ATTN_BUG_NONE or
 * ATTN_BUG_NO_CAUSAL_MASK (training only). NULL + error on bad options,
 * with nothing allocated. */
ATTN_API attn_trainer *attn_train_create(int task, int layers, int heads, int d_model, int seq_len,
                                         int vocab, int batch, float lr, uint32_t seed,
                                         int causal, int bug);
ATTN_API void attn_train_free(attn_trainer *t); /* NULL-safe */

/* loss (1) <- the loss of the last of n optimiser steps on fresh batches. */
ATTN_API int attn_train_step(attn_trainer *t, float *loss, int n);

/* result (2) <- { loss, accuracy } on `batches` held-out batches, over the
 * task's scored positions, each predicted from its prefix alone, with the
 * trainer's causal flag and no bug, ablated heads zeroed. */
ATTN_API int attn_train_evaluate(attn_trainer *t, float *result, int batches);

/* weights (L, H, T, T) <- every head's probabilities on tokens (T): a fixed
 * sample sequence written into tokens when given == 0, else tokens as
 * given. The trainer's causal flag, no bug, ablated heads zeroed
 * downstream. */
ATTN_API int attn_train_attention(attn_trainer *t, float *weights, int *tokens, int given);
/* The same, and allowed (T, T) <- 1 where the run's rule let query i see
 * key j (NULL: not written). as_training 1 runs the rule and bug training
 * used (the no-causal-mask bug lets every query see every key); 0 is
 * attn_train_attention. */
ATTN_API int attn_train_attention_as(attn_trainer *t, float *weights, uint8_t *allowed, int *tokens,
                                     int given, int as_training);

/* Zero (on = 1) or restore (on = 0) head `head` of layer `layer` (0-based)
 * in evaluate and attention. Training never ablates. */
ATTN_API int attn_train_ablate(attn_trainer *t, int layer, int head, int on);

/* For tests: loss (1) and every gradient of tokens, targets (batch, seq_len)
 * (target -1 = no target) into attn_train_grads, without an update. */
ATTN_API int attn_train_gradients(attn_trainer *t, float *loss, const int *tokens, const int *targets);
ATTN_API float *attn_train_params(attn_trainer *t); /* the parameter block */
ATTN_API float *attn_train_grads(attn_trainer *t);  /* gradients, same layout */
ATTN_API int attn_train_step_count(const attn_trainer *t);
/* info (3) <- { offset, rows, cols } of parameter tensor `index`, in the
 * order wte (V, C), wpe (T, C), per layer wq, wk, wv, wo (C, C) as
 * (out, in), lnf.weight (1, C), lnf.bias (1, C), wu (V, C); and its name. */
ATTN_API int attn_train_tensor(const attn_trainer *t, int index, int *info);
ATTN_API const char *attn_train_tensor_name(const attn_trainer *t, int index);
/* x (T, d_model) <- the residual stream entering attention layer `layer`
 * (0-based) for tokens (T), 1 <= T <= seq_len: the embedding for layer 0.
 * With that layer's wq, wk, wv, wo in a multi-head module without bias, it
 * reproduces the layer's attention maps. */
ATTN_API int attn_train_layer_input(attn_trainer *t, float *x, const int *tokens, int T, int layer);

#endif /* ATTENTION_H */

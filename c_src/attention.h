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
    ATTN_BUG_SOFTMAX_BACKWARD_NO_ROWSUM = 13, /* backward: dS = P * dP, no row sum */
    ATTN_BUG_GRAD_THROUGH_BLOCKED = 14, /* backward: blocked weights taken as uniform */
    ATTN_BUG_COUNT = 15
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
 * scores are the scaled logits before masking. With weights == NULL the
 * (Tq, Tk) matrices are never materialised: rows are done a few at a time.
 * With causal set, key j is allowed for query i only if j <= i + causal_offset
 * (0: top-left aligned, as in PyTorch; multi-head attention passes the
 * position difference), ANDed with the mask. bug is ATTN_BUG_NONE except in
 * the break-it lab. */
int attn_sdpa(float *out, float *weights, float *scores,
              const float *q, const float *k, const float *v,
              attn_mask mask, int B, int H, int Tq, int Tk, int dk, int dv,
              float scale, int causal, int causal_offset, int bug);

/* The same, with the mask spelled out as plain arguments for the JS side. */
ATTN_API int attn_sdpa_js(float *out, float *weights, float *scores,
                          const float *q, const float *k, const float *v,
                          const uint8_t *mask, int msb, int msh, int msq, int msk,
                          int B, int H, int Tq, int Tk, int dk, int dv,
                          float scale, int causal, int bug);

/* The backward of attn_sdpa: gradients of a loss L given dout = dL/dout.
 * dq (B, H, Tq, dk), dk (B, H, Tk, dk), dv (B, H, Tk, dv) receive dL/dq,
 * dL/dk, dL/dv; dscores (B, H, Tq, Tk) or NULL receives dL/dscores (the
 * scaled logits attn_sdpa returns as scores), dprobs (B, H, Tq, Tk) or NULL
 * receives dL/dweights. dout (B, H, Tq, dv); q, k, v, mask, dims, scale,
 * causal rule and bug as given to attn_sdpa (here dk, dv name the gradient
 * buffers; the widths are Dk, Dv). The probabilities are recomputed, not
 * read back. Blocked pairs get exactly 0 in dscores and dprobs, and a key no
 * query may see gets exactly 0 in dk and dv. A forward bug gives the
 * gradient of that bugged forward; the two backward bugs change only this. */
int attn_sdpa_backward(float *dq, float *dk, float *dv, float *dscores, float *dprobs,
                       const float *dout, const float *q, const float *k, const float *v,
                       attn_mask mask, int B, int H, int Tq, int Tk, int Dk, int Dv,
                       float scale, int causal, int causal_offset, int bug);

/* The same, with the mask spelled out as plain arguments for the JS side. */
ATTN_API int attn_sdpa_backward_js(float *dq, float *dk, float *dv, float *dscores, float *dprobs,
                                   const float *dout, const float *q, const float *k, const float *v,
                                   const uint8_t *mask, int msb, int msh, int msq, int msk,
                                   int B, int H, int Tq, int Tk, int Dk, int Dv,
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
 * causal rule and no bug, ablated heads zeroed. */
ATTN_API int attn_train_evaluate(attn_trainer *t, float *result, int batches);

/* weights (L, H, T, T) <- every head's probabilities on tokens (T): a fixed
 * sample sequence written into tokens when given == 0, else tokens as
 * given. Causal, no bug, ablated heads zeroed downstream. */
ATTN_API int attn_train_attention(attn_trainer *t, float *weights, int *tokens, int given);

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

#endif /* ATTENTION_H */

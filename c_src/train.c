/* train.c: a tiny attention-only transformer, trained on toy tasks.
 *
 * The model, for tokens (B, T):
 *   1. embed     x0 = wte[token] + wpe[position]                 (B, T, C)
 *   2. layers    x_{l+1} = x_l + attention_l(x_l), l = 0..L-1
 *        project   q, k, v = x W^T, split into heads           (B, H, T, D)
 *        attend    attn_sdpa, the core's own attention
 *        merge     heads back to (B, T, C), out = merged Wo^T
 *   3. norm      LayerNorm of x_L
 *   4. unembed   logits = norm Wu^T, probabilities by softmax     (B, T, V)
 *   5. loss      mean cross-entropy over the positions with a target
 * No MLPs and no biases in the projections: every bit of routing the model
 * learns is done by its attention heads.
 *
 * The backward functions sit next to their forwards and run the passes in
 * reverse. Gradients accumulate with += into buffers zeroed once per step.
 * The attention backward is attn_sdpa_backward from attention.c.
 *
 * Optimiser: AdamW (beta1 0.9, beta2 0.99, weight decay on the matrices),
 * with a linear warm-up over the first steps, then a constant rate.
 *
 * Everything is allocated at creation, the attention calls' scratch too: the
 * entry points lend the trainer's arena to attn_alloc (attn_scratch_arena),
 * so a step allocates nothing.
 * Data come from the trainer's own generator, seeded at creation, so a seed
 * gives the same loss bits on a given build.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "kernels.h"

#define WARMUP_STEPS 20
#define BETA1 0.9f
#define BETA2 0.99f
#define ADAM_EPS 1e-8f
#define WEIGHT_DECAY 0.01f
#define LN_EPS 1e-5f

/* ======================================================================== */
/* Tasks: what each position of a sequence must predict                      */
/* ======================================================================== */

/* tokens, targets (T) for one sequence. Only positions whose answer the
 * context determines get a target; the others get -1 and count nowhere,
 * neither in the training loss nor in evaluation.
 *   previous-token: random tokens; position i predicts token i-1.
 *   induction: a random filler, then n random tokens, then the same n again,
 *     with n drawn from T/4..T/2 so the distance between the copies varies
 *     and only the tokens, not the positions, say where to look. Position i
 *     predicts token i+1, in the second copy, where the next token
 *     already appeared right after the current one. Tokens of the filler
 *     and the first copy are distinct while the vocabulary lasts.
 *   reverse: n = T/2 random tokens, then the same in reverse order; position
 *     i predicts token i+1, from the last token of the first half
 *     on, where the answer sits at the mirrored position 2n-2-i. */
static void make_sequence(int *tokens, int *targets, attn_rng *rng, int task, int T, int V) {
    int first = 1, n = T / 2;
    if (task == ATTN_TASK_PREVIOUS_TOKEN) {
        for (int i = 0; i < T; i++) tokens[i] = (int)(attn_rng_uniform(rng) * V);
    } else if (task == ATTN_TASK_INDUCTION) {
        const int lo = T / 4 > 2 ? T / 4 : 2;
        n = lo + (int)(attn_rng_uniform(rng) * (T / 2 - lo + 1));
        const int start = T - 2 * n; /* filler length */
        int pool[ATTN_TRAIN_MAX_VOCAB];
        for (int j = 0; j < V; j++) pool[j] = j;
        for (int i = 0; i < start + n; i++) {
            if (i < V) { /* a partial Fisher-Yates shuffle: distinct tokens */
                const int pick = i + (int)(attn_rng_uniform(rng) * (V - i));
                const int tmp = pool[i];
                pool[i] = pool[pick];
                pool[pick] = tmp;
                tokens[i] = pool[i];
            } else {
                tokens[i] = (int)(attn_rng_uniform(rng) * V);
            }
        }
        for (int i = 0; i < n; i++) tokens[start + n + i] = tokens[start + i];
        first = start + n;
    } else { /* reverse */
        for (int i = 0; i < n; i++) {
            tokens[i] = (int)(attn_rng_uniform(rng) * V);
            tokens[2 * n - 1 - i] = tokens[i];
        }
        if (T % 2) tokens[T - 1] = (int)(attn_rng_uniform(rng) * V);
        first = n - 1;
    }
    const int last = task == ATTN_TASK_PREVIOUS_TOKEN ? T - 1 : task == ATTN_TASK_INDUCTION ? T - 2 : 2 * n - 2;
    for (int i = 0; i < T; i++) {
        const int answer = task == ATTN_TASK_PREVIOUS_TOKEN ? i - 1 : i + 1;
        targets[i] = i >= first && i <= last ? tokens[answer] : -1;
    }
}

/* ======================================================================== */
/* The trainer                                                               */
/* ======================================================================== */

struct attn_trainer {
    int task, L, H, C, D, T, V, B; /* layers, heads, d_model, head width, context, vocab, batch */
    int causal, bug;               /* the attention rule used in training */
    float lr;
    uint32_t seed;
    int step;
    attn_rng data_rng;             /* training batches */

    /* Parameters, one block; grads, Adam's m and v mirror it. */
    long n_params;
    float *params, *grads, *adam_m, *adam_v;
    attn_tensor_info info[ATTN_TRAIN_MAX_TENSORS];
    int n_tensors;
    /* views into params (and, at the same offsets, grads) */
    long o_wte, o_wpe, o_wq[2], o_wk[2], o_wv[2], o_wo[2], o_lnw, o_lnb, o_wu;

    /* Data: tokens, targets (B, T), -1 = no target. */
    int *tokens, *targets;
    int *eval_tokens, *eval_targets; /* (B, T) held-out, and a prefix copy */
    int *prefix;                     /* (B, T) */

    /* Activations, for the largest (B, T); a run may use fewer rows. */
    float *x[3];                  /* (B, T, C) residual stream, x[0..L] */
    float *q[2], *k[2], *v[2];    /* (B, H, T, D) per layer */
    float *att[2];                /* (1, H, T, T) probabilities of attn_train_attention */
    float *atto[2];               /* (B, H, T, D) attention output */
    float *merged[2];             /* (B, T, C) heads merged */
    float *ln, *ln_mean, *ln_rstd;/* (B, T, C), (B, T), (B, T) */
    float *probs;                 /* (B, T, V) */

    /* Gradients of activations and scratch. */
    float *dx, *dln, *dmerged, *dflat, *flat; /* (B, T, C) each */
    float *datto, *dq, *dk, *dv;              /* (B, H, T, D) each */
    float *dlogits;                           /* (B, T, V) */
    float *packed, *wscratch;                 /* (max(V, C), C) each */
    float *arena;                             /* scratch of the attention calls */
    double arena_bytes;                       /* attn_sdpa_scratch_bytes of (B, H, T, T, D, D) */

    uint8_t ablated[2 * ATTN_TRAIN_MAX_HEADS]; /* (L, H): head output zeroed */
};

static const char *TENSOR_NAMES[] = {"wte", "wpe", "l1.wq", "l1.wk", "l1.wv", "l1.wo",
                                     "l2.wq", "l2.wk", "l2.wv", "l2.wo", "lnf.weight", "lnf.bias", "wu"};

/* Adds a parameter tensor (rows, cols) to the table; returns its offset. */
static long add_tensor(attn_trainer *t, const char *name, int rows, int cols, int decay) {
    attn_tensor_info *e = &t->info[t->n_tensors++];
    e->name = name;
    e->offset = t->n_params;
    e->rows = rows;
    e->cols = cols;
    e->decay = decay;
    t->n_params += (long)rows * cols;
    return e->offset;
}

/* ATTN_OK, or the error that names the first option out of range. */
static int check_options(int task, int layers, int heads, int d_model, int seq_len, int vocab,
                         int batch, float lr, int causal, int bug) {
    if (task < 0 || task >= ATTN_TASK_COUNT) return attn_fail(ATTN_BAD_ARGUMENT, "unknown task %d", task);
    if (layers < 1 || layers > 2) return attn_fail(ATTN_BAD_ARGUMENT, "layers must be 1 or 2 (got %d)", layers);
    if (heads < 1 || heads > ATTN_TRAIN_MAX_HEADS)
        return attn_fail(ATTN_BAD_ARGUMENT, "heads must be between 1 and %d (got %d)", ATTN_TRAIN_MAX_HEADS, heads);
    if (d_model < 1 || d_model > ATTN_TRAIN_MAX_D_MODEL)
        return attn_fail(ATTN_BAD_ARGUMENT, "dModel must be between 1 and %d (got %d)", ATTN_TRAIN_MAX_D_MODEL, d_model);
    if (d_model % heads)
        return attn_fail(ATTN_BAD_ARGUMENT, "dModel %d is not divisible by heads %d", d_model, heads);
    if (seq_len < 4 || seq_len > ATTN_TRAIN_MAX_SEQ_LEN)
        return attn_fail(ATTN_BAD_ARGUMENT, "seqLen must be between 4 and %d (got %d)", ATTN_TRAIN_MAX_SEQ_LEN, seq_len);
    if (vocab < 2 || vocab > ATTN_TRAIN_MAX_VOCAB)
        return attn_fail(ATTN_BAD_ARGUMENT, "vocab must be between 2 and %d (got %d)", ATTN_TRAIN_MAX_VOCAB, vocab);
    if (task == ATTN_TASK_INDUCTION && vocab < seq_len / 2)
        return attn_fail(ATTN_BAD_ARGUMENT,
                         "induction draws seqLen/2 = %d distinct tokens, so vocab must be at least %d (got %d)",
                         seq_len / 2, seq_len / 2, vocab);
    if (batch < 1 || batch > ATTN_TRAIN_MAX_BATCH)
        return attn_fail(ATTN_BAD_ARGUMENT, "batch must be between 1 and %d (got %d)", ATTN_TRAIN_MAX_BATCH, batch);
    if (!(lr > 0.0f) || !isfinite(lr) || lr > 1.0f)
        return attn_fail(ATTN_BAD_ARGUMENT, "lr must be a number in (0, 1] (got %g)", (double)lr);
    if (causal != 0 && causal != 1) return attn_fail(ATTN_BAD_ARGUMENT, "causal must be 0 or 1");
    if (bug != ATTN_BUG_NONE && bug != ATTN_BUG_NO_CAUSAL_MASK)
        return attn_fail(ATTN_BAD_ARGUMENT, "a trainer takes only the no-causal-mask bug (got bug %d)", bug);
    return ATTN_OK;
}

/* A trainer for `task` with L = layers, H = heads, C = d_model, T = seq_len,
 * V = vocab, B = batch: the parameter table, one block for parameters,
 * gradients, Adam state, activations for (B, T) and the attention calls'
 * arena, and the weights drawn from seed. NULL and an error on bad options
 * (nothing allocated) or when memory runs out. */
attn_trainer *attn_train_create(int task, int layers, int heads, int d_model, int seq_len, int vocab,
                                int batch, float lr, uint32_t seed, int causal, int bug) {
    attn_clear_error();
    if (check_options(task, layers, heads, d_model, seq_len, vocab, batch, lr, causal, bug)) return NULL;
    attn_trainer *t = attn_alloc(sizeof *t);
    if (!t) return NULL;
    memset(t, 0, sizeof *t);
    t->task = task, t->L = layers, t->H = heads, t->C = d_model, t->D = d_model / heads;
    t->T = seq_len, t->V = vocab, t->B = batch, t->causal = causal, t->bug = bug;
    t->lr = lr, t->seed = seed;
    const int C = t->C, T = t->T, V = t->V, B = t->B, H = t->H;

    /* 1. the parameter table, in a fixed order */
    t->o_wte = add_tensor(t, TENSOR_NAMES[0], V, C, 1);
    t->o_wpe = add_tensor(t, TENSOR_NAMES[1], T, C, 1);
    for (int l = 0; l < t->L; l++) {
        t->o_wq[l] = add_tensor(t, TENSOR_NAMES[2 + 4 * l], C, C, 1);
        t->o_wk[l] = add_tensor(t, TENSOR_NAMES[3 + 4 * l], C, C, 1);
        t->o_wv[l] = add_tensor(t, TENSOR_NAMES[4 + 4 * l], C, C, 1);
        t->o_wo[l] = add_tensor(t, TENSOR_NAMES[5 + 4 * l], C, C, 1);
    }
    t->o_lnw = add_tensor(t, TENSOR_NAMES[10], 1, C, 0);
    t->o_lnb = add_tensor(t, TENSOR_NAMES[11], 1, C, 0);
    t->o_wu = add_tensor(t, TENSOR_NAMES[12], V, C, 1);

    /* 2. one block for everything: parameters x4, activations, scratch */
    const long BT = (long)B * T, BTC = BT * C, HTT = (long)H * T * T;
    const long wide = (long)(V > C ? V : C) * C;
    const attn_dims largest = {B, H, T, T, t->D, t->D}; /* every attention call fits in these */
    t->arena_bytes = attn_sdpa_scratch_bytes(&largest);
    const long arena_floats = ((long)ceil(t->arena_bytes / 4.0) + 3) / 4 * 4; /* keeps 16-byte alignment */
    const long floats = arena_floats + 4 * t->n_params
                      + (t->L + 1) * BTC              /* x */
                      + t->L * (5 * BTC + HTT)        /* q, k, v, atto, merged, att */
                      + BTC + 2 * BT + BT * V         /* ln, mean, rstd, probs */
                      + 5 * BTC + 4 * BTC + BT * V    /* dx .. flat, datto .. dv, dlogits */
                      + 2 * wide;
    const long ints = 5 * BT;
    float *block = attn_alloc(4.0 * floats + 4.0 * ints);
    if (!block) {
        attn_free(t);
        return NULL;
    }
    memset(block, 0, 4 * floats);
    float *p = block;
#define TAKE(n) (p += (n), p - (n))
    t->arena = TAKE(arena_floats);
    t->params = TAKE(t->n_params);
    t->grads = TAKE(t->n_params);
    t->adam_m = TAKE(t->n_params);
    t->adam_v = TAKE(t->n_params);
    for (int l = 0; l <= t->L; l++) t->x[l] = TAKE(BTC);
    for (int l = 0; l < t->L; l++) {
        t->q[l] = TAKE(BTC), t->k[l] = TAKE(BTC), t->v[l] = TAKE(BTC);
        t->atto[l] = TAKE(BTC), t->merged[l] = TAKE(BTC), t->att[l] = TAKE(HTT);
    }
    t->ln = TAKE(BTC), t->ln_mean = TAKE(BT), t->ln_rstd = TAKE(BT), t->probs = TAKE(BT * V);
    t->dx = TAKE(BTC), t->dln = TAKE(BTC), t->dmerged = TAKE(BTC), t->dflat = TAKE(BTC), t->flat = TAKE(BTC);
    t->datto = TAKE(BTC), t->dq = TAKE(BTC), t->dk = TAKE(BTC), t->dv = TAKE(BTC);
    t->dlogits = TAKE(BT * V);
    t->packed = TAKE(wide), t->wscratch = TAKE(wide);
#undef TAKE
    int *ip = (int *)p;
    t->tokens = ip, t->targets = ip + BT, t->eval_tokens = ip + 2 * BT, t->eval_targets = ip + 3 * BT;
    t->prefix = ip + 4 * BT;

    /* 3. initial weights: normal, std 0.1 for wte, wpe and wu, 1/sqrt(C)
     * for the projections; LayerNorm starts as the identity */
    attn_rng init;
    attn_rng_seed(&init, seed);
    for (int e = 0; e < t->n_tensors; e++) {
        const attn_tensor_info *ti = &t->info[e];
        float *w = t->params + ti->offset;
        const long n = (long)ti->rows * ti->cols;
        const float std = ti->offset == t->o_wte || ti->offset == t->o_wpe || ti->offset == t->o_wu
                        ? 0.1f : 1.0f / sqrtf((float)C);
        for (long i = 0; i < n; i++)
            w[i] = ti->offset == t->o_lnw ? 1.0f : ti->offset == t->o_lnb ? 0.0f : std * attn_rng_normal(&init);
    }
    attn_rng_seed(&t->data_rng, seed ^ 0xA5A5A5A5u);
    return t;
}

/* Release t and its one block; NULL-safe. */
void attn_train_free(attn_trainer *t) {
    if (!t) return;
    attn_free(t->arena); /* the one block */
    attn_free(t);
}

/* ======================================================================== */
/* Layers, forward and backward side by side                                 */
/* ======================================================================== */

/* out (N, O) = inp (N, I) @ w^T, w (O, I) in (out, in) layout. */
static void linear_forward(attn_trainer *t, float *out, const float *inp, const float *w, int N, int O, int I) {
    attn_pack_strips(t->packed, w, O, I);
    attn_gemm_packed(out, O, inp, I, t->packed, N, O, I, 1.0f);
}

/* dinp (N, I) += dout (N, O) @ w; dw (O, I) += dout^T @ inp. */
static void linear_backward(attn_trainer *t, float *dinp, float *dw, const float *dout,
                            const float *inp, const float *w, float *scratch, int N, int O, int I) {
    attn_gemm_tn(t->wscratch, I, dout, O, inp, I, O, I, N, 1.0f);
    for (long i = 0; i < (long)O * I; i++) dw[i] += t->wscratch[i];
    if (!dinp) return;
    attn_gemm(scratch, I, dout, O, w, I, N, I, O, 1.0f);
    for (long i = 0; i < (long)N * I; i++) dinp[i] += scratch[i];
}

/* x (B, T, C) = wte[tokens] + wpe[position]; tokens (B, T). */
static void embed_forward(float *x, const int *tokens, const float *wte, const float *wpe, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++) {
            const float *te = wte + (long)tokens[b * T + i] * C, *pe = wpe + (long)i * C;
            float *x_bi = x + ((long)b * T + i) * C;
            for (int c = 0; c < C; c++) x_bi[c] = te[c] + pe[c];
        }
}

/* dwte (V, C), dwpe (T, C) += dx (B, T, C) scattered by token and position. */
static void embed_backward(float *dwte, float *dwpe, const float *dx, const int *tokens, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++) {
            const float *d = dx + ((long)b * T + i) * C;
            float *te = dwte + (long)tokens[b * T + i] * C, *pe = dwpe + (long)i * C;
            for (int c = 0; c < C; c++) {
                te[c] += d[c];
                pe[c] += d[c];
            }
        }
}

/* out (N, C) = LayerNorm(inp (N, C)) * w + b; mean, rstd (N) saved. */
static void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                              const float *w, const float *b, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float m = 0.0f, var = 0.0f;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        const float s = 1.0f / sqrtf(var / C + LN_EPS);
        for (int c = 0; c < C; c++) out[(long)n * C + c] = (x[c] - m) * s * w[c] + b[c];
        mean[n] = m;
        rstd[n] = s;
    }
}

/* dinp (N, C), dw, db (C) += the LayerNorm backward of dout (N, C). */
static void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, const float *mean, const float *rstd, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C, *d = dout + (long)n * C;
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            const float norm = (x[c] - mean[n]) * rstd[n], dnorm = w[c] * d[c];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        for (int c = 0; c < C; c++) {
            const float norm = (x[c] - mean[n]) * rstd[n], dnorm = w[c] * d[c];
            db[c] += d[c];
            dw[c] += norm * d[c];
            dinp[(long)n * C + c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[n];
        }
    }
}

/* probs (N, V) <- softmax(probs) in place; returns the summed loss over rows
 * with a target (targets (N), -1 = none) and counts them in *count. */
static double crossentropy_forward(float *probs, int *count, const int *targets, int N, int V) {
    attn_softmax_rows(probs, V, N, V);
    double loss = 0.0;
    *count = 0;
    for (int n = 0; n < N; n++) {
        if (targets[n] < 0) continue;
        loss -= log((double)probs[(long)n * V + targets[n]]);
        (*count)++;
    }
    return loss;
}

/* dlogits (N, V) = (probs - onehot(target)) / count, 0 on rows without target. */
static void crossentropy_backward(float *dlogits, const float *probs, const int *targets, int count, int N, int V) {
    const float inv = 1.0f / (float)count;
    for (int n = 0; n < N; n++)
        for (int j = 0; j < V; j++) {
            const long at = (long)n * V + j;
            dlogits[at] = targets[n] < 0 ? 0.0f : (probs[at] - (j == targets[n] ? 1.0f : 0.0f)) * inv;
        }
}

/* ======================================================================== */
/* The model                                                                 */
/* ======================================================================== */

/* Forward on tokens (B, T) with B <= t->B, T <= t->T rows of the buffers;
 * leaves the logits in t->probs (B, T, V). `ablate` zeroes the outputs of
 * the heads marked in t->ablated; keep_probs keeps every head's attention
 * probabilities in t->att (otherwise attn_sdpa never builds them). */
static int model_forward(attn_trainer *t, const int *tokens, int B, int T, int causal, int bug, int ablate,
                         int keep_probs) {
    const int C = t->C, H = t->H, D = t->D, V = t->V, N = B * T;
    const float *P = t->params;
    const attn_dims dims = {B, H, T, T, D, D};
    const attn_visibility rule = {{NULL, 0, 0, 0, 0}, NULL, causal, 0};

    /* 1. embed */
    embed_forward(t->x[0], tokens, P + t->o_wte, P + t->o_wpe, B, T, C);

    /* 2. attention layers with residuals */
    for (int l = 0; l < t->L; l++) {
        linear_forward(t, t->flat, t->x[l], P + t->o_wq[l], N, C, C);
        attn_split_heads(t->q[l], t->flat, B, T, H, D);
        linear_forward(t, t->flat, t->x[l], P + t->o_wk[l], N, C, C);
        attn_split_heads(t->k[l], t->flat, B, T, H, D);
        linear_forward(t, t->flat, t->x[l], P + t->o_wv[l], N, C, C);
        attn_split_heads(t->v[l], t->flat, B, T, H, D);
        attn_scratch_arena(t->arena, t->arena_bytes); /* its scratch, lent for the call */
        const int status = attn_sdpa(t->atto[l], keep_probs ? t->att[l] : NULL, NULL, t->q[l], t->k[l], t->v[l], &rule, &dims,
                                     1.0f / sqrtf((float)D), bug);
        attn_scratch_arena(NULL, 0);
        if (status) return status;
        attn_merge_heads(t->merged[l], t->atto[l], B, T, H, D);
        if (ablate)
            for (int h = 0; h < H; h++)
                if (t->ablated[l * H + h])
                    for (int n = 0; n < N; n++) memset(t->merged[l] + (long)n * C + h * D, 0, sizeof(float) * D);
        linear_forward(t, t->flat, t->merged[l], P + t->o_wo[l], N, C, C);
        for (long i = 0; i < (long)N * C; i++) t->x[l + 1][i] = t->x[l][i] + t->flat[i];
    }

    /* 3. norm, 4. unembed */
    layernorm_forward(t->ln, t->ln_mean, t->ln_rstd, t->x[t->L], P + t->o_lnw, P + t->o_lnb, N, C);
    linear_forward(t, t->probs, t->ln, P + t->o_wu, N, V, C);
    return ATTN_OK;
}

/* Gradients of the mean cross-entropy of the last forward (on t->B, t->T)
 * into t->grads, which this zeroes first. */
static int model_backward(attn_trainer *t, const int *tokens, const int *targets, int count) {
    const int B = t->B, T = t->T, C = t->C, H = t->H, D = t->D, V = t->V, N = B * T;
    const float *P = t->params;
    float *G = t->grads;
    const attn_dims dims = {B, H, T, T, D, D};
    const attn_visibility rule = {{NULL, 0, 0, 0, 0}, NULL, t->causal, 0};
    memset(G, 0, sizeof(float) * t->n_params);

    /* 5. loss */
    crossentropy_backward(t->dlogits, t->probs, targets, count, N, V);
    /* 4. unembed */
    memset(t->dln, 0, sizeof(float) * N * C);
    linear_backward(t, t->dln, G + t->o_wu, t->dlogits, t->ln, P + t->o_wu, t->flat, N, V, C);
    /* 3. norm */
    memset(t->dx, 0, sizeof(float) * N * C);
    layernorm_backward(t->dx, G + t->o_lnw, G + t->o_lnb, t->dln, t->x[t->L], P + t->o_lnw,
                       t->ln_mean, t->ln_rstd, N, C);

    /* 2. layers, last first: dx holds dL/dx_{l+1}, which is also the
     * residual path's share of dL/dx_l; the attention branch adds to it */
    for (int l = t->L - 1; l >= 0; l--) {
        memset(t->dmerged, 0, sizeof(float) * N * C);
        linear_backward(t, t->dmerged, G + t->o_wo[l], t->dx, t->merged[l], P + t->o_wo[l], t->flat, N, C, C);
        attn_split_heads(t->datto, t->dmerged, B, T, H, D);
        attn_scratch_arena(t->arena, t->arena_bytes);
        const int status = attn_sdpa_backward(t->dq, t->dk, t->dv, NULL, NULL, t->datto, NULL,
                                              t->q[l], t->k[l], t->v[l], &rule, &dims,
                                              1.0f / sqrtf((float)D), t->bug);
        attn_scratch_arena(NULL, 0);
        if (status) return status;
        const float *dheads[3] = {t->dq, t->dk, t->dv};
        const long w_at[3] = {t->o_wq[l], t->o_wk[l], t->o_wv[l]};
        for (int p = 0; p < 3; p++) {
            attn_merge_heads(t->dflat, dheads[p], B, T, H, D);
            linear_backward(t, t->dx, G + w_at[p], t->dflat, t->x[l], P + w_at[p], t->flat, N, C, C);
        }
    }

    /* 1. embed */
    embed_backward(G + t->o_wte, G + t->o_wpe, t->dx, tokens, B, T, C);
    return ATTN_OK;
}

/* AdamW on every parameter, step number t->step + 1. */
static void adamw_update(attn_trainer *t) {
    const int s = t->step + 1;
    const float lr = t->lr * (s < WARMUP_STEPS ? (float)s / WARMUP_STEPS : 1.0f);
    const float c1 = 1.0f - powf(BETA1, (float)s), c2 = 1.0f - powf(BETA2, (float)s);
    for (int e = 0; e < t->n_tensors; e++) {
        const attn_tensor_info *ti = &t->info[e];
        const float wd = ti->decay ? WEIGHT_DECAY : 0.0f;
        for (long i = ti->offset; i < ti->offset + (long)ti->rows * ti->cols; i++) {
            const float g = t->grads[i];
            t->adam_m[i] = BETA1 * t->adam_m[i] + (1.0f - BETA1) * g;
            t->adam_v[i] = BETA2 * t->adam_v[i] + (1.0f - BETA2) * g * g;
            const float m_hat = t->adam_m[i] / c1, v_hat = t->adam_v[i] / c2;
            t->params[i] -= lr * (m_hat / (sqrtf(v_hat) + ADAM_EPS) + wd * t->params[i]);
        }
    }
}

/* ======================================================================== */
/* Entry points                                                              */
/* ======================================================================== */

/* ATTN_OK, or ATTN_MODULE_FREED when t is NULL. */
static int alive(const attn_trainer *t) {
    return t ? ATTN_OK : attn_fail(ATTN_MODULE_FREED, "the trainer has been freed");
}

/* loss (1) <- the mean cross-entropy on tokens, targets (B, T), and the
 * gradients of every parameter into attn_train_grads; no update. */
int attn_train_gradients(attn_trainer *t, float *loss, const int *tokens, const int *targets) {
    attn_clear_error();
    int status;
    if ((status = alive(t))) return status;
    const long BT = (long)t->B * t->T;
    for (long i = 0; i < BT; i++) {
        if (tokens[i] < 0 || tokens[i] >= t->V)
            return attn_fail(ATTN_BAD_ARGUMENT, "token %d at position %ld is outside the vocabulary 0..%d",
                             tokens[i], i, t->V - 1);
        if (targets[i] < -1 || targets[i] >= t->V)
            return attn_fail(ATTN_BAD_ARGUMENT, "target %d at position %ld is outside -1..%d",
                             targets[i], i, t->V - 1);
    }
    if ((status = model_forward(t, tokens, t->B, t->T, t->causal, t->bug, 0, 0))) return status;
    int count;
    const double sum = crossentropy_forward(t->probs, &count, targets, t->B * t->T, t->V);
    if (count == 0) return attn_fail(ATTN_BAD_ARGUMENT, "no position has a target");
    *loss = (float)(sum / count);
    return model_backward(t, tokens, targets, count);
}

/* loss (1) <- the training loss of the last of n AdamW steps, each on a
 * fresh batch of tokens, targets (B, T); n = 0 leaves it unwritten. A step
 * whose loss is not finite stops the call (ATTN_OVERFLOW) without an
 * update; loss then holds the last step taken, unwritten if there was none. */
int attn_train_step(attn_trainer *t, float *loss, int n) {
    attn_clear_error();
    int status;
    if ((status = alive(t))) return status;
    if (n < 0) return attn_fail(ATTN_BAD_ARGUMENT, "n must be at least 0 (got %d)", n);
    for (int s = 0; s < n; s++) {
        for (int b = 0; b < t->B; b++)
            make_sequence(t->tokens + (long)b * t->T, t->targets + (long)b * t->T,
                          &t->data_rng, t->task, t->T, t->V);
        float current;
        if ((status = attn_train_gradients(t, &current, t->tokens, t->targets))) return status;
        if (!isfinite(current)) /* refuse to step on a NaN: the weights stay as they were */
            return attn_fail(ATTN_OVERFLOW, "training diverged at step %d: the loss is not finite; "
                             "lower lr and start again", t->step + 1);
        adamw_update(t);
        t->step++;
        *loss = current;
    }
    return ATTN_OK;
}

/* result (2) <- { loss, accuracy } over the scored positions of `batches`
 * held-out batches (B, T), each position predicted from its prefix alone
 * under the trainer's causal flag, no bug, ablated heads zeroed. */
int attn_train_evaluate(attn_trainer *t, float *result, int batches) {
    attn_clear_error();
    int status;
    if ((status = alive(t))) return status;
    if (batches < 1 || batches > 1000) return attn_fail(ATTN_BAD_ARGUMENT, "batches must be between 1 and 1000 (got %d)", batches);
    const int B = t->B, T = t->T, V = t->V;
    attn_rng rng; /* the same held-out sequences on every call */
    attn_rng_seed(&rng, t->seed ^ 0x5EED0E7Au);
    double loss = 0.0;
    long right = 0, total = 0;
    for (int batch = 0; batch < batches; batch++) {
        for (int b = 0; b < B; b++)
            make_sequence(t->eval_tokens + (long)b * T, t->eval_targets + (long)b * T, &rng, t->task, T, V);
        /* as in generation: the prediction at position i sees tokens 0..i only */
        for (int i = 0; i < T; i++) {
            int any = 0;
            for (int b = 0; b < B; b++) any |= t->eval_targets[(long)b * T + i] >= 0;
            if (!any) continue;
            const int len = i + 1;
            for (int b = 0; b < B; b++) memcpy(t->prefix + (long)b * len, t->eval_tokens + (long)b * T, sizeof(int) * len);
            if ((status = model_forward(t, t->prefix, B, len, t->causal, ATTN_BUG_NONE, 1, 0))) return status;
            for (int b = 0; b < B; b++) {
                const int target = t->eval_targets[(long)b * T + i];
                if (target < 0) continue;
                float *row = t->probs + ((long)b * len + i) * V;
                attn_softmax_rows(row, V, 1, V);
                int best = 0;
                for (int j = 1; j < V; j++) best = row[j] > row[best] ? j : best;
                right += best == target;
                loss -= log((double)row[target]);
                total++;
            }
        }
    }
    /* A target whose probability underflowed to 0 makes the loss infinite:
     * the model diverged, as a training step would have said. */
    const double mean = loss / total;
    if (!(mean <= FLT_MAX))
        return attn_fail(ATTN_OVERFLOW, "the held-out loss is not finite: the model diverged; lower lr and start again");
    result[0] = (float)mean;
    result[1] = (float)((double)right / total);
    return ATTN_OK;
}

/* weights (L, H, T, T), allowed (T, T) or NULL <- every head's probabilities
 * on tokens (T), and 1 where the run's rule let query i see key j. tokens as
 * for attn_train_attention. as_training 0: as evaluation runs the model (the
 * trainer's causal flag, no bug); 1: as its training steps ran (the same
 * flag and the trainer's bug). Ablated heads are zeroed downstream either way. */
int attn_train_attention_as(attn_trainer *t, float *weights, uint8_t *allowed, int *tokens, int given,
                            int as_training) {
    attn_clear_error();
    int status;
    if ((status = alive(t))) return status;
    if (as_training != 0 && as_training != 1)
        return attn_fail(ATTN_BAD_ARGUMENT, "as_training must be 0 or 1 (got %d)", as_training);
    const int T = t->T, H = t->H;
    const int bug = as_training ? t->bug : ATTN_BUG_NONE;
    if (given) {
        for (int i = 0; i < T; i++)
            if (tokens[i] < 0 || tokens[i] >= t->V)
                return attn_fail(ATTN_BAD_ARGUMENT, "token %d at position %d is outside the vocabulary 0..%d",
                                 tokens[i], i, t->V - 1);
    } else { /* the same sample sequence on every call */
        attn_rng rng;
        attn_rng_seed(&rng, t->seed ^ 0x0005A3E1u);
        make_sequence(tokens, t->prefix, &rng, t->task, T, t->V);
    }
    if ((status = model_forward(t, tokens, 1, T, t->causal, bug, 1, 1))) return status;
    for (int l = 0; l < t->L; l++) memcpy(weights + (long)l * H * T * T, t->att[l], sizeof(float) * H * T * T);
    if (!allowed) return ATTN_OK;
    /* the rule of that run: the no-causal-mask bug ignores the causal flag */
    const attn_visibility rule = {{NULL, 0, 0, 0, 0}, NULL, t->causal && bug != ATTN_BUG_NO_CAUSAL_MASK, 0};
    return attn_allowed_pairs(allowed, &rule, 1, 1, T, T);
}

/* weights (L, H, T, T) <- the maps as evaluation runs the model. */
int attn_train_attention(attn_trainer *t, float *weights, int *tokens, int given) {
    return attn_train_attention_as(t, weights, NULL, tokens, given, 0);
}

/* ablated (L, H) at (layer, head) <- on != 0. */
int attn_train_ablate(attn_trainer *t, int layer, int head, int on) {
    attn_clear_error();
    int status;
    if ((status = alive(t))) return status;
    if (layer < 0 || layer >= t->L) return attn_fail(ATTN_BAD_ARGUMENT, "layer must be between 0 and %d (got %d)", t->L - 1, layer);
    if (head < 0 || head >= t->H) return attn_fail(ATTN_BAD_ARGUMENT, "head must be between 0 and %d (got %d)", t->H - 1, head);
    t->ablated[layer * t->H + head] = on != 0;
    return ATTN_OK;
}

/* The parameter block (n_params), laid out as attn_train_tensor says; NULL
 * for a NULL t. */
float *attn_train_params(attn_trainer *t) { return t ? t->params : NULL; }

/* The gradient block, laid out as the parameters; NULL for a NULL t. */
float *attn_train_grads(attn_trainer *t) { return t ? t->grads : NULL; }

/* The optimiser steps taken so far; -1 for a NULL t. */
int attn_train_step_count(const attn_trainer *t) { return t ? t->step : -1; }

/* info (3) <- { offset, rows, cols } of parameter tensor `index`. */
int attn_train_tensor(const attn_trainer *t, int index, int *info) {
    attn_clear_error();
    int status;
    if ((status = alive(t))) return status;
    if (index < 0 || index >= t->n_tensors)
        return attn_fail(ATTN_BAD_ARGUMENT, "tensor index %d is outside 0..%d", index, t->n_tensors - 1);
    const attn_tensor_info *e = &t->info[index];
    info[0] = (int)e->offset;
    info[1] = e->rows;
    info[2] = e->cols;
    return ATTN_OK;
}

/* The name of parameter tensor `index`; "" when there is none. */
const char *attn_train_tensor_name(const attn_trainer *t, int index) {
    return t && index >= 0 && index < t->n_tensors ? t->info[index].name : "";
}

/* ======================================================================== */
/* One layer's input, to run the layer's attention in a separate module      */
/* ======================================================================== */

/* x (T, C) <- the residual stream that enters attention layer `layer`
 * (0-based) for one sequence of tokens (T), 1 <= T <= seq_len: the embedding
 * wte[token] + wpe[position] for layer 0, and after the layers before it for
 * a later one (their attention under the trainer's causal flag, no bug,
 * ablated heads zeroed, as in attn_train_attention). A multi-head attention
 * module with the layer's wq, wk, wv, wo, no bias, fed this x, gives the
 * layer's maps. */
int attn_train_layer_input(attn_trainer *t, float *x, const int *tokens, int T, int layer) {
    attn_clear_error();
    int status;
    if ((status = alive(t))) return status;
    if (layer < 0 || layer >= t->L)
        return attn_fail(ATTN_BAD_ARGUMENT, "layer must be between 0 and %d (got %d)", t->L - 1, layer);
    if (T < 1 || T > t->T)
        return attn_fail(ATTN_BAD_ARGUMENT, "the sequence must have 1 to %d tokens (got %d)", t->T, T);
    for (int i = 0; i < T; i++)
        if (tokens[i] < 0 || tokens[i] >= t->V)
            return attn_fail(ATTN_BAD_ARGUMENT, "token %d at position %d is outside the vocabulary 0..%d",
                             tokens[i], i, t->V - 1);
    /* 1. the model on this one sequence: it leaves x_0 .. x_L in t->x */
    if ((status = model_forward(t, tokens, 1, T, t->causal, ATTN_BUG_NONE, 1, 0))) return status;
    /* 2. the stream entering the layer */
    memcpy(x, t->x[layer], sizeof(float) * T * t->C);
    return ATTN_OK;
}

/* mha.c: multi-head attention on top of attn_sdpa.
 *
 * forward, in numbered passes:
 *   1. project   Q, K, V = x W^T + b          one matmul each, full width
 *   2. split     (B, T, C) -> (B, H, T, D)    reshape, then transpose
 *   3. rope      rotate q and k by position   (optional)
 *   4. cache     K, V <- [past, new] along T
 *   5. visibility  attention mask, key padding of the full K, causal by position
 *   6. attend    attn_sdpa, which applies the rule key by key
 *   7. merge     (B, H, T, D) -> (B, T, C)    transpose, then reshape
 *   8. project   out = merged Wo^T + bo, padded queries zeroed
 *
 * Weight init: every weight and bias entry is uniform in
 * [-1/sqrt(C), 1/sqrt(C)), the bound nn.Linear uses by default, drawn from the
 * seed in the order q, k, v, out; for each, the weight row by row, then the bias.
 *
 * RoPE (rope.c) uses the split-halves pairing: in a head of width D, entry
 * d < D/2 is rotated together with entry d + D/2 by the angle
 * pos * ATTN_ROPE_BASE^(-2d/D).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "kernels.h"

typedef struct mha_saved mha_saved;

struct attn_mha {
    int C;            /* d_model */
    int H;            /* heads */
    int D;            /* head width, C / H */
    int rope;         /* rotate q and k by position */
    float *weight[4]; /* [C, C] each, (out, in), for q, k, v, out */
    float *packed[4]; /* [C, C] each, weight in strips for attn_gemm_packed */
    float *bias[4];   /* [C] each, or NULL without bias */
    int save_next;    /* the next forward keeps what backward needs */
    mha_saved *saved; /* what the last forward that asked kept, or NULL */
};

static void free_saved(mha_saved *saved);

/* ======================================================================== */
/* Life cycle and parameters                                                 */
/* ======================================================================== */

/* A module of C = d_model, H = num_heads, D = C / H: weight[4] (C, C) and,
 * with `bias`, bias[4] (C), drawn from seed, the weights also packed in
 * strips. NULL and an error on bad sizes (H not dividing C, an odd D with
 * rope) or when memory runs out. */
attn_mha *attn_mha_create(int d_model, int num_heads, int bias, int rope, uint32_t seed) {
    attn_clear_error();
    if (d_model < 1 || num_heads < 1) {
        attn_fail(ATTN_BAD_ARGUMENT, "dModel and numHeads must be positive (got %d, %d)", d_model, num_heads);
        return NULL;
    }
    if (d_model % num_heads) {
        attn_fail(ATTN_HEADS_DO_NOT_DIVIDE, "dModel %d is not divisible by numHeads %d", d_model, num_heads);
        return NULL;
    }
    if (rope && (d_model / num_heads) % 2) {
        attn_fail(ATTN_ROPE_ODD_HEAD_DIM, "RoPE needs an even head width; dModel/numHeads = %d", d_model / num_heads);
        return NULL;
    }
    const int C = d_model;
    const double floats = 8.0 * C * C + (bias ? 4.0 * C : 0.0);
    attn_mha *m = attn_alloc(sizeof *m);
    if (!m) return NULL;
    float *params = attn_alloc(4.0 * floats);
    if (!params) {
        attn_free(m);
        return NULL;
    }
    m->C = C;
    m->H = num_heads;
    m->D = C / num_heads;
    m->rope = rope != 0;
    m->save_next = 0;
    m->saved = NULL;
    for (int p = 0; p < 4; p++) {
        m->weight[p] = params + (long)p * C * C;
        m->packed[p] = params + (long)(4 + p) * C * C;
        m->bias[p] = bias ? params + 8L * C * C + (long)p * C : NULL;
    }
    attn_rng rng;
    attn_rng_seed(&rng, seed);
    const float bound = 1.0f / sqrtf((float)C);
    for (int p = 0; p < 4; p++) {
        for (long i = 0; i < (long)C * C; i++) m->weight[p][i] = (2.0f * attn_rng_uniform(&rng) - 1.0f) * bound;
        if (m->bias[p])
            for (int i = 0; i < C; i++) m->bias[p][i] = (2.0f * attn_rng_uniform(&rng) - 1.0f) * bound;
        attn_pack_strips(m->packed[p], m->weight[p], C, C);
    }
    return m;
}

/* Releases m and its parameters; NULL-safe. */
void attn_mha_free(attn_mha *m) {
    if (!m) return;
    free_saved(m->saved);
    attn_free(m->weight[0]); /* the one parameter block */
    attn_free(m);
}

/* weight (C, C) of projection `which`, or NULL. */
const float *attn_mha_weight(const attn_mha *m, int which) {
    return m && which >= 0 && which < 4 ? m->weight[which] : NULL;
}

/* bias (C) of projection `which`, or NULL. */
const float *attn_mha_bias(const attn_mha *m, int which) {
    return m && which >= 0 && which < 4 ? m->bias[which] : NULL;
}

/* weight (C, C) (out, in); bias (C) or NULL. */
int attn_mha_set(attn_mha *m, int which, const float *weight, const float *bias) {
    attn_clear_error();
    if (!m) return attn_fail(ATTN_MODULE_FREED, "the module has been freed");
    if (which < 0 || which > 3 || !weight) return attn_fail(ATTN_BAD_ARGUMENT, "bad projection %d", which);
    static const char *names[4] = {"qProj", "kProj", "vProj", "outProj"};
    if (bias && !m->bias[which])
        return attn_fail(ATTN_BAD_ARGUMENT, "%s.bias given but this module was created without bias", names[which]);
    const int C = m->C;
    long at = attn_find_non_finite(weight, (long)C * C);
    if (at >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "%s.weight has a non-finite value at [%ld, %ld]",
                         names[which], at / C, at % C);
    if (bias && (at = attn_find_non_finite(bias, C)) >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "%s.bias has a non-finite value at [%ld]", names[which], at);
    memcpy(m->weight[which], weight, sizeof(float) * C * C);
    if (bias) memcpy(m->bias[which], bias, sizeof(float) * C);
    attn_pack_strips(m->packed[which], m->weight[which], C, C);
    return ATTN_OK;
}

/* ======================================================================== */
/* The passes                                                                */
/* ======================================================================== */

/* y (N, C) = x (N, C) @ W^T + b: one matmul over the full width. */
static void project(float *y, const float *x, const attn_mha *m, int which, int N) {
    const int C = m->C;
    attn_gemm_packed(y, C, x, C, m->packed[which], N, C, C, 1.0f);
    if (m->bias[which])
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++) y[(long)n * C + c] += m->bias[which][c];
}

/* heads (B, H, T, D) <- x (B, T, C) viewed as (B, T, H, D), transposed. */
void attn_split_heads(float *heads, const float *x, int B, int T, int H, int D) {
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++)
                memcpy(heads + (((long)b * H + h) * T + t) * D,
                       x + ((long)b * T + t) * H * D + (long)h * D, sizeof(float) * D);
}

/* x (B, T, C) <- heads (B, H, T, D) transposed to (B, T, H, D). */
void attn_merge_heads(float *x, const float *heads, int B, int T, int H, int D) {
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++)
                memcpy(x + ((long)b * T + t) * H * D + (long)h * D,
                       heads + (((long)b * H + h) * T + t) * D, sizeof(float) * D);
}

/* bugs heads-without-transpose and merge-without-transpose: dst <- src
 * (B*T*H*D floats) read straight through, a reshape with no transpose. */
static void reshape_only(float *dst, const float *src, int B, int T, int H, int D) {
    memcpy(dst, src, sizeof(float) * B * T * H * D);
}

/* What a break-it bug changes in the multi-head passes, resolved once. */
typedef void heads_fn(float *dst, const float *src, int B, int T, int H, int D);
typedef struct {
    heads_fn *split, *merge;
    int nan_expected;  /* the output may hold NaN: the bug's point */
    int stale_offset;  /* bug stale-cache-offset, see query_offset */
} mha_plan;

/* The plan for `bug`: attn_split_heads and attn_merge_heads, each swapped for
 * reshape_only by its transpose bug, and the nan_expected and stale_offset
 * flags. */
static mha_plan make_mha_plan(int bug) {
    mha_plan p = {attn_split_heads, attn_merge_heads, 0, 0};
    if (bug == ATTN_BUG_HEADS_WITHOUT_TRANSPOSE) p.split = reshape_only;
    if (bug == ATTN_BUG_MERGE_WITHOUT_TRANSPOSE) p.merge = reshape_only;
    if (bug == ATTN_BUG_NO_ALL_MASKED_GUARD) p.nan_expected = 1;
    if (bug == ATTN_BUG_STALE_CACHE_OFFSET) p.stale_offset = 1;
    return p;
}

/* The position of the first query, given q_offset and Tp cached keys.
 * bug stale-cache-offset: with a non-empty cache the decoder's position
 * counter is never advanced, so the new queries stand at 0 (their RoPE angle
 * and their causal position) while the keys continue from Tp as they should.
 * With no cached key (Tp = 0) the bug changes nothing. */
static int query_offset(const mha_plan *p, int q_offset, int Tp) {
    return p->stale_offset && Tp > 0 ? 0 : q_offset;
}

/* The same position, for a caller that shows where the queries stood. */
int attn_mha_query_position(int q_offset, int Tp, int bug) {
    if (q_offset < 0 || Tp < 0 || bug < 0 || bug >= ATTN_BUG_COUNT) return -1;
    const mha_plan plan = make_mha_plan(bug);
    return query_offset(&plan, q_offset, Tp);
}

/* full (B, H, Tp + Tn, D) <- past (B, H, Tp, D) then new (B, H, Tn, D). */
static void concat_time(float *full, const float *past, const float *fresh, int BH, int Tp, int Tn, int D) {
    for (int bh = 0; bh < BH; bh++) {
        float *dst = full + (long)bh * (Tp + Tn) * D;
        if (Tp) memcpy(dst, past + (long)bh * Tp * D, sizeof(float) * Tp * D);
        memcpy(dst + (long)Tp * D, fresh + (long)bh * Tn * D, sizeof(float) * Tn * D);
    }
}

/* Refuse x (B, H, T, D), computed from finite inputs, when it overflowed
 * float32: the fault is in the size of the inputs or weights, not a NaN. */
static int check_heads_overflow(const char *what, const float *x, int B, int H, int T, int D) {
    const long at = attn_find_non_finite(x, (long)B * H * T * D);
    if (at < 0) return ATTN_OK;
    return attn_fail(ATTN_OVERFLOW,
                     "%s overflows float32 at batch %ld, head %ld, token %ld, column %ld: "
                     "the inputs or weights are too large",
                     what, at / D / T / H, at / D / T % H, at / D % T, at % D);
}

/* The causal diagonal for attn_sdpa: key j is visible to query i when
 * k_offset + j <= q_offset + i, i.e. j <= i + (q_offset - k_offset).
 * Clamped to [-Tq, Tk]: beyond that every key (or none) is visible anyway,
 * and i + offset can no longer overflow an int for huge offsets. */
static int causal_diagonal(int q_offset, int k_offset, int Tq, int Tk) {
    const int diff = q_offset - k_offset; /* both are >= 0, so this fits */
    return diff > Tk ? Tk : diff < -Tq ? -Tq : diff;
}

/* What the forward hands to save_for_backward (defined with the backward). */
typedef struct {
    const float *query, *kv;                /* (B, Tq, C), (B, Tkn, C) or NULL */
    const float *q_heads, *k_heads, *v_heads; /* (B, H, T, D), after RoPE */
    const float *merged;                    /* (B, Tq, C) */
} mha_activations;
static int save_for_backward(attn_mha *m, const mha_activations *act, const attn_visibility *rule,
                             const uint8_t *query_padding_mask, const attn_dims *dims,
                             int used_cache, double q_pos, double k_pos, int bug);

/* ======================================================================== */
/* Forward                                                                   */
/* ======================================================================== */

/* out (B, Tq, C); probs (B, H, Tq, Tk) or NULL; query (B, Tq, C); kv (B, Tkn, C)
 * or NULL (self-attention, Tkn = Tq); cache NULL or past (B, H, Tp, D) and
 * new (B, H, Tk, D), Tk = Tp + Tkn; vis NULL or the rule by position. The
 * passes 1-8 of the file's header, in one scratch block. */
int attn_mha_forward(float *out, float *probs, attn_mha *m,
                     const float *query, const float *kv, int B, int Tq, int Tkn,
                     const attn_kv_cache *cache, const attn_mha_visibility *vis, int bug) {
    attn_clear_error();
    static const attn_kv_cache no_cache = {NULL, NULL, NULL, 0, NULL, NULL, NULL};
    static const attn_mha_visibility see_all = {{NULL, 0, 0, 0, 0}, NULL, NULL, 0, 0, 0};
    const attn_kv_cache *kc = cache ? cache : &no_cache;
    const attn_mha_visibility *mv = vis ? vis : &see_all;
    if (!m) return attn_fail(ATTN_MODULE_FREED, "the module has been freed");
    const int save = m->save_next; /* asked for this call only */
    m->save_next = 0;
    if (!out || !query) return attn_fail(ATTN_BAD_ARGUMENT, "out and query are required");
    if (B < 1) return attn_fail(ATTN_BAD_ARGUMENT, "query needs a batch of at least one sequence (B=%d)", B);
    if (Tq < 1) return attn_fail(ATTN_EMPTY_QUERY, "query needs at least one token (Tq=%d)", Tq);
    if (!kv) Tkn = Tq;
    if (Tkn < 1) return attn_fail(ATTN_BAD_ARGUMENT, "keyValue needs at least one token");
    const int Tp = kc->Tp;
    const uint8_t *past_kpm = kc->past_key_padding_mask, *new_kpm = mv->key_padding_mask;
    if (Tp < 0 || (Tp > 0 && (!kc->past_k || !kc->past_v || !past_kpm)))
        return attn_fail(ATTN_CACHE_MISMATCH, "cache of length %d is incomplete", Tp);
    if (mv->q_offset < 0 || mv->k_offset < 0)
        return attn_fail(ATTN_NEGATIVE_OFFSET, "position offsets must be non-negative (got %d, %d)", mv->q_offset, mv->k_offset);
    if (bug < 0 || bug >= ATTN_BUG_COUNT) return attn_fail(ATTN_BAD_ARGUMENT, "unknown bug %d", bug);
    const int C = m->C, H = m->H, D = m->D, Tk = Tp + Tkn;
    long at;
    if (Tp > 0 && ((at = attn_find_non_finite(kc->past_k, (long)B * H * Tp * D)) >= 0 ||
                   (at = attn_find_non_finite(kc->past_v, (long)B * H * Tp * D)) >= 0))
        return attn_fail(ATTN_NON_FINITE_INPUT, "the cache has a non-finite value at batch %ld, head %ld, token %ld",
                         at / D / Tp / H, at / D / Tp % H, at / D % Tp);
    if ((at = attn_find_non_finite(query, (long)B * Tq * C)) >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "query has a non-finite value at batch %ld, token %ld, feature %ld",
                         at / C / Tq, at / C % Tq, at % C);
    if (kv && (at = attn_find_non_finite(kv, (long)B * Tkn * C)) >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "keyValue has a non-finite value at batch %ld, token %ld, feature %ld",
                         at / C / Tkn, at / C % Tkn, at % C);

    const mha_plan plan = make_mha_plan(bug);
    const int q_offset = query_offset(&plan, mv->q_offset, Tp);

    /* Scratch, one block: projections, heads, full K/V, attention output,
     * and the key padding of the full K: O(T * C), never O(T^2). */
    const double fq = (double)B * Tq * C, fk = (double)B * Tkn * C, fall = (double)B * Tk * C;
    const double floats = 4 * fq + 4 * fk + 2 * fall;
    const double bytes = 4 * floats + (double)B * Tk;
    float *scratch = attn_alloc(bytes);
    if (!scratch) return ATTN_TOO_LARGE;
    float *q_proj = scratch;                        /* (B, Tq, C) */
    float *q_heads = q_proj + (long)fq;             /* (B, H, Tq, D) */
    float *attn_out = q_heads + (long)fq;           /* (B, H, Tq, D) */
    float *merged = attn_out + (long)fq;            /* (B, Tq, C) */
    float *k_proj = merged + (long)fq;              /* (B, Tkn, C) */
    float *v_proj = k_proj + (long)fk;              /* (B, Tkn, C) */
    float *k_new = v_proj + (long)fk;               /* (B, H, Tkn, D) */
    float *v_new = k_new + (long)fk;                /* (B, H, Tkn, D) */
    float *k_all = v_new + (long)fk;                /* (B, H, Tk, D) */
    float *v_all = k_all + (long)fall;              /* (B, H, Tk, D) */
    uint8_t *key_padding_mask = (uint8_t *)(v_all + (long)fall); /* (B, Tk) */
    int status = ATTN_OK;

    /* 1. project; 2. split heads */
    const float *source = kv ? kv : query;
    project(q_proj, query, m, 0, B * Tq);
    project(k_proj, source, m, 1, B * Tkn);
    project(v_proj, source, m, 2, B * Tkn);
    plan.split(q_heads, q_proj, B, Tq, H, D);
    plan.split(k_new, k_proj, B, Tkn, H, D);
    plan.split(v_new, v_proj, B, Tkn, H, D);

    /* 3. rope */
    if (m->rope) {
        attn_rope_rotate(q_heads, NULL, q_offset, B * H, Tq, D, ATTN_ROPE_BASE, 1);
        attn_rope_rotate(k_new, NULL, (double)mv->k_offset + Tp, B * H, Tkn, D, ATTN_ROPE_BASE, 1);
    }
    if ((status = check_heads_overflow("the query projection", q_heads, B, H, Tq, D)) ||
        (status = check_heads_overflow("the key projection", k_new, B, H, Tkn, D)) ||
        (status = check_heads_overflow("the value projection", v_new, B, H, Tkn, D)))
        goto done;

    /* 4. cache: full K and V, and which of their keys are real */
    concat_time(k_all, kc->past_k, k_new, B * H, Tp, Tkn, D);
    concat_time(v_all, kc->past_v, v_new, B * H, Tp, Tkn, D);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < Tk; j++)
            key_padding_mask[(long)b * Tk + j] = j < Tp ? past_kpm[(long)b * Tp + j] != 0
                                               : !new_kpm || new_kpm[(long)b * Tkn + (j - Tp)] != 0;

    /* 5. visibility: the mask, the key padding, and causal by position,
     * q_offset + i against k_offset + j */
    const attn_visibility rule = {mv->mask, key_padding_mask, mv->causal,
                                  causal_diagonal(q_offset, mv->k_offset, Tq, Tk)};

    /* 6. attend. The scale is 1/sqrt(D) rounded once, as lab.sdpa's default is. */
    const attn_dims dims = {B, H, Tq, Tk, D, D};
    status = attn_sdpa(attn_out, probs, NULL, q_heads, k_all, v_all, &rule, &dims,
                       (float)(1.0 / sqrt((double)D)), bug);
    if (status) goto done;

    /* 7. merge heads; 8. output projection, padded queries zeroed */
    plan.merge(merged, attn_out, B, Tq, H, D);
    project(out, merged, m, 3, B * Tq);
    if (!plan.nan_expected && (at = attn_find_non_finite(out, (long)B * Tq * C)) >= 0) {
        status = attn_fail(ATTN_OVERFLOW,
                           "the output projection overflows float32 at batch %ld, token %ld, feature %ld: "
                           "the weights are too large", at / C / Tq, at / C % Tq, at % C);
        goto done;
    }
    if (mv->query_padding_mask)
        for (long r = 0; r < (long)B * Tq; r++)
            if (!mv->query_padding_mask[r]) memset(out + r * C, 0, sizeof(float) * C);

    if (kc->new_k) memcpy(kc->new_k, k_all, sizeof(float) * (long)fall);
    if (kc->new_v) memcpy(kc->new_v, v_all, sizeof(float) * (long)fall);
    if (kc->new_key_padding_mask) memcpy(kc->new_key_padding_mask, key_padding_mask, (size_t)B * Tk);
    if (save) {
        const mha_activations act = {query, kv, q_heads, k_all, v_all, merged};
        status = save_for_backward(m, &act, &rule, mv->query_padding_mask, &dims,
                                   Tp > 0 || kc->new_k, q_offset, (double)mv->k_offset + Tp, bug);
    }
done:
    attn_free(scratch);
    return status;
}

/* ======================================================================== */
/* Backward                                                                  */
/* ======================================================================== */

/* backward, the forward's passes in reverse:
 *   8. project   dWo = g^T merged, dbo = sum of g, dmerged = g Wo
 *                (g = dout with padded query rows 0: their output was 0)
 *   7. merge     dmerged (B, T, C) -> (B, H, T, D)
 *   6. attend    attn_sdpa_backward
 *   3. rope      rotate dq and dk back by the same angles
 *   2. split     (B, H, T, D) -> (B, T, C)
 *   1. project   dW = dY^T x, db = sum of dY, dx += dY W   for q, k, v
 * The cache and visibility passes (4, 5) have nothing to undo: a forward
 * that used the cache is refused, and the rule is saved as it was applied.
 */

/* What backward needs from the forward, kept in one block. The rule's mask
 * and paddings point at copies inside the block. */
struct mha_saved {
    attn_dims dims;        /* B, H, Tq, Tk (= Tkn, no cache), D, D */
    int used_cache;        /* the forward read or wrote a KV cache: no backward */
    int bug;
    double q_pos, k_pos;   /* RoPE position of the first query and first key */
    attn_visibility rule;  /* as attn_sdpa saw it */
    float *query;          /* (B, Tq, C) */
    float *kv;             /* (B, Tk, C), or NULL for self-attention */
    float *q_heads;        /* (B, H, Tq, D), after RoPE */
    float *k_heads;        /* (B, H, Tk, D), after RoPE */
    float *v_heads;        /* (B, H, Tk, D) */
    float *merged;         /* (B, Tq, C): the output projection's input */
    uint8_t *query_padding_mask; /* (B, Tq), or NULL */
};

/* Release what a forward saved (one block); NULL-safe. */
static void free_saved(mha_saved *saved) { attn_free(saved); }

/* Bytes of an allowed mask broadcast to (B, H, Tq, Tk) by its strides. */
static double mask_extent(const attn_mask *mask, const attn_dims *d) {
    if (!mask->data) return 0;
    return 1.0 + (double)(d->B - 1) * mask->sb + (double)(d->H - 1) * mask->sh +
           (double)(d->Tq - 1) * mask->sq + (double)(d->Tk - 1) * mask->sk;
}

/* Keep copies of the forward's inputs, activations and rule in m->saved,
 * replacing what an earlier forward kept. A forward that used the cache
 * keeps only that fact. */
static int save_for_backward(attn_mha *m, const mha_activations *act, const attn_visibility *rule,
                             const uint8_t *query_padding_mask, const attn_dims *dims,
                             int used_cache, double q_pos, double k_pos, int bug) {
    const int C = m->C, B = dims->B, Tq = dims->Tq, Tk = dims->Tk;
    const double fq = (double)B * Tq * C, fk = used_cache ? 0 : (double)B * Tk * C;
    const double mask_bytes = used_cache ? 0 : mask_extent(&rule->mask, dims);
    const double bytes = sizeof(mha_saved) + 4 * (3 * fq + 2 * fk + (act->kv ? fk : 0)) + mask_bytes +
                         (used_cache ? 0 : (double)B * Tk) + (query_padding_mask ? (double)B * Tq : 0);
    mha_saved *sv = attn_alloc(bytes);
    if (!sv) return ATTN_TOO_LARGE;
    memset(sv, 0, sizeof *sv);
    sv->dims = *dims;
    sv->used_cache = used_cache;
    sv->bug = bug;
    sv->q_pos = q_pos;
    sv->k_pos = k_pos;
    free_saved(m->saved);
    m->saved = sv;
    if (used_cache) return ATTN_OK;
    float *f = (float *)(sv + 1);
    const struct { float **to; const float *from; double n; } tensors[6] = {
        {&sv->query, act->query, fq}, {&sv->q_heads, act->q_heads, fq}, {&sv->merged, act->merged, fq},
        {&sv->k_heads, act->k_heads, fk}, {&sv->v_heads, act->v_heads, fk}, {&sv->kv, act->kv, act->kv ? fk : 0}};
    for (int t = 0; t < 6; t++) {
        if (!tensors[t].from) continue;
        *tensors[t].to = f;
        memcpy(f, tensors[t].from, sizeof(float) * (size_t)tensors[t].n);
        f += (long)tensors[t].n;
    }
    uint8_t *bytes_at = (uint8_t *)f;
    sv->rule = *rule;
    if (mask_bytes > 0) {
        memcpy(bytes_at, rule->mask.data, (size_t)mask_bytes);
        sv->rule.mask.data = bytes_at;
        bytes_at += (long)mask_bytes;
    }
    memcpy(bytes_at, rule->key_padding_mask, (size_t)B * Tk); /* the forward always builds it */
    sv->rule.key_padding_mask = bytes_at;
    bytes_at += (long)B * Tk;
    if (query_padding_mask) {
        memcpy(bytes_at, query_padding_mask, (size_t)B * Tq);
        sv->query_padding_mask = bytes_at;
    }
    return ATTN_OK;
}

/* Whether the next attn_mha_forward on m saves for backward (on != 0). */
void attn_mha_save_next(attn_mha *m, int on) {
    if (m) m->save_next = on != 0;
}

/* dw (C, C) = dy^T x, db (C) = column sums of dy (or NULL); dy, x (N, C).
 * dx (N, C) = dy W, or += when accumulate; tmp (N, C) scratch. */
static void project_backward(float *dx, float *dw, float *db, float *tmp, const float *dy,
                             const float *x, const attn_mha *m, int which, int N, int accumulate) {
    const int C = m->C;
    attn_gemm_tn(dw, C, dy, C, x, C, C, C, N, 1.0f);
    if (db) {
        for (int c = 0; c < C; c++) db[c] = 0.0f;
        for (long n = 0; n < N; n++)
            for (int c = 0; c < C; c++) db[c] += dy[n * C + c];
    }
    float *target = accumulate ? tmp : dx;
    attn_gemm(target, C, dy, C, m->weight[which], C, N, C, C, 1.0f);
    if (accumulate)
        for (long i = 0; i < (long)N * C; i++) dx[i] += tmp[i];
}

/* dquery (B, Tq, C); dkv (B, Tk, C) or NULL for self-attention; dweight
 * (4, C, C) and dbias (4, C) or NULL, for q, k, v, out; dout (B, Tq, C) of
 * the saved forward. The forward's passes in reverse, as listed above. */
int attn_mha_backward(attn_mha *m, float *dquery, float *dkv, float *dweight, float *dbias,
                      const float *dout) {
    attn_clear_error();
    if (!m) return attn_fail(ATTN_MODULE_FREED, "the module has been freed");
    const mha_saved *sv = m->saved;
    if (!sv) return attn_fail(ATTN_NO_SAVED_FORWARD, "no saved forward: call forward with saveForBackward first");
    if (sv->used_cache)
        return attn_fail(ATTN_BACKWARD_THROUGH_CACHE,
                         "the saved forward used the KV cache; backward does not go through the cache");
    if (!dquery || !dweight || !dout || (sv->kv && !dkv))
        return attn_fail(ATTN_BAD_ARGUMENT, "dquery, dweight, dout (and dkv for cross-attention) are required");
    const int C = m->C, H = m->H, D = m->D, B = sv->dims.B, Tq = sv->dims.Tq, Tk = sv->dims.Tk;
    long at = attn_find_non_finite(dout, (long)B * Tq * C);
    if (at >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "dOutput has a non-finite value at batch %ld, token %ld, feature %ld",
                         at / C / Tq, at / C % Tq, at % C);
    /* The transposes of the forward's split and merge (a reshape's is a reshape). */
    const mha_plan plan = make_mha_plan(sv->bug);
    heads_fn *split_back = plan.split == attn_split_heads ? attn_merge_heads : reshape_only;
    heads_fn *merge_back = plan.merge == attn_merge_heads ? attn_split_heads : reshape_only;

    /* Scratch, one block. */
    const double fq = (double)B * Tq * C, fk = (double)B * Tk * C;
    float *scratch = attn_alloc(4.0 * (5 * fq + 6 * fk + (fq > fk ? fq : fk)));
    if (!scratch) return ATTN_TOO_LARGE;
    float *g = scratch;                   /* (B, Tq, C) */
    float *d_merged = g + (long)fq;       /* (B, Tq, C) */
    float *d_attn = d_merged + (long)fq;  /* (B, H, Tq, D) */
    float *dq_heads = d_attn + (long)fq;  /* (B, H, Tq, D) */
    float *dq_proj = dq_heads + (long)fq; /* (B, Tq, C) */
    float *dk_heads = dq_proj + (long)fq; /* (B, H, Tk, D) */
    float *dv_heads = dk_heads + (long)fk;
    float *dk_proj = dv_heads + (long)fk; /* (B, Tk, C) */
    float *dv_proj = dk_proj + (long)fk;
    float *dsource = dv_proj + (long)fk;  /* (B, Tk, C): dkv, or dquery's K and V part */
    float *tmp = dsource + (long)fk;      /* (max(B Tq, B Tk), C) */
    float *db = m->bias[0] && dbias ? dbias : NULL;
    const long CC = (long)C * C;
    int status = ATTN_OK;

    /* 8. output projection; padded queries had their output set to 0 */
    memcpy(g, dout, sizeof(float) * (long)fq);
    if (sv->query_padding_mask)
        for (long r = 0; r < (long)B * Tq; r++)
            if (!sv->query_padding_mask[r]) memset(g + r * C, 0, sizeof(float) * C);
    project_backward(d_merged, dweight + 3 * CC, db ? db + 3 * C : NULL, tmp, g, sv->merged, m, 3, B * Tq, 0);
    /* Finite dOutput and weights can already overflow float32 here; the
     * attention backward below would take that for a non-finite dOutput. */
    if (attn_find_non_finite(d_merged, (long)fq) >= 0) {
        status = attn_fail(ATTN_OVERFLOW, "the gradients overflow float32: dOutput or the weights are too large");
        goto done;
    }

    /* 7. merge heads, backward */
    merge_back(d_attn, d_merged, B, Tq, H, D);

    /* 6. attend */
    status = attn_sdpa_backward(dq_heads, dk_heads, dv_heads, NULL, NULL, d_attn, NULL,
                                sv->q_heads, sv->k_heads, sv->v_heads, &sv->rule, &sv->dims,
                                (float)(1.0 / sqrt((double)D)), sv->bug);
    if (status) goto done;

    /* 3. rope, backward: rotate back */
    if (m->rope) {
        attn_rope_rotate(dq_heads, NULL, sv->q_pos, B * H, Tq, D, ATTN_ROPE_BASE, -1);
        attn_rope_rotate(dk_heads, NULL, sv->k_pos, B * H, Tk, D, ATTN_ROPE_BASE, -1);
    }

    /* 2. split heads, backward */
    split_back(dq_proj, dq_heads, B, Tq, H, D);
    split_back(dk_proj, dk_heads, B, Tk, H, D);
    split_back(dv_proj, dv_heads, B, Tk, H, D);

    /* 1. input projections; in self-attention query feeds all three */
    const float *source = sv->kv ? sv->kv : sv->query;
    project_backward(dquery, dweight, db, tmp, dq_proj, sv->query, m, 0, B * Tq, 0);
    project_backward(dsource, dweight + CC, db ? db + C : NULL, tmp, dk_proj, source, m, 1, B * Tk, 0);
    project_backward(dsource, dweight + 2 * CC, db ? db + 2 * C : NULL, tmp, dv_proj, source, m, 2, B * Tk, 1);
    if (sv->kv) memcpy(dkv, dsource, sizeof(float) * (long)fk);
    else
        for (long i = 0; i < (long)fq; i++) dquery[i] += dsource[i];

    /* Finite inputs can still overflow float32 in the products. */
    const float *grads[4] = {dquery, sv->kv ? dkv : NULL, dweight, db};
    const long sizes[4] = {(long)fq, (long)fk, 4 * CC, 4L * C};
    for (int t = 0; t < 4 && !plan.nan_expected; t++)
        if (grads[t] && attn_find_non_finite(grads[t], sizes[t]) >= 0) {
            status = attn_fail(ATTN_OVERFLOW, "the gradients overflow float32: dOutput or the weights are too large");
            break;
        }
done:
    attn_free(scratch);
    return status;
}

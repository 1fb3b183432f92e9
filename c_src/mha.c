/* mha.c: multi-head attention on top of attn_sdpa.
 *
 * forward, in numbered passes:
 *   1. project   Q, K, V = x W^T + b          one matmul each, full width
 *   2. split     (B, T, C) -> (B, H, T, D)    reshape, then transpose
 *   3. rope      rotate q and k by position   (optional)
 *   4. cache     K, V <- [past, new] along T
 *   5. mask      key padding AND attention mask, per (b, h, i, j)
 *   6. attend    attn_sdpa per (b, h), with the causal rule by position
 *   7. merge     (B, H, T, D) -> (B, T, C)    transpose, then reshape
 *   8. project   out = merged Wo^T + bo, padded queries zeroed
 *
 * Weight init: every weight and bias entry is uniform in
 * [-1/sqrt(C), 1/sqrt(C)), the bound nn.Linear uses by default, drawn from the
 * seed in the order q, k, v, out; for each, the weight row by row, then the bias.
 *
 * RoPE (rope.c) uses the split-halves pairing: in a head of width D, entry
 * d < D/2 is rotated together with entry d + D/2 by the angle
 * pos * 10000^(-2d/D).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "kernels.h"

struct attn_mha {
    int C;            /* d_model */
    int H;            /* heads */
    int D;            /* head width, C / H */
    int rope;         /* rotate q and k by position */
    float *weight[4]; /* [C, C] each, (out, in), for q, k, v, out */
    float *packed[4]; /* [C, C] each, weight in strips for attn_gemm_packed */
    float *bias[4];   /* [C] each, or NULL without bias */
};

/* ======================================================================== */
/* Life cycle and parameters                                                 */
/* ======================================================================== */

attn_mha *attn_mha_create(int d_model, int num_heads, int bias, int rope, uint32_t seed) {
    attn_clear_error();
    if (d_model < 1 || num_heads < 1) {
        attn_fail(ATTN_BAD_ARGUMENT, "dModel and numHeads must be positive (got %d, %d)", d_model, num_heads);
        return NULL;
    }
    if (d_model % num_heads) {
        attn_fail(ATTN_BAD_ARGUMENT, "dModel %d is not divisible by numHeads %d", d_model, num_heads);
        return NULL;
    }
    if (rope && (d_model / num_heads) % 2) {
        attn_fail(ATTN_BAD_ARGUMENT, "RoPE needs an even head width; dModel/numHeads = %d", d_model / num_heads);
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
    if (!m) return attn_fail(ATTN_BAD_ARGUMENT, "the module has been freed");
    if (which < 0 || which > 3 || !weight) return attn_fail(ATTN_BAD_ARGUMENT, "bad projection %d", which);
    static const char *names[4] = {"qProj", "kProj", "vProj", "outProj"};
    const int C = m->C;
    long at = attn_find_non_finite(weight, (long)C * C);
    if (at >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "%s.weight has a non-finite value at [%ld, %ld]",
                         names[which], at / C, at % C);
    if (bias && m->bias[which] && (at = attn_find_non_finite(bias, C)) >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "%s.bias has a non-finite value at [%ld]", names[which], at);
    memcpy(m->weight[which], weight, sizeof(float) * C * C);
    if (bias && m->bias[which]) memcpy(m->bias[which], bias, sizeof(float) * C);
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

/* heads (B, H, T, D) <- x (B, T, C) viewed as (B, T, H, D), transposed.
 * bug: heads-without-transpose reads (B, T, C) straight as (B, H, T, D). */
static void split_heads(float *heads, const float *x, int B, int T, int H, int D, int bug) {
    if (bug == ATTN_BUG_HEADS_WITHOUT_TRANSPOSE) {
        memcpy(heads, x, sizeof(float) * B * T * H * D);
        return;
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++)
                memcpy(heads + (((long)b * H + h) * T + t) * D,
                       x + ((long)b * T + t) * H * D + (long)h * D, sizeof(float) * D);
}

/* x (B, T, C) <- heads (B, H, T, D) transposed to (B, T, H, D).
 * bug: merge-without-transpose reads (B, H, T, D) straight as (B, T, C). */
static void merge_heads(float *x, const float *heads, int B, int T, int H, int D, int bug) {
    if (bug == ATTN_BUG_MERGE_WITHOUT_TRANSPOSE) {
        memcpy(x, heads, sizeof(float) * B * T * H * D);
        return;
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++)
                memcpy(x + ((long)b * T + t) * H * D + (long)h * D,
                       heads + (((long)b * H + h) * T + t) * D, sizeof(float) * D);
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

/* ======================================================================== */
/* Forward                                                                   */
/* ======================================================================== */

int attn_mha_forward(attn_mha *m, float *out, float *weights,
                     const float *query, const float *kv,
                     int B, int Tq, int Tkn,
                     const float *past_k, const float *past_v,
                     const uint8_t *past_valid, int Tp,
                     float *new_k, float *new_v, uint8_t *new_valid,
                     const uint8_t *key_pad, const uint8_t *query_pad,
                     const uint8_t *mask, int msb, int msh, int msq, int msk,
                     int causal, int q_offset, int k_offset, int bug) {
    attn_clear_error();
    if (!m) return attn_fail(ATTN_BAD_ARGUMENT, "the module has been freed");
    if (!out || !query) return attn_fail(ATTN_BAD_ARGUMENT, "out and query are required");
    if (B < 1 || Tq < 1) return attn_fail(ATTN_BAD_ARGUMENT, "query needs at least one token (B=%d, Tq=%d)", B, Tq);
    if (!kv) Tkn = Tq;
    if (Tkn < 1) return attn_fail(ATTN_BAD_ARGUMENT, "keyValue needs at least one token");
    if (Tp < 0 || (Tp > 0 && (!past_k || !past_v || !past_valid)))
        return attn_fail(ATTN_BAD_ARGUMENT, "cache of length %d is incomplete", Tp);
    if (q_offset < 0 || k_offset < 0)
        return attn_fail(ATTN_BAD_ARGUMENT, "position offsets must be non-negative (got %d, %d)", q_offset, k_offset);
    if (bug < 0 || bug >= ATTN_BUG_COUNT) return attn_fail(ATTN_BAD_ARGUMENT, "unknown bug %d", bug);
    const int C = m->C, H = m->H, D = m->D, Tk = Tp + Tkn;
    long at;
    if (Tp > 0 && ((at = attn_find_non_finite(past_k, (long)B * H * Tp * D)) >= 0 ||
                   (at = attn_find_non_finite(past_v, (long)B * H * Tp * D)) >= 0))
        return attn_fail(ATTN_NON_FINITE_INPUT, "the cache has a non-finite value at batch %ld, head %ld, token %ld",
                         at / D / Tp / H, at / D / Tp % H, at / D % Tp);
    if ((at = attn_find_non_finite(query, (long)B * Tq * C)) >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "query has a non-finite value at batch %ld, token %ld, feature %ld",
                         at / C / Tq, at / C % Tq, at % C);
    if (kv && (at = attn_find_non_finite(kv, (long)B * Tkn * C)) >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "keyValue has a non-finite value at batch %ld, token %ld, feature %ld",
                         at / C / Tkn, at / C % Tkn, at % C);

    /* Scratch, one block: projections, heads, full K/V, attention output. */
    const double fq = (double)B * Tq * C, fk = (double)B * Tkn * C, fall = (double)B * Tk * C;
    const double floats = 4 * fq + 4 * fk + 2 * fall;
    const double bytes = 4 * floats + (double)B * H * Tq * Tk;
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
    uint8_t *allowed = (uint8_t *)(v_all + (long)fall); /* (B, H, Tq, Tk) */
    int status = ATTN_OK;

    /* 1. project; 2. split heads */
    const float *source = kv ? kv : query;
    project(q_proj, query, m, 0, B * Tq);
    project(k_proj, source, m, 1, B * Tkn);
    project(v_proj, source, m, 2, B * Tkn);
    split_heads(q_heads, q_proj, B, Tq, H, D, bug);
    split_heads(k_new, k_proj, B, Tkn, H, D, bug);
    split_heads(v_new, v_proj, B, Tkn, H, D, bug);

    /* 3. rope */
    if (m->rope) {
        attn_rope_rotate(q_heads, NULL, q_offset, B * H, Tq, D, 10000.0);
        attn_rope_rotate(k_new, NULL, (double)k_offset + Tp, B * H, Tkn, D, 10000.0);
    }
    if ((status = check_heads_overflow("the query projection", q_heads, B, H, Tq, D)) ||
        (status = check_heads_overflow("the key projection", k_new, B, H, Tkn, D)) ||
        (status = check_heads_overflow("the value projection", v_new, B, H, Tkn, D)))
        goto done;

    /* 4. cache: full K and V */
    concat_time(k_all, past_k, k_new, B * H, Tp, Tkn, D);
    concat_time(v_all, past_v, v_new, B * H, Tp, Tkn, D);

    /* 5. mask: allowed[b, h, i, j] = key is real AND attention mask */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++) {
                uint8_t *row = allowed + (((long)b * H + h) * Tq + i) * Tk;
                for (int j = 0; j < Tk; j++) {
                    const int real = j < Tp ? past_valid[(long)b * Tp + j] != 0
                                   : !key_pad || key_pad[(long)b * Tkn + (j - Tp)] != 0;
                    const int ok = !mask || mask[(long)b * msb + (long)h * msh + (long)i * msq + (long)j * msk] != 0;
                    row[j] = (uint8_t)(real && ok);
                }
            }

    /* 6. attend: causal compares positions, q_offset + i against k_offset + j.
     * The scale is 1/sqrt(D) rounded once, as lab.sdpa's default is. */
    const attn_mask full = {allowed, (long)H * Tq * Tk, (long)Tq * Tk, Tk, 1};
    status = attn_sdpa(attn_out, weights, NULL, q_heads, k_all, v_all, full, B, H, Tq, Tk, D, D,
                       (float)(1.0 / sqrt((double)D)), causal, causal_diagonal(q_offset, k_offset, Tq, Tk), bug);
    if (status) goto done;

    /* 7. merge heads; 8. output projection, padded queries zeroed */
    merge_heads(merged, attn_out, B, Tq, H, D, bug);
    project(out, merged, m, 3, B * Tq);
    /* The no-all-masked-guard bug is meant to show its NaN, so let it through. */
    if (bug != ATTN_BUG_NO_ALL_MASKED_GUARD && (at = attn_find_non_finite(out, (long)B * Tq * C)) >= 0) {
        status = attn_fail(ATTN_OVERFLOW,
                           "the output projection overflows float32 at batch %ld, token %ld, feature %ld: "
                           "the weights are too large", at / C / Tq, at / C % Tq, at % C);
        goto done;
    }
    if (query_pad)
        for (long r = 0; r < (long)B * Tq; r++)
            if (!query_pad[r]) memset(out + r * C, 0, sizeof(float) * C);

    if (new_k) memcpy(new_k, k_all, sizeof(float) * (long)fall);
    if (new_v) memcpy(new_v, v_all, sizeof(float) * (long)fall);
    if (new_valid)
        for (int b = 0; b < B; b++)
            for (int j = 0; j < Tk; j++)
                new_valid[(long)b * Tk + j] = j < Tp ? past_valid[(long)b * Tp + j] != 0
                                            : !key_pad || key_pad[(long)b * Tkn + (j - Tp)] != 0;
done:
    attn_free(scratch);
    return status;
}

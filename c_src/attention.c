/* attention.c: scaled dot-product attention, errors, memory shared with JS.
 *
 * The forward pass, for each (batch, head), in numbered passes:
 *   1. pack K^T once per head, in strips of 8 keys
 *   2. scores  = scale * Q K^T           (block of query rows at a time)
 *   3. mask    : blocked logits -> -INFINITY; refuse rows with no allowed key
 *   4. softmax over keys, stable
 *   5. mix     : output = weights V
 * The break-it bugs are switches on these passes, marked "bug:" below.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "kernels.h"

/* ======================================================================== */
/* Errors                                                                    */
/* ======================================================================== */

static char last_error[512];
static int last_status;

const char *attn_last_error(void) { return last_error; }
int attn_last_status(void) { return last_status; }

void attn_clear_error(void) {
    last_error[0] = '\0';
    last_status = ATTN_OK;
}

int attn_fail(int status, const char *fmt, ...) {
    last_status = status;
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, args);
    va_end(args);
    return status;
}

/* x (n): index of the first NaN or +-Infinity, or -1. */
long attn_find_non_finite(const float *x, long n) {
    for (long i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return -1;
}

/* Refuse a tensor x (B, H, T, D) that holds NaN or +-Infinity, naming where. */
static int check_finite(const char *name, const float *x, int B, int H, int T, int D) {
    const long at = attn_find_non_finite(x, (long)B * H * T * D);
    if (at < 0) return ATTN_OK;
    const long d = at % D, t = at / D % T, h = at / D / T % H, b = at / D / T / H;
    return attn_fail(ATTN_NON_FINITE_INPUT,
                     "%s has a non-finite value (%s) at batch %ld, head %ld, row %ld, column %ld",
                     name, isnan(x[at]) ? "NaN" : (x[at] > 0 ? "Infinity" : "-Infinity"),
                     b, h, t, d);
}

/* ======================================================================== */
/* Memory shared with JS                                                     */
/* ======================================================================== */

static void *workspace;
static double workspace_bytes;

/* Refuse a size before any allocation is tried. */
static int check_request(double bytes) {
    if (!(bytes >= 0)) return attn_fail(ATTN_BAD_ARGUMENT, "requested size is not a number");
    if (bytes > ATTN_MAX_REQUEST_BYTES)
        return attn_fail(ATTN_TOO_LARGE,
                         "this needs %.0f MiB of memory; the limit is %.0f MiB",
                         bytes / 1048576.0, ATTN_MAX_REQUEST_BYTES / 1048576.0);
    return ATTN_OK;
}

void *attn_alloc(double bytes) {
    if (check_request(bytes)) return NULL;
    void *p = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (!p) attn_fail(ATTN_TOO_LARGE, "out of memory allocating %.0f MiB", bytes / 1048576.0);
    return p;
}

void attn_free(void *p) { free(p); }

void *attn_workspace(double bytes) {
    attn_clear_error();
    if (check_request(bytes)) return NULL;
    if (workspace && bytes <= workspace_bytes) return workspace;
    free(workspace);
    workspace_bytes = 0;
    /* Round up to 64 KiB so that slowly growing requests reuse the buffer. */
    const double rounded = ceil((bytes > 0 ? bytes : 1) / 65536.0) * 65536.0;
    workspace = attn_alloc(rounded);
    if (workspace) workspace_bytes = rounded;
    return workspace;
}

/* ======================================================================== */
/* Which keys a query may see                                                */
/* ======================================================================== */

enum { CAUSAL_NONE = 0, CAUSAL_LOWER = 1, CAUSAL_UPPER = 2 };

/* The visibility rule of one call: the allowed mask, the causal triangle and,
 * only for the inverted-mask bug, a flag that reads the mask upside down. */
typedef struct {
    attn_mask mask;
    int causal;        /* CAUSAL_NONE, CAUSAL_LOWER or (bug) CAUSAL_UPPER */
    int causal_offset; /* the diagonal: key j vs query i + causal_offset */
    int invert_mask;
} visibility;

/* Whether query i may attend to key j in head (b, h) under the rule. */
static int is_allowed(const visibility *vis, int b, int h, int i, int j) {
    if (vis->causal == CAUSAL_LOWER && j > i + vis->causal_offset) return 0;
    if (vis->causal == CAUSAL_UPPER && j < i + vis->causal_offset) return 0;
    if (!vis->mask.data) return 1;
    const attn_mask *m = &vis->mask;
    const int bit = m->data[b * m->sb + h * m->sh + i * m->sq + j * m->sk] != 0;
    return vis->invert_mask ? !bit : bit;
}

/* The correct rule for a call, before any bug touches it. */
static visibility correct_visibility(attn_mask mask, int causal, int causal_offset) {
    visibility vis = {mask, causal ? CAUSAL_LOWER : CAUSAL_NONE, causal_offset, 0};
    return vis;
}

/* ======================================================================== */
/* Scaled dot-product attention                                              */
/* ======================================================================== */

/* Refuse scores that overflowed float32 (q and k too large for the scale). */
static int check_scores_finite(const float *s, int b, int h, int i0, int n, int Tk) {
    const long at = attn_find_non_finite(s, (long)n * Tk);
    if (at < 0) return ATTN_OK;
    return attn_fail(ATTN_OVERFLOW,
                     "scores overflow float32 at batch %d, head %d, query %ld, key %ld: "
                     "q and k are too large for this scale",
                     b, h, i0 + at / Tk, at % Tk);
}

/* s (n, Tk): the scores of query rows i0..i0+n-1 of head (b, h).
 * Blocked logits become -INFINITY. Refuses a row with no allowed key (unless
 * `guard` is 0) and scores that overflowed float32.
 * bug: mask-after-softmax and mask-output pass mask_logits = 0, which checks
 * the rows but leaves the blocked logits in. */
static int mask_rows(float *s, const visibility *vis, int b, int h, int i0, int n, int Tk,
                     int mask_logits, int guard) {
    int status = check_scores_finite(s, b, h, i0, n, Tk);
    if (status || (!vis->mask.data && vis->causal == CAUSAL_NONE)) return status; /* all allowed */
    for (int r = 0; r < n; r++) {
        float *s_r = s + (long)r * Tk;
        int allowed_count = 0;
        for (int j = 0; j < Tk; j++) {
            if (is_allowed(vis, b, h, i0 + r, j)) allowed_count++;
            else if (mask_logits) s_r[j] = -INFINITY;
        }
        if (guard && allowed_count == 0)
            return attn_fail(ATTN_ALL_MASKED_ROW,
                             "query row has no allowed key (batch %d, head %d, query %d): "
                             "every query needs at least one key it may attend to",
                             b, h, i0 + r);
    }
    return ATTN_OK;
}

/* bug: softmax-over-queries. s (Tq, Tk) <- each column normalised over
 * queries, so columns sum to 1 instead of rows. */
static void softmax_columns(float *s, int Tq, int Tk) {
    for (int j = 0; j < Tk; j++) {
        float max = -INFINITY, sum = 0.0f;
        for (int i = 0; i < Tq; i++) max = s[(long)i * Tk + j] > max ? s[(long)i * Tk + j] : max;
        for (int i = 0; i < Tq; i++) sum += (s[(long)i * Tk + j] = expf(s[(long)i * Tk + j] - max));
        for (int i = 0; i < Tq; i++) s[(long)i * Tk + j] /= sum;
    }
}

int attn_sdpa(float *out, float *weights, float *scores,
              const float *q, const float *k, const float *v,
              attn_mask mask, int B, int H, int Tq, int Tk, int dk, int dv,
              float scale, int causal, int causal_offset, int bug) {
    attn_clear_error();

    /* Arguments. */
    if (!out || !q || !k || !v) return attn_fail(ATTN_BAD_ARGUMENT, "out, q, k and v are required");
    if (B < 1 || H < 1 || Tq < 1 || Tk < 1 || dk < 1 || dv < 1)
        return attn_fail(ATTN_BAD_ARGUMENT,
                         "dims must be positive: B=%d H=%d Tq=%d Tk=%d dk=%d dv=%d",
                         B, H, Tq, Tk, dk, dv);
    if (bug < 0 || bug >= ATTN_BUG_COUNT) return attn_fail(ATTN_BAD_ARGUMENT, "unknown bug %d", bug);
    if (!isfinite(scale)) return attn_fail(ATTN_NON_FINITE_INPUT, "scale is not finite");
    const double bh_count = (double)B * H;
    const double largest = fmax(fmax(bh_count * Tq * dk, bh_count * Tk * dk),
                                fmax(bh_count * Tk * dv, bh_count * Tq * (double)Tk));
    if (check_request(4.0 * largest)) return ATTN_TOO_LARGE;
    int status;
    if ((status = check_finite("q", q, B, H, Tq, dk))) return status;
    if ((status = check_finite("k", k, B, H, Tk, dk))) return status;
    if ((status = check_finite("v", v, B, H, Tk, dv))) return status;

    /* The visibility rule, and the bugs that change it or the scale. */
    visibility vis = correct_visibility(mask, causal, causal_offset);
    if (bug == ATTN_BUG_NO_CAUSAL_MASK) vis.causal = CAUSAL_NONE;
    if (bug == ATTN_BUG_CAUSAL_UPPER && causal) vis.causal = CAUSAL_UPPER;
    if (bug == ATTN_BUG_INVERTED_MASK) vis.invert_mask = 1;
    if (bug == ATTN_BUG_PADDING_ON_QUERIES) {
        if (Tq != Tk)
            return attn_fail(ATTN_BAD_ARGUMENT, "bug padding-on-queries needs Tq == Tk (got %d, %d)", Tq, Tk);
        vis.mask.sq = mask.sk; /* a key-padding mask now blocks query rows */
        vis.mask.sk = mask.sq;
    }
    if (bug == ATTN_BUG_MASK_OUTPUT && dv != Tk)
        return attn_fail(ATTN_BAD_ARGUMENT,
                         "bug mask-output masks the (Tq, dv) output with the (Tq, Tk) mask, "
                         "so it needs dv == Tk (got dv=%d, Tk=%d)", dv, Tk);
    if (bug == ATTN_BUG_NO_SCALE) scale = 1.0f;
    if (bug == ATTN_BUG_SCALE_BY_DK) scale = 1.0f / (float)dk;
    const int mask_logits = bug != ATTN_BUG_MASK_AFTER_SOFTMAX && bug != ATTN_BUG_MASK_OUTPUT;
    /* padding-on-queries blanks the rows it blocks instead of refusing them */
    const int guard = bug != ATTN_BUG_NO_ALL_MASKED_GUARD && bug != ATTN_BUG_PADDING_ON_QUERIES;
    /* the two bugs whose NaN is part of the lesson */
    const int nan_expected = bug == ATTN_BUG_NO_ALL_MASKED_GUARD || bug == ATTN_BUG_SOFTMAX_OVER_QUERIES;

    /* Query rows go 4 at a time, so a block's scores stay in cache; a bug
     * that normalises over queries needs the whole (Tq, Tk) matrix at once.
     * Scratch: K^T for one head, plus the score rows when weights are not
     * kept (kept weights are written in place). */
    const int block = bug == ATTN_BUG_SOFTMAX_OVER_QUERIES ? Tq : 4;
    const double scratch_floats = (double)dk * Tk + (weights ? 0.0 : (double)block * Tk);
    float *kt = attn_alloc(4.0 * scratch_floats);
    if (!kt) return ATTN_TOO_LARGE;
    float *s_scratch = kt + (long)dk * Tk;

    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const long bh = (long)b * H + h;
            const float *q_bh = q + bh * Tq * dk;  /* (Tq, dk) */
            const float *k_bh = k + bh * Tk * dk;  /* (Tk, dk) */
            const float *v_bh = v + bh * Tk * dv;  /* (Tk, dv) */
            float *out_bh = out + bh * Tq * dv;    /* (Tq, dv) */

            /* 1. pack K^T: kt holds strips of (dk, 8) */
            attn_pack_strips(kt, k_bh, Tk, dk);

            for (int i0 = 0; i0 < Tq; i0 += block) {
                const int n = Tq - i0 < block ? Tq - i0 : block;
                float *s = weights ? weights + (bh * Tq + i0) * Tk : s_scratch;  /* (n, Tk) */

                /* 2. scores = scale * q k^T, one strip of keys at a time */
                attn_gemm_packed(s, Tk, q_bh + (long)i0 * dk, dk, kt, n, Tk, dk, scale);
                if (scores) memcpy(scores + (bh * Tq + i0) * Tk, s, sizeof(float) * n * Tk);

                /* 3. mask the logits */
                status = mask_rows(s, &vis, b, h, i0, n, Tk, mask_logits, guard);
                if (status) goto done;

                /* 4. softmax over keys */
                if (bug == ATTN_BUG_SOFTMAX_OVER_QUERIES) softmax_columns(s, n, Tk);
                else attn_softmax_rows(s, Tk, n, Tk);
                if (bug == ATTN_BUG_MASK_AFTER_SOFTMAX) /* zero blocked weights, too late */
                    for (int r = 0; r < n; r++)
                        for (int j = 0; j < Tk; j++)
                            if (!is_allowed(&vis, b, h, i0 + r, j)) s[(long)r * Tk + j] = 0.0f;
                if (bug == ATTN_BUG_PADDING_ON_QUERIES) /* a blocked query row is blanked */
                    for (int r = 0; r < n; r++) {
                        int any = 0;
                        for (int j = 0; j < Tk && !any; j++) any = is_allowed(&vis, b, h, i0 + r, j);
                        if (!any) memset(s + (long)r * Tk, 0, sizeof(float) * Tk);
                    }

                /* 5. mix: out = weights v */
                attn_gemm(out_bh + (long)i0 * dv, dv, s, Tk, v_bh, dv, n, dv, Tk, 1.0f);
                if (bug == ATTN_BUG_MASK_OUTPUT) /* out.masked_fill(~allowed, 0): dv == Tk */
                    for (int r = 0; r < n; r++)
                        for (int c = 0; c < dv; c++)
                            if (!is_allowed(&vis, b, h, i0 + r, c)) out_bh[(long)(i0 + r) * dv + c] = 0.0f;
            }
        }
    }

    /* Weights are at most 1, so a non-finite output means v times the
     * weights overflowed float32. The NaN bugs are allowed to show their NaN. */
    if (!nan_expected) {
        const long at = attn_find_non_finite(out, (long)B * H * Tq * dv);
        if (at >= 0)
            status = attn_fail(ATTN_OVERFLOW,
                               "output overflows float32 at batch %ld, head %ld, query %ld, column %ld: "
                               "v is too large", at / dv / Tq / H, at / dv / Tq % H, at / dv % Tq, at % dv);
    }
done:
    attn_free(kt);
    return status;
}

int attn_sdpa_js(float *out, float *weights, float *scores,
                 const float *q, const float *k, const float *v,
                 const uint8_t *mask, int msb, int msh, int msq, int msk,
                 int B, int H, int Tq, int Tk, int dk, int dv,
                 float scale, int causal, int bug) {
    const attn_mask m = {mask, msb, msh, msq, msk};
    return attn_sdpa(out, weights, scores, q, k, v, m, B, H, Tq, Tk, dk, dv, scale, causal, 0, bug);
}

/* ======================================================================== */
/* Scaled dot-product attention, backward                                    */
/* ======================================================================== */

/* The backward runs the forward's passes in reverse, for each (batch, head):
 *   0. recompute scores and probabilities P, as the forward did
 *   1. mix     : dP = dOut V^T,  dV = P^T dOut; blocked dP -> 0
 *   2. softmax : dS = P * (dP - rowsum(dP * P))
 *   3. mask    : blocked logits were constants, so their dS -> 0
 *   4. scores  : dQ = scale * dS K,  dK = scale * dS^T Q
 *
 * Probabilities are recomputed rather than saved. Saving them would keep a
 * (Tq, Tk) matrix per head alive between the two calls; recomputing costs
 * one more Q K^T (a fifth of the backward's work) and needs only q, k and v,
 * which the caller holds anyway. Memory stays one head's (Tq, Tk) scratch.
 */

/* What a bug changes in one call, resolved once: the visibility rule, the
 * scale, whether blocked logits are masked, and the all-masked-row guard.
 * These are the forward's switches, for recomputing the forward exactly. */
typedef struct {
    visibility vis;
    float scale;
    int mask_logits;  /* blocked logits -> -INFINITY before softmax */
    int guard;        /* refuse query rows with no allowed key */
    int nan_expected; /* the bug shows a NaN on purpose */
} sdpa_switches;

static int resolve_switches(sdpa_switches *sw, attn_mask mask, int causal, int causal_offset,
                            float scale, int Tq, int Tk, int dk, int dv, int bug) {
    sw->vis = correct_visibility(mask, causal, causal_offset);
    if (bug == ATTN_BUG_NO_CAUSAL_MASK) sw->vis.causal = CAUSAL_NONE;
    if (bug == ATTN_BUG_CAUSAL_UPPER && causal) sw->vis.causal = CAUSAL_UPPER;
    if (bug == ATTN_BUG_INVERTED_MASK) sw->vis.invert_mask = 1;
    if (bug == ATTN_BUG_PADDING_ON_QUERIES) {
        if (Tq != Tk)
            return attn_fail(ATTN_BAD_ARGUMENT, "bug padding-on-queries needs Tq == Tk (got %d, %d)", Tq, Tk);
        sw->vis.mask.sq = mask.sk;
        sw->vis.mask.sk = mask.sq;
    }
    if (bug == ATTN_BUG_MASK_OUTPUT && dv != Tk)
        return attn_fail(ATTN_BAD_ARGUMENT,
                         "bug mask-output masks the (Tq, dv) output with the (Tq, Tk) mask, "
                         "so it needs dv == Tk (got dv=%d, Tk=%d)", dv, Tk);
    sw->scale = bug == ATTN_BUG_NO_SCALE ? 1.0f : bug == ATTN_BUG_SCALE_BY_DK ? 1.0f / (float)dk : scale;
    sw->mask_logits = bug != ATTN_BUG_MASK_AFTER_SOFTMAX && bug != ATTN_BUG_MASK_OUTPUT;
    sw->guard = bug != ATTN_BUG_NO_ALL_MASKED_GUARD && bug != ATTN_BUG_PADDING_ON_QUERIES;
    sw->nan_expected = bug == ATTN_BUG_NO_ALL_MASKED_GUARD || bug == ATTN_BUG_SOFTMAX_OVER_QUERIES;
    return ATTN_OK;
}

/* x (Tq, Tk) of head (b, h): entries of blocked pairs <- value. */
static void fill_blocked(float *x, float value, const visibility *vis, int b, int h, int Tq, int Tk) {
    if (!vis->mask.data && vis->causal == CAUSAL_NONE) return; /* nothing is blocked */
    for (int i = 0; i < Tq; i++)
        for (int j = 0; j < Tk; j++)
            if (!is_allowed(vis, b, h, i, j)) x[(long)i * Tk + j] = value;
}

/* bug: padding-on-queries. p (Tq, Tk): a query row with no allowed key is
 * blanked (all 0), as the forward does. */
static void blank_unseeing_rows(float *p, const visibility *vis, int b, int h, int Tq, int Tk) {
    for (int i = 0; i < Tq; i++) {
        int any = 0;
        for (int j = 0; j < Tk && !any; j++) any = is_allowed(vis, b, h, i, j);
        if (!any) memset(p + (long)i * Tk, 0, sizeof(float) * Tk);
    }
}

/* bug: softmax-over-queries. ds, p, dp (Tq, Tk): the softmax backward down
 * each column, ds = p * (dp - colsum(dp * p)). ds may be dp. */
static void softmax_columns_backward(float *ds, const float *p, const float *dp, int Tq, int Tk) {
    for (int j = 0; j < Tk; j++) {
        float dot = 0.0f;
        for (int i = 0; i < Tq; i++) dot += dp[(long)i * Tk + j] * p[(long)i * Tk + j];
        for (int i = 0; i < Tq; i++) ds[(long)i * Tk + j] = p[(long)i * Tk + j] * (dp[(long)i * Tk + j] - dot);
    }
}

/* bug: softmax-backward-no-rowsum. ds = p * dp: the row sum is forgotten. */
static void softmax_backward_no_rowsum(float *ds, const float *p, const float *dp, long n) {
    for (long i = 0; i < n; i++) ds[i] = p[i] * dp[i];
}

int attn_sdpa_backward(float *dq, float *dk, float *dv, float *dscores, float *dprobs,
                       const float *dout, const float *q, const float *k, const float *v,
                       attn_mask mask, int B, int H, int Tq, int Tk, int Dk, int Dv,
                       float scale, int causal, int causal_offset, int bug) {
    attn_clear_error();

    /* Arguments, as the forward checks them, plus dout. */
    if (!dq || !dk || !dv || !dout || !q || !k || !v)
        return attn_fail(ATTN_BAD_ARGUMENT, "dq, dk, dv, dout, q, k and v are required");
    if (B < 1 || H < 1 || Tq < 1 || Tk < 1 || Dk < 1 || Dv < 1)
        return attn_fail(ATTN_BAD_ARGUMENT,
                         "dims must be positive: B=%d H=%d Tq=%d Tk=%d dk=%d dv=%d",
                         B, H, Tq, Tk, Dk, Dv);
    if (bug < 0 || bug >= ATTN_BUG_COUNT) return attn_fail(ATTN_BAD_ARGUMENT, "unknown bug %d", bug);
    if (!isfinite(scale)) return attn_fail(ATTN_NON_FINITE_INPUT, "scale is not finite");
    const double bh_count = (double)B * H;
    const double largest = fmax(fmax(bh_count * Tq * Dk, bh_count * Tk * Dk),
                                fmax(bh_count * Tk * Dv, bh_count * Tq * (double)Tk));
    if (check_request(4.0 * largest)) return ATTN_TOO_LARGE;
    int status;
    if ((status = check_finite("q", q, B, H, Tq, Dk))) return status;
    if ((status = check_finite("k", k, B, H, Tk, Dk))) return status;
    if ((status = check_finite("v", v, B, H, Tk, Dv))) return status;
    if ((status = check_finite("dOutput", dout, B, H, Tq, Dv))) return status;
    sdpa_switches sw;
    if ((status = resolve_switches(&sw, mask, causal, causal_offset, scale, Tq, Tk, Dk, Dv, bug))) return status;
    const visibility *vis = &sw.vis;

    /* Scratch for one head: K^T and V^T in strips, P and dP (dP becomes dS
     * in place), and for two bugs the unmasked P or the masked dOut. */
    const int keep_full = bug == ATTN_BUG_MASK_AFTER_SOFTMAX;
    const int mask_dout = bug == ATTN_BUG_MASK_OUTPUT;
    const double TT = (double)Tq * Tk;
    const double scratch_floats = (double)Tk * Dk + (double)Tk * Dv + 2 * TT +
                                  (keep_full ? TT : 0) + (mask_dout ? (double)Tq * Dv : 0);
    float *kt = attn_alloc(4.0 * scratch_floats);
    if (!kt) return ATTN_TOO_LARGE;
    float *vt = kt + (long)Tk * Dk;            /* V^T strips */
    float *p = vt + (long)Tk * Dv;             /* (Tq, Tk) */
    float *dp = p + (long)Tq * Tk;             /* (Tq, Tk) */
    float *p_full = dp + (long)Tq * Tk;        /* (Tq, Tk), mask-after-softmax */
    float *dout_masked = p_full + (keep_full ? (long)Tq * Tk : 0); /* (Tq, Dv), mask-output */

    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const long bh = (long)b * H + h;
            const float *q_bh = q + bh * Tq * Dk;        /* (Tq, Dk) */
            const float *k_bh = k + bh * Tk * Dk;        /* (Tk, Dk) */
            const float *v_bh = v + bh * Tk * Dv;        /* (Tk, Dv) */
            const float *dout_bh = dout + bh * Tq * Dv;  /* (Tq, Dv) */
            float *dq_bh = dq + bh * Tq * Dk, *dk_bh = dk + bh * Tk * Dk, *dv_bh = dv + bh * Tk * Dv;

            /* 0. recompute: p = softmax(mask(scale * q k^T)), as the forward */
            attn_pack_strips(kt, k_bh, Tk, Dk);
            attn_gemm_packed(p, Tk, q_bh, Dk, kt, Tq, Tk, Dk, sw.scale);
            status = mask_rows(p, vis, b, h, 0, Tq, Tk, sw.mask_logits, sw.guard);
            if (status) goto done;
            if (bug == ATTN_BUG_SOFTMAX_OVER_QUERIES) softmax_columns(p, Tq, Tk);
            else attn_softmax_rows(p, Tk, Tq, Tk);
            if (keep_full) { /* bug: softmax saw every key; blocked weights zeroed after */
                memcpy(p_full, p, sizeof(float) * Tq * Tk);
                fill_blocked(p, 0.0f, vis, b, h, Tq, Tk);
            }
            if (bug == ATTN_BUG_PADDING_ON_QUERIES) blank_unseeing_rows(p, vis, b, h, Tq, Tk);
            if (bug == ATTN_BUG_GRAD_THROUGH_BLOCKED) /* bug: blocked weights taken as uniform */
                fill_blocked(p, 1.0f / (float)Tk, vis, b, h, Tq, Tk);

            /* 1. mix: out = p v, so dp = dout v^T and dv = p^T dout */
            const float *g = dout_bh;
            if (mask_dout) { /* bug: out was masked (dv == Tk), so is its gradient */
                memcpy(dout_masked, dout_bh, sizeof(float) * Tq * Dv);
                fill_blocked(dout_masked, 0.0f, vis, b, h, Tq, Dv);
                g = dout_masked;
            }
            attn_pack_strips(vt, v_bh, Tk, Dv);
            attn_gemm_packed(dp, Tk, g, Dv, vt, Tq, Tk, Dv, 1.0f);
            attn_gemm_tn(dv_bh, Dv, p, Tk, g, Dv, Tk, Dv, Tq, 1.0f);
            /* a blocked weight is a constant 0: it takes no gradient */
            if (!mask_dout && bug != ATTN_BUG_GRAD_THROUGH_BLOCKED) fill_blocked(dp, 0.0f, vis, b, h, Tq, Tk);
            if (dprobs) memcpy(dprobs + bh * Tq * Tk, dp, sizeof(float) * Tq * Tk);

            /* 2. softmax: ds = p * (dp - rowsum(dp * p)), in place in dp */
            if (bug == ATTN_BUG_SOFTMAX_BACKWARD_NO_ROWSUM) softmax_backward_no_rowsum(dp, p, dp, (long)Tq * Tk);
            else if (bug == ATTN_BUG_SOFTMAX_OVER_QUERIES) softmax_columns_backward(dp, p, dp, Tq, Tk);
            else attn_softmax_backward_rows(dp, keep_full ? p_full : p, dp, Tk, Tq, Tk);

            /* 3. mask: a blocked logit was replaced by -INFINITY, a constant */
            if (sw.mask_logits && bug != ATTN_BUG_GRAD_THROUGH_BLOCKED) fill_blocked(dp, 0.0f, vis, b, h, Tq, Tk);
            if (dscores) memcpy(dscores + bh * Tq * Tk, dp, sizeof(float) * Tq * Tk);

            /* 4. scores = scale * q k^T: dq = scale * ds k, dk = scale * ds^T q */
            attn_gemm(dq_bh, Dk, dp, Tk, k_bh, Dk, Tq, Dk, Tk, sw.scale);
            attn_gemm_tn(dk_bh, Dk, dp, Tk, q_bh, Dk, Tk, Dk, Tq, sw.scale);
        }
    }

    /* Finite inputs and weights in [0, 1] can still overflow float32 in the
     * products; say so rather than return Infinity. */
    if (!sw.nan_expected) {
        const struct { const char *name; const float *x; long rows, cols; } grads[3] = {
            {"dq", dq, (long)Tq, Dk}, {"dk", dk, (long)Tk, Dk}, {"dv", dv, (long)Tk, Dv}};
        for (int t = 0; t < 3; t++) {
            const long at = attn_find_non_finite(grads[t].x, (long)B * H * grads[t].rows * grads[t].cols);
            if (at >= 0) {
                const long c = grads[t].cols, r = grads[t].rows;
                status = attn_fail(ATTN_OVERFLOW,
                                   "%s overflows float32 at batch %ld, head %ld, row %ld, column %ld: "
                                   "the inputs or dOutput are too large",
                                   grads[t].name, at / c / r / H, at / c / r % H, at / c % r, at % c);
                break;
            }
        }
    }
done:
    attn_free(kt);
    return status;
}

int attn_sdpa_backward_js(float *dq, float *dk, float *dv, float *dscores, float *dprobs,
                          const float *dout, const float *q, const float *k, const float *v,
                          const uint8_t *mask, int msb, int msh, int msq, int msk,
                          int B, int H, int Tq, int Tk, int Dk, int Dv,
                          float scale, int causal, int bug) {
    const attn_mask m = {mask, msb, msh, msq, msk};
    return attn_sdpa_backward(dq, dk, dv, dscores, dprobs, dout, q, k, v, m, B, H, Tq, Tk, Dk, Dv,
                              scale, causal, 0, bug);
}

/* ======================================================================== */
/* Observability                                                             */
/* ======================================================================== */

/* stats[4] <- max |score|, masked fraction, max |row sum - 1|, max blocked
 * weight; scores, weights (B, H, Tq, Tk), judged by the correct rule. */
int attn_observe(float *stats, const float *scores, const float *weights,
                 const uint8_t *mask, int msb, int msh, int msq, int msk,
                 int B, int H, int Tq, int Tk, int causal) {
    attn_clear_error();
    if (!stats || !scores || !weights) return attn_fail(ATTN_BAD_ARGUMENT, "stats, scores and weights are required");
    const attn_mask m = {mask, msb, msh, msq, msk};
    const visibility vis = correct_visibility(m, causal, 0);
    double max_score = 0, blocked = 0, max_row_error = 0, max_forbidden = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++) {
                const long row = (((long)b * H + h) * Tq + i) * Tk;
                double sum = 0;
                for (int j = 0; j < Tk; j++) {
                    max_score = fmax(max_score, fabs(scores[row + j]));
                    sum += weights[row + j];
                    if (!is_allowed(&vis, b, h, i, j)) {
                        blocked++;
                        max_forbidden = fmax(max_forbidden, fabs(weights[row + j]));
                    }
                }
                /* fmax drops NaN, so carry it explicitly */
                max_row_error = (isnan(sum) || isnan(max_row_error)) ? NAN : fmax(max_row_error, fabs(sum - 1.0));
            }
    stats[0] = (float)max_score;
    stats[1] = (float)(blocked / ((double)B * H * Tq * Tk));
    stats[2] = (float)max_row_error;
    stats[3] = (float)max_forbidden;
    return ATTN_OK;
}

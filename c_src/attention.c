/* attention.c: scaled dot-product attention, errors, memory shared with JS.
 *
 * The forward pass, for each (batch, head), in numbered passes:
 *   1. pack K^T once per head, in strips of 8 keys
 *   2. scores  = scale * Q K^T           (block of query rows at a time)
 *   3. mask    : blocked logits -> -INFINITY; refuse rows with no allowed key
 *   4. softmax over keys, stable
 *   5. mix     : output = weights V
 * When no weights are kept and no bug is on, the tiled path runs instead:
 * the same passes over tiles of keys, with FlashAttention's online softmax
 * (a running max and sum per query row, the accumulator rescaled as each
 * tile arrives), so no (Tq, Tk) matrix exists at any time.
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

/* The checks every SDPA entry runs first: pointers, dims, bug, scale, sizes
 * (with_matrix: a (Tq, Tk) matrix will be allocated) and finite inputs.
 * q (B, H, Tq, dk), k (B, H, Tk, dk), v (B, H, Tk, dv). */
static int check_sdpa_args(const float *out, const float *q, const float *k, const float *v,
                           int B, int H, int Tq, int Tk, int dk, int dv, float scale, int bug,
                           int with_matrix) {
    if (!out || !q || !k || !v) return attn_fail(ATTN_BAD_ARGUMENT, "out, q, k and v are required");
    if (B < 1 || H < 1 || Tq < 1 || Tk < 1 || dk < 1 || dv < 1)
        return attn_fail(ATTN_BAD_ARGUMENT,
                         "dims must be positive: B=%d H=%d Tq=%d Tk=%d dk=%d dv=%d",
                         B, H, Tq, Tk, dk, dv);
    if (bug < 0 || bug >= ATTN_BUG_COUNT) return attn_fail(ATTN_BAD_ARGUMENT, "unknown bug %d", bug);
    if (!isfinite(scale)) return attn_fail(ATTN_NON_FINITE_INPUT, "scale is not finite");
    const double bh_count = (double)B * H;
    const double largest = fmax(fmax(bh_count * Tq * dk, bh_count * Tk * dk),
                                fmax(bh_count * Tk * dv, with_matrix ? bh_count * Tq * (double)Tk : 0.0));
    if (check_request(4.0 * largest)) return ATTN_TOO_LARGE;
    int status;
    if ((status = check_finite("q", q, B, H, Tq, dk))) return status;
    if ((status = check_finite("k", k, B, H, Tk, dk))) return status;
    return check_finite("v", v, B, H, Tk, dv);
}

/* Weights are at most 1, so a non-finite output out (B, H, Tq, dv) means v
 * times the weights overflowed float32. */
static int check_output_finite(const float *out, int B, int H, int Tq, int dv) {
    const long at = attn_find_non_finite(out, (long)B * H * Tq * dv);
    if (at < 0) return ATTN_OK;
    return attn_fail(ATTN_OVERFLOW,
                     "output overflows float32 at batch %ld, head %ld, query %ld, column %ld: "
                     "v is too large", at / dv / Tq / H, at / dv / Tq % H, at / dv % Tq, at % dv);
}

/* The refusal of a query row with no allowed key, the same on every path. */
static int fail_all_masked(int b, int h, int i) {
    return attn_fail(ATTN_ALL_MASKED_ROW,
                     "query row has no allowed key (batch %d, head %d, query %d): "
                     "every query needs at least one key it may attend to", b, h, i);
}

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
        if (guard && allowed_count == 0) return fail_all_masked(b, h, i0 + r);
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

/* ------------------------------------------------------------------------ */
/* The tiled path: online softmax over key tiles                            */
/* ------------------------------------------------------------------------ */

enum { TILE_ROWS = 16 }; /* query rows per block */

/* s (n, w), row stride ld: the scores of query rows i0.. of head (b, h)
 * against keys j0..j0+w-1; blocked logits -> -INFINITY. Returns 1 when the
 * tile has no allowed key for any of the n rows (it can be skipped). */
static int mask_tile(float *s, int ld, const visibility *vis, int b, int h, int i0, int n,
                     int j0, int w) {
    const int last_row = i0 + n - 1, last_key = j0 + w - 1;
    if (vis->causal == CAUSAL_LOWER && j0 > last_row + vis->causal_offset) return 1;
    const int below_diagonal = vis->causal == CAUSAL_NONE || last_key <= i0 + vis->causal_offset;
    if (!vis->mask.data && below_diagonal) return 0; /* every key of the tile allowed */
    for (int r = 0; r < n; r++)
        for (int j = 0; j < w; j++)
            if (!is_allowed(vis, b, h, i0 + r, j0 + j)) s[(long)r * ld + j] = -INFINITY;
    return 0;
}

/* out (B, H, Tq, dv); trace (B, H, Tq, tiles, 3 + dv) or NULL;
 * q (B, H, Tq, dk), k (B, H, Tk, dk), v (B, H, Tk, dv); arguments checked.
 * For each (batch, head):
 *   1. pack K^T in strips of 8 keys (as the standard path)
 *   then for each block of TILE_ROWS query rows, m = -inf, l = 0, acc = 0,
 *   and for each tile of block_keys keys:
 *   2. scores  s = scale * q k^T over the tile
 *   3. mask    blocked logits -> -INFINITY (a fully blocked tile is skipped)
 *   4. online softmax: m_new = max(m, max s); p = exp(s - m_new);
 *      factor = exp(m - m_new); l = l * factor + sum p
 *   5. mix     acc = acc * factor + p v_tile
 *   6. finish: a row with l = 0 had no allowed key and is refused;
 *      out = acc / l
 * bug: no-rescale uses factor = 1 in 4 and 5. */
static int sdpa_tiled(float *out, float *trace, const float *q, const float *k, const float *v,
                      const visibility *vis, int B, int H, int Tq, int Tk, int dk, int dv,
                      float scale, int block_keys, int no_rescale) {
    const int bk = block_keys < Tk ? block_keys : Tk;
    const int tiles = (Tk + bk - 1) / bk;
    const int s_width = bk + 2 * ATTN_STRIP; /* a tile widened to whole strips */
    /* Scratch: K^T of one head, then per block: scores (4, s_width),
     * p v (4, dv), acc (4, dv), and m, l, factor, sum (4 each). */
    const double floats = (double)dk * Tk + TILE_ROWS * ((double)s_width + 2.0 * dv + 4.0);
    float *kt = attn_alloc(4.0 * floats);
    if (!kt) return ATTN_TOO_LARGE;
    float *s_buf = kt + (long)dk * Tk;
    float *pv = s_buf + (long)TILE_ROWS * s_width;
    float *acc = pv + (long)TILE_ROWS * dv;
    float *m = acc + (long)TILE_ROWS * dv, *l = m + TILE_ROWS, *factor = l + TILE_ROWS, *sum = factor + TILE_ROWS;
    int status = ATTN_OK;

    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const long bh = (long)b * H + h;
            const float *q_bh = q + bh * Tq * dk;  /* (Tq, dk) */
            const float *k_bh = k + bh * Tk * dk;  /* (Tk, dk) */
            const float *v_bh = v + bh * Tk * dv;  /* (Tk, dv) */
            float *out_bh = out + bh * Tq * dv;    /* (Tq, dv) */

            /* 1. pack K^T */
            attn_pack_strips(kt, k_bh, Tk, dk);

            for (int i0 = 0; i0 < Tq; i0 += TILE_ROWS) {
                const int n = Tq - i0 < TILE_ROWS ? Tq - i0 : TILE_ROWS;
                for (int r = 0; r < n; r++) m[r] = -INFINITY, l[r] = 0.0f;
                memset(acc, 0, sizeof(float) * n * dv);

                for (int t = 0; t < tiles; t++) {
                    const int j0 = t * bk, w = Tk - j0 < bk ? Tk - j0 : bk;
                    /* the whole strips that hold keys j0..j0+w-1 */
                    const int js = j0 / ATTN_STRIP * ATTN_STRIP;
                    const int je = (j0 + w + ATTN_STRIP - 1) / ATTN_STRIP * ATTN_STRIP;
                    const int ld = (je < Tk ? je : Tk) - js;
                    float *s = s_buf + (j0 - js); /* (n, w), row stride ld */

                    /* 2. scores */
                    attn_gemm_packed(s_buf, ld, q_bh + (long)i0 * dk, dk, kt + (long)js * dk, n, ld, dk, scale);
                    for (int r = 0; r < n; r++) {
                        if (attn_all_finite(s + (long)r * ld, w)) continue;
                        status = attn_fail(ATTN_OVERFLOW,
                                           "scores overflow float32 at batch %d, head %d, query %d, key %ld: "
                                           "q and k are too large for this scale",
                                           b, h, i0 + r, j0 + attn_find_non_finite(s + (long)r * ld, w));
                        goto done;
                    }

                    /* 3. mask; 4. online softmax; 5. mix */
                    if (mask_tile(s, ld, vis, b, h, i0, n, j0, w)) {
                        for (int r = 0; r < n; r++) factor[r] = 1.0f;
                    } else {
                        attn_softmax_tile_online(s, m, factor, sum, ld, n, w);
                        if (no_rescale) /* bug: old and new terms mixed at different maxima */
                            for (int r = 0; r < n; r++) factor[r] = 1.0f;
                        for (int r = 0; r < n; r++) l[r] = l[r] * factor[r] + sum[r];
                        attn_gemm(pv, dv, s, ld, v_bh + (long)j0 * dv, dv, n, dv, w, 1.0f);
                        attn_rescale_add(acc, pv, factor, n, dv);
                    }
                    if (trace)
                        for (int r = 0; r < n; r++) {
                            float *tr = trace + ((bh * Tq + i0 + r) * tiles + t) * (3L + dv);
                            tr[0] = m[r], tr[1] = l[r], tr[2] = factor[r];
                            memcpy(tr + 3, acc + (long)r * dv, sizeof(float) * dv);
                        }
                }

                /* 6. finish the block */
                for (int r = 0; r < n; r++) {
                    if (l[r] == 0.0f) {
                        status = fail_all_masked(b, h, i0 + r);
                        goto done;
                    }
                    const float inv_l = 1.0f / l[r];
                    float *out_r = out_bh + (long)(i0 + r) * dv;
                    for (int c = 0; c < dv; c++) out_r[c] = acc[(long)r * dv + c] * inv_l;
                }
            }
        }
    }
    status = check_output_finite(out, B, H, Tq, dv);
done:
    attn_free(kt);
    return status;
}

int attn_sdpa(float *out, float *weights, float *scores,
              const float *q, const float *k, const float *v,
              attn_mask mask, int B, int H, int Tq, int Tk, int dk, int dv,
              float scale, int causal, int causal_offset, int bug) {
    attn_clear_error();
    const int tiled = !weights && !scores && (bug == ATTN_BUG_NONE || bug == ATTN_BUG_NO_RESCALE);
    int status = check_sdpa_args(out, q, k, v, B, H, Tq, Tk, dk, dv, scale, bug, !tiled);
    if (status) return status;
    if (tiled) {
        const visibility vis = correct_visibility(mask, causal, causal_offset);
        return sdpa_tiled(out, NULL, q, k, v, &vis, B, H, Tq, Tk, dk, dv, scale,
                          ATTN_TILE_KEYS, bug == ATTN_BUG_NO_RESCALE);
    }
    if (bug == ATTN_BUG_NO_RESCALE)
        return attn_fail(ATTN_BAD_ARGUMENT, "bug no-rescale is in the tiled path, which keeps no weights");

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

    /* The NaN bugs are allowed to show their NaN. */
    if (!nan_expected) status = check_output_finite(out, B, H, Tq, dv);
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

int attn_sdpa_tiled(float *out, float *trace, const float *q, const float *k, const float *v,
                    attn_mask mask, int B, int H, int Tq, int Tk, int dk, int dv,
                    float scale, int causal, int causal_offset, int block_keys, int bug) {
    attn_clear_error();
    int status = check_sdpa_args(out, q, k, v, B, H, Tq, Tk, dk, dv, scale, bug, 0);
    if (status) return status;
    if (bug != ATTN_BUG_NONE && bug != ATTN_BUG_NO_RESCALE)
        return attn_fail(ATTN_BAD_ARGUMENT, "the tiled path knows only the bug no-rescale (got bug %d)", bug);
    if (block_keys < 1) return attn_fail(ATTN_BAD_ARGUMENT, "blockKeys must be at least 1 (got %d)", block_keys);
    const visibility vis = correct_visibility(mask, causal, causal_offset);
    return sdpa_tiled(out, trace, q, k, v, &vis, B, H, Tq, Tk, dk, dv, scale, block_keys,
                      bug == ATTN_BUG_NO_RESCALE);
}

int attn_sdpa_tiled_js(float *out, float *trace, const float *q, const float *k, const float *v,
                       const uint8_t *mask, int msb, int msh, int msq, int msk,
                       int B, int H, int Tq, int Tk, int dk, int dv,
                       float scale, int causal, int block_keys, int bug) {
    const attn_mask m = {mask, msb, msh, msq, msk};
    return attn_sdpa_tiled(out, trace, q, k, v, m, B, H, Tq, Tk, dk, dv, scale, causal, 0, block_keys, bug);
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

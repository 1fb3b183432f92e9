/* attention.c: scaled dot-product attention, errors, memory shared with JS.
 *
 * The forward pass, for each (batch, head), in numbered passes:
 *   1. pack K^T once per head, in strips of 16 keys (ATTN_STRIP)
 *   2. scores  = scale * Q K^T           (block of query rows at a time)
 *   3. mask    : blocked logits -> -INFINITY; refuse rows with no allowed key
 *   4. softmax over keys, stable (4b. dropout, when asked for)
 *   5. mix     : output = probs V
 * When no probabilities are kept and no bug is on, the tiled path runs
 * instead: the same passes over tiles of keys, with FlashAttention's online
 * softmax (a running max and sum per query row, the accumulator rescaled as
 * each tile arrives), so no (Tq, Tk) matrix exists at any time.
 * Most break-it bugs act through the plan of a call (make_plan): a scale,
 * a rule or a helper is swapped in and the passes stay as written. The rest
 * act inside a pass: the rule the passes apply carries three bug fields
 * (visibility, read by is_allowed), the tiled path takes a no_rescale flag
 * into its online softmax (sdpa_tiled), and the backward tests its own two
 * bugs where they act (attn_sdpa_backward).
 */
#include <float.h>
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

static char last_error[ATTN_ERROR_BYTES];
static int last_status;

/* The message of the last failing call, "" after a success. */
const char *attn_last_error(void) { return last_error; }

/* The attn_status of the last call, ATTN_OK after a success. */
int attn_last_status(void) { return last_status; }

/* The size of the message buffer, for JS to read the message within. */
int attn_error_bytes(void) { return ATTN_ERROR_BYTES; }

/* Forget the last error: every entry point starts here. */
void attn_clear_error(void) {
    last_error[0] = '\0';
    last_status = ATTN_OK;
}

/* Record status and the printf-formatted message; returns status, so that
 * a refusal reads `return attn_fail(...)`. */
int attn_fail(int status, const char *fmt, ...) {
    last_status = status;
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, args);
    va_end(args);
    return status;
}

/* x (n): index of the first NaN or +-Infinity, or -1. Every tensor of a
 * call passes here, so the common answer (all finite) comes from the
 * vector kernel, chunk by chunk; only a chunk that fails is searched. */
long attn_find_non_finite(const float *x, long n) {
    enum { CHUNK = 1 << 16 };
    for (long i0 = 0; i0 < n; i0 += CHUNK) {
        const int w = n - i0 < CHUNK ? (int)(n - i0) : CHUNK;
        if (attn_all_finite(x + i0, w)) continue;
        for (long i = i0; i < i0 + w; i++)
            if (!isfinite(x[i])) return i;
    }
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
        /* In bytes as well as MiB: just over the limit, MiB alone round to
         * the same number. */
        return attn_fail(ATTN_TOO_LARGE,
                         "this needs %.0f bytes (%.1f MiB) of memory; the limit is %.0f bytes (%.0f MiB)",
                         bytes, bytes / 1048576.0, ATTN_MAX_REQUEST_BYTES, ATTN_MAX_REQUEST_BYTES / 1048576.0);
    return ATTN_OK;
}

/* Every heap allocation of the core goes through here, so that a test can
 * count them (attn_heap_allocations). */
static double heap_allocations;

/* malloc(size), counted. */
static void *heap_alloc(size_t size) {
    heap_allocations++;
    return malloc(size);
}

/* The number of heap_alloc calls since the core was loaded. */
double attn_heap_allocations(void) { return heap_allocations; }

/* Scratch accounting: every attn_alloc block carries its size in a 16-byte
 * header (which keeps the block 16-byte aligned), so the core can say how
 * much scratch a call needed at its peak, beyond its workspace. */
enum { ALLOC_HEADER = 16 };
static double scratch_live, scratch_peak, scratch_base;

/* The caller's scratch arena, when one is set (attn_scratch_arena): blocks
 * are stacked in it, and freeing the top block pops it. */
static unsigned char *arena;
static size_t arena_bytes, arena_used;

/* base (bytes) becomes the arena, empty; base NULL unsets it. */
void attn_scratch_arena(void *base, double bytes) {
    arena = base;
    arena_bytes = base && bytes > 0 ? (size_t)bytes : 0;
    arena_used = 0;
}

/* A block of `bytes` (16-byte aligned), from the arena when it fits there,
 * else from the heap; NULL and an error when the size is refused or memory
 * runs out. Counts the block in the scratch peak. */
void *attn_alloc(double bytes) {
    if (check_request(bytes)) return NULL;
    const size_t size = bytes > 0 ? (size_t)bytes : 1;
    const size_t padded = (size + ALLOC_HEADER - 1) / ALLOC_HEADER * ALLOC_HEADER;
    unsigned char *block;
    if (arena && arena_bytes - arena_used >= padded + ALLOC_HEADER) {
        block = arena + arena_used;
        arena_used += padded + ALLOC_HEADER;
    } else {
        block = heap_alloc(size + ALLOC_HEADER);
    }
    if (!block) {
        attn_fail(ATTN_TOO_LARGE, "out of memory allocating %.0f MiB", bytes / 1048576.0);
        return NULL;
    }
    memcpy(block, &size, sizeof size);
    scratch_live += (double)size;
    if (scratch_live > scratch_peak) scratch_peak = scratch_live;
    return block + ALLOC_HEADER;
}

/* Release a block of attn_alloc (NULL-safe): pop it when it is the arena's
 * top block, free it when it came from the heap. */
void attn_free(void *p) {
    if (!p) return;
    unsigned char *block = (unsigned char *)p - ALLOC_HEADER;
    size_t size;
    memcpy(&size, block, sizeof size);
    scratch_live -= (double)size;
    if (arena && block >= arena && block < arena + arena_bytes) {
        /* the top block pops; one below it is reclaimed when the arena is reset */
        const size_t padded = (size + ALLOC_HEADER - 1) / ALLOC_HEADER * ALLOC_HEADER;
        if (block + ALLOC_HEADER + padded == arena + arena_used) arena_used = (size_t)(block - arena);
        return;
    }
    free(block);
}

/* The most scratch bytes live at once since the last attn_workspace call,
 * beyond what was live at that call. */
double attn_scratch_peak_bytes(void) { return scratch_peak - scratch_base; }

/* The product kernels' multiply-adds (attn_madds_counted) when the last
 * attn_workspace call was made. */
static double madds_base;

/* The multiply-adds of the matrix products done since the last
 * attn_workspace call: those of the last call from JS. */
double attn_last_call_madds(void) { return attn_madds_counted() - madds_base; }

/* The shared workspace, at least `bytes` long (grown, never shrunk), or
 * NULL and an error. Clears the error and restarts the scratch peak and the
 * multiply-add count: every call from JS begins here. */
void *attn_workspace(double bytes) {
    attn_clear_error();
    scratch_base = scratch_peak = scratch_live; /* a call from JS starts here */
    madds_base = attn_madds_counted();
    if (check_request(bytes)) return NULL;
    if (workspace && bytes <= workspace_bytes) return workspace;
    free(workspace);
    workspace_bytes = 0;
    /* Round up to 64 KiB so that slowly growing requests reuse the buffer.
     * Plain malloc: the workspace is not scratch. */
    const double rounded = ceil((bytes > 0 ? bytes : 1) / 65536.0) * 65536.0;
    workspace = check_request(rounded) ? NULL : heap_alloc((size_t)rounded);
    if (!workspace) {
        attn_fail(ATTN_TOO_LARGE, "out of memory allocating %.0f MiB", rounded / 1048576.0);
        return NULL;
    }
    workspace_bytes = rounded;
    return workspace;
}

/* ======================================================================== */
/* Which keys a query may see                                                */
/* ======================================================================== */

/* JS writes these structs as int32 words (web/attention.js): keep the
 * layouts documented in attention.h. */
#ifdef __EMSCRIPTEN__
_Static_assert(sizeof(attn_visibility) == 4 * ATTN_VISIBILITY_WORDS, "attn_visibility layout");
_Static_assert(sizeof(attn_dims) == 4 * ATTN_DIMS_WORDS, "attn_dims layout");
_Static_assert(sizeof(attn_kv_cache) == 4 * ATTN_KV_CACHE_WORDS, "attn_kv_cache layout");
_Static_assert(sizeof(attn_mha_visibility) == 4 * ATTN_MHA_VISIBILITY_WORDS, "attn_mha_visibility layout");
_Static_assert(sizeof(attn_dropout) == 4 * ATTN_DROPOUT_WORDS, "attn_dropout layout");
#endif

/* The rule as the passes apply it: the caller's attn_visibility plus the
 * three ways a break-it bug can bend it. The correct path leaves them 0. */
typedef struct {
    attn_visibility rule;
    int Tk;           /* row length of rule.key_padding_mask */
    int causal_upper; /* bug causal-upper: blocks j < i + offset instead */
    int invert;       /* bug inverted-mask: the mask read as a blocked mask */
    int transpose;    /* bug padding-on-queries: mask and padding read at (j, i) */
} visibility;

/* The correct rule of a call; vis may be NULL (every key visible). */
static visibility correct_visibility(const attn_visibility *vis, int Tk) {
    static const attn_visibility everything = {{NULL, 0, 0, 0, 0}, NULL, 0, 0};
    visibility v = {vis ? *vis : everything, Tk, 0, 0, 0};
    return v;
}

/* Whether any pair can be blocked: otherwise the passes skip the rule. */
static int blocks_anything(const visibility *vis) {
    return vis->rule.causal || vis->rule.mask.data || vis->rule.key_padding_mask;
}

/* Whether query i may attend to key j in head (b, h) under the rule. */
static int is_allowed(const visibility *vis, int b, int h, int i, int j) {
    const attn_visibility *r = &vis->rule;
    const int64_t diagonal = (int64_t)i + r->causal_offset; /* any offset, no overflow */
    if (r->causal && !vis->causal_upper && j > diagonal) return 0;
    if (r->causal && vis->causal_upper && j < diagonal) return 0;
    if (!r->mask.data && !r->key_padding_mask) return 1;
    const int mi = vis->transpose ? j : i, mj = vis->transpose ? i : j;
    const attn_mask *m = &r->mask;
    const int bit = (!m->data || m->data[b * m->sb + h * m->sh + mi * m->sq + mj * m->sk] != 0) &&
                    (!r->key_padding_mask || r->key_padding_mask[(long)b * vis->Tk + mj] != 0);
    return vis->invert ? !bit : bit;
}

/* allowed (B, H, Tq, Tk) <- the correct rule, one byte per pair. */
int attn_allowed_pairs(uint8_t *allowed, const attn_visibility *vis, int B, int H, int Tq, int Tk) {
    attn_clear_error();
    if (!allowed) return attn_fail(ATTN_BAD_ARGUMENT, "allowed is required");
    if (B < 1 || H < 1 || Tq < 1 || Tk < 1)
        return attn_fail(ATTN_BAD_ARGUMENT, "dims must be positive: B=%d H=%d Tq=%d Tk=%d", B, H, Tq, Tk);
    const visibility rule = correct_visibility(vis, Tk);
    long at = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++)
                for (int j = 0; j < Tk; j++) allowed[at++] = (uint8_t)is_allowed(&rule, b, h, i, j);
    return ATTN_OK;
}

/* ======================================================================== */
/* Scaled dot-product attention                                              */
/* ======================================================================== */

/* Query rows per block when the probabilities are not kept: a block's
 * score rows stay in cache between the passes. */
#define ATTN_QUERY_BLOCK 4

/* Refuse what attn_sdpa, its tiled path and its backward cannot take:
 * missing tensors, bad dims, an unknown bug, a non-finite scale, a request
 * too large (keeps_matrices: the call writes (Tq, Tk) matrices for the
 * caller; scratch is checked where it is allocated), or NaN or
 * +-Infinity in q (B, H, Tq, dk), k (B, H, Tk, dk) or v (B, H, Tk, dv). */
static int check_inputs(const float *q, const float *k, const float *v, const attn_dims *dims,
                        float scale, int bug, int keeps_matrices) {
    if (!q || !k || !v || !dims) return attn_fail(ATTN_BAD_ARGUMENT, "q, k, v and dims are required");
    const int B = dims->B, H = dims->H, Tq = dims->Tq, Tk = dims->Tk, dk = dims->dk, dv = dims->dv;
    if (B < 1 || H < 1 || Tq < 1 || Tk < 1 || dk < 1 || dv < 1)
        return attn_fail(ATTN_BAD_ARGUMENT,
                         "dims must be positive: B=%d H=%d Tq=%d Tk=%d dk=%d dv=%d",
                         B, H, Tq, Tk, dk, dv);
    if (bug < 0 || bug >= ATTN_BUG_COUNT) return attn_fail(ATTN_BAD_ARGUMENT, "unknown bug %d", bug);
    if (!isfinite(scale)) return attn_fail(ATTN_NON_FINITE_INPUT, "scale is not finite");
    /* The largest tensor the call reads or writes: the (Tq, Tk) matrices
     * only when they are kept. */
    const double bh_count = (double)B * H;
    const double kept = keeps_matrices ? bh_count * Tq * (double)Tk : 0.0;
    const double largest = fmax(fmax(bh_count * Tq * dk, bh_count * Tk * dk),
                                fmax(bh_count * Tk * dv, fmax(bh_count * Tq * dv, kept)));
    if (check_request(4.0 * largest)) return ATTN_TOO_LARGE;
    int status;
    if ((status = check_finite("q", q, B, H, Tq, dk))) return status;
    if ((status = check_finite("k", k, B, H, Tk, dk))) return status;
    return check_finite("v", v, B, H, Tk, dv);
}

/* The refusal of an output that overflowed float32, the same in the
 * forward and the backward. */
static int fail_output_overflow(long b, long h, long i, long col) {
    return attn_fail(ATTN_OVERFLOW,
                     "output overflows float32 at batch %ld, head %ld, query %ld, column %ld: "
                     "v is too large", b, h, i, col);
}

/* Probabilities are at most 1, so a non-finite output out (B, H, Tq, dv)
 * means v times them overflowed float32. */
static int check_output_finite(const float *out, int B, int H, int Tq, int dv) {
    const long at = attn_find_non_finite(out, (long)B * H * Tq * dv);
    if (at < 0) return ATTN_OK;
    return fail_output_overflow(at / dv / Tq / H, at / dv / Tq % H, at / dv % Tq, at % dv);
}

/* The refusal of a query row with no allowed key, the same on every path. */
static int fail_all_masked(int b, int h, int i) {
    return attn_fail(ATTN_ALL_MASKED_ROW,
                     "query row has no allowed key (batch %d, head %d, query %d): "
                     "every query needs at least one key it may attend to", b, h, i);
}

/* s (n, Tk): score rows i0..i0+n-1 of head (b, h). Refuse them when one
 * overflowed float32 (q and k too large for the scale). */
static int check_scores_finite(const float *s, int b, int h, int i0, int n, int Tk) {
    const long at = attn_find_non_finite(s, (long)n * Tk);
    if (at < 0) return ATTN_OK;
    return attn_fail(ATTN_OVERFLOW,
                     "scores overflow float32 at batch %d, head %d, query %ld, key %ld: "
                     "q and k are too large for this scale",
                     b, h, i0 + at / Tk, at % Tk);
}

/* Everything a break-it bug changes in attn_sdpa, resolved once per call.
 * For ATTN_BUG_NONE it is the correct path: the given scale and rule, blocks
 * of ATTN_QUERY_BLOCK rows, logits masked, empty rows refused, no fix-ups. */
typedef struct sdpa_plan sdpa_plan;
typedef void softmax_fn(float *s, int n, int Tk);
typedef void fixup_fn(const sdpa_plan *p, float *x, long ld, int b, int h, int i0, int n, int width);
struct sdpa_plan {
    float scale;
    visibility vis;
    int block;          /* query rows per pass */
    int mask_logits;    /* blocked logits -> -INFINITY before the softmax */
    int guard;          /* refuse a row with no allowed key */
    int nan_expected;   /* the output may hold NaN: the bug's point */
    softmax_fn *softmax;
    fixup_fn *after_softmax; /* NULL, or a change to probability rows */
    fixup_fn *after_mix;     /* NULL, or a change to output rows */
    const attn_dropout *dropout; /* NULL, or dropout after the softmax */
    int H, Tq;                   /* to number the probabilities for dropout */
};

/* s (n, Tk) <- softmax over keys of each row: the correct pass 4. */
static void softmax_keys(float *s, int n, int Tk) { attn_softmax_rows(s, Tk, n, Tk); }

/* s (n, Tk): the scores of query rows i0..i0+n-1 of head (b, h).
 * Blocked logits become -INFINITY (when the plan masks logits). Refuses a
 * row with no allowed key (when the plan guards) and scores that
 * overflowed float32. */
static int mask_rows(float *s, const sdpa_plan *p, int b, int h, int i0, int n, int Tk) {
    int status = check_scores_finite(s, b, h, i0, n, Tk);
    if (status || !blocks_anything(&p->vis)) return status;
    for (int r = 0; r < n; r++) {
        float *s_r = s + (long)r * Tk;
        int allowed_count = 0;
        for (int j = 0; j < Tk; j++) {
            if (is_allowed(&p->vis, b, h, i0 + r, j)) allowed_count++;
            else if (p->mask_logits) s_r[j] = -INFINITY;
        }
        if (p->guard && allowed_count == 0) return fail_all_masked(b, h, i0 + r);
    }
    return ATTN_OK;
}

/* s (n, Tk): probability rows i0..i0+n-1 of head (b, h) <- inverted
 * dropout: entry (b, h, i, j) kept when the seeded number of its flat index
 * is >= p, then scaled by 1/(1 - p); keep, when not NULL, records it. */
static void dropout_rows(float *s, const sdpa_plan *p, int b, int h, int i0, int n, int Tk) {
    const attn_dropout *d = p->dropout;
    const float kept_scale = 1.0f / (1.0f - d->p);
    for (int r = 0; r < n; r++) {
        const uint64_t row = (((uint64_t)b * p->H + h) * p->Tq + i0 + r) * Tk;
        for (int j = 0; j < Tk; j++) {
            const int kept = attn_hash_uniform(d->seed, row + j) >= d->p;
            s[(long)r * Tk + j] = kept ? s[(long)r * Tk + j] * kept_scale : 0.0f;
            if (d->keep) d->keep[row + j] = (uint8_t)kept;
        }
    }
}

/* -------------------------------------------------------------------------
 * Break-it bugs: the variants of the passes above, kept out of the path.
 * ---------------------------------------------------------------------- */

/* bug softmax-over-queries: s (Tq, Tk) <- each column normalised over
 * queries, so columns sum to 1 instead of rows. */
static void softmax_columns(float *s, int Tq, int Tk) {
    for (int j = 0; j < Tk; j++) {
        float max = -INFINITY, sum = 0.0f;
        for (int i = 0; i < Tq; i++) max = s[(long)i * Tk + j] > max ? s[(long)i * Tk + j] : max;
        for (int i = 0; i < Tq; i++) sum += (s[(long)i * Tk + j] = expf(s[(long)i * Tk + j] - max));
        for (int i = 0; i < Tq; i++) s[(long)i * Tk + j] /= sum;
    }
}

/* bug softmax-over-queries: ds, p, dp (Tq, Tk), the softmax backward down
 * each column, ds = p * (dp - colsum(dp * p)). ds may be dp. */
static void softmax_columns_backward(float *ds, const float *p, const float *dp, int Tq, int Tk) {
    for (int j = 0; j < Tk; j++) {
        float dot = 0.0f;
        for (int i = 0; i < Tq; i++) dot += dp[(long)i * Tk + j] * p[(long)i * Tk + j];
        for (int i = 0; i < Tq; i++) ds[(long)i * Tk + j] = p[(long)i * Tk + j] * (dp[(long)i * Tk + j] - dot);
    }
}

/* bug mask-after-softmax: probs (n, Tk), row stride ld <- blocked entries
 * zeroed after the softmax, too late for the rows to sum to 1. */
static void zero_blocked(const sdpa_plan *p, float *probs, long ld, int b, int h, int i0, int n, int Tk) {
    for (int r = 0; r < n; r++)
        for (int j = 0; j < Tk; j++)
            if (!is_allowed(&p->vis, b, h, i0 + r, j)) probs[r * ld + j] = 0.0f;
}

/* bug padding-on-queries: probs (n, Tk) <- a query row the rule blocks
 * entirely is blanked instead of refused. */
static void blank_blocked_rows(const sdpa_plan *p, float *probs, long ld, int b, int h, int i0, int n, int Tk) {
    for (int r = 0; r < n; r++) {
        int any = 0;
        for (int j = 0; j < Tk && !any; j++) any = is_allowed(&p->vis, b, h, i0 + r, j);
        if (!any) memset(probs + r * ld, 0, sizeof(float) * Tk);
    }
}

/* bug mask-output: out (n, dv), row stride ld <- out.masked_fill(~allowed, 0)
 * with the (Tq, Tk) rule read over the output columns (dv == Tk). */
static void zero_blocked_outputs(const sdpa_plan *p, float *out, long ld, int b, int h, int i0, int n, int dv) {
    zero_blocked(p, out, ld, b, h, i0, n, dv);
}

/* The plan for (bug, scale, vis, dims); refuses a bug the dims cannot show. */
static int make_plan(sdpa_plan *p, int bug, float scale, const attn_visibility *vis, const attn_dims *d) {
    *p = (sdpa_plan){scale, correct_visibility(vis, d->Tk), ATTN_QUERY_BLOCK, 1, 1, 0, softmax_keys, NULL, NULL,
                     NULL, d->H, d->Tq};
    switch (bug) {
    case ATTN_BUG_SOFTMAX_OVER_QUERIES: /* needs the whole (Tq, Tk) matrix at once */
        p->block = d->Tq;
        p->softmax = softmax_columns;
        p->nan_expected = 1;
        break;
    case ATTN_BUG_MASK_AFTER_SOFTMAX:
        p->mask_logits = 0;
        p->after_softmax = zero_blocked;
        break;
    case ATTN_BUG_MASK_OUTPUT:
        if (d->dv != d->Tk)
            return attn_fail(ATTN_SHAPE_MISMATCH,
                             "bug mask-output masks the (Tq, dv) output with the (Tq, Tk) mask, "
                             "so it needs dv == Tk (got dv=%d, Tk=%d)", d->dv, d->Tk);
        p->mask_logits = 0;
        p->after_mix = zero_blocked_outputs;
        break;
    case ATTN_BUG_NO_CAUSAL_MASK: p->vis.rule.causal = 0; break;
    case ATTN_BUG_CAUSAL_UPPER: p->vis.causal_upper = 1; break;
    case ATTN_BUG_INVERTED_MASK: p->vis.invert = 1; break;
    case ATTN_BUG_PADDING_ON_QUERIES:
        if (d->Tq != d->Tk)
            return attn_fail(ATTN_SHAPE_MISMATCH, "bug padding-on-queries needs Tq == Tk (got %d, %d)", d->Tq, d->Tk);
        p->vis.transpose = 1; /* a key-padding mask now blocks query rows */
        p->guard = 0;         /* ... which are blanked instead of refused */
        p->after_softmax = blank_blocked_rows;
        break;
    case ATTN_BUG_NO_SCALE: p->scale = 1.0f; break;
    case ATTN_BUG_SCALE_BY_DK: p->scale = 1.0f / (float)d->dk; break;
    case ATTN_BUG_NO_ALL_MASKED_GUARD:
        p->guard = 0;
        p->nan_expected = 1;
        break;
    default: break; /* none, and the multi-head bugs that act outside attn_sdpa */
    }
    return ATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* The tiled path: online softmax over key tiles                            */
/* ------------------------------------------------------------------------ */

/* Query rows per block on the tiled path: each key tile, loaded once, serves
 * all of them. */
#define ATTN_TILE_QUERIES 16

/* s (n, w), row stride ld: the scores of query rows i0.. of head (b, h)
 * against keys j0..j0+w-1; blocked logits -> -INFINITY. Returns 1 when the
 * tile has no allowed key for any of the n rows (it can be skipped). */
static int mask_tile(float *s, int ld, const visibility *vis, int b, int h, int i0, int n,
                     int j0, int w) {
    const attn_visibility *r = &vis->rule;
    const int64_t first_diagonal = (int64_t)i0 + r->causal_offset, last_diagonal = first_diagonal + n - 1;
    if (r->causal && j0 > last_diagonal) return 1;
    const int below_diagonal = !r->causal || j0 + w - 1 <= first_diagonal;
    if (!r->mask.data && !r->key_padding_mask && below_diagonal) return 0; /* every key of the tile allowed */
    for (int r = 0; r < n; r++)
        for (int j = 0; j < w; j++)
            if (!is_allowed(vis, b, h, i0 + r, j0 + j)) s[(long)r * ld + j] = -INFINITY;
    return 0;
}

/* out (B, H, Tq, dv); trace (B, H, Tq, tiles, 3 + dv) or NULL;
 * q (B, H, Tq, dk), k (B, H, Tk, dk), v (B, H, Tk, dv); arguments checked;
 * vis the correct rule (no bug bends it here).
 * For each (batch, head):
 *   1. pack K^T in strips of 16 keys (as the standard path)
 *   then for each block of ATTN_TILE_QUERIES query rows, m = -inf, l = 0, acc = 0,
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
                      const visibility *vis, const attn_dims *dims, float scale, int block_keys,
                      int no_rescale) {
    const int B = dims->B, H = dims->H, Tq = dims->Tq, Tk = dims->Tk, dk = dims->dk, dv = dims->dv;
    const int bk = block_keys < Tk ? block_keys : Tk;
    const int tiles = (Tk + bk - 1) / bk;
    const int s_width = bk + 2 * ATTN_STRIP; /* a tile widened to whole strips */
    /* Scratch: K^T of one head, then per block of ATTN_TILE_QUERIES rows:
     * scores (ATTN_TILE_QUERIES, s_width), p v and acc (ATTN_TILE_QUERIES,
     * dv) each, and m, l, factor, sum (ATTN_TILE_QUERIES each). */
    const double floats = (double)dk * Tk + ATTN_TILE_QUERIES * ((double)s_width + 2.0 * dv + 4.0);
    float *kt = attn_alloc(4.0 * floats);
    if (!kt) return ATTN_TOO_LARGE;
    float *s_buf = kt + (long)dk * Tk;
    float *pv = s_buf + (long)ATTN_TILE_QUERIES * s_width;
    float *acc = pv + (long)ATTN_TILE_QUERIES * dv;
    float *m = acc + (long)ATTN_TILE_QUERIES * dv, *l = m + ATTN_TILE_QUERIES, *factor = l + ATTN_TILE_QUERIES, *sum = factor + ATTN_TILE_QUERIES;
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

            for (int i0 = 0; i0 < Tq; i0 += ATTN_TILE_QUERIES) {
                const int n = Tq - i0 < ATTN_TILE_QUERIES ? Tq - i0 : ATTN_TILE_QUERIES;
                for (int r = 0; r < n; r++) m[r] = -INFINITY, l[r] = 0.0f;
                int acc_empty = 1; /* acc not written yet: it stands for zeros */

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
                        if (acc_empty) { /* the trace reads acc */
                            memset(acc, 0, sizeof(float) * n * dv);
                            acc_empty = 0;
                        }
                    } else {
                        attn_softmax_tile_online(s, m, factor, sum, ld, n, w);
                        if (no_rescale) /* bug: old and new terms mixed at different maxima */
                            for (int r = 0; r < n; r++) factor[r] = 1.0f;
                        for (int r = 0; r < n; r++) l[r] = l[r] * factor[r] + sum[r];
                        if (acc_empty) { /* acc = 0 * factor + p v */
                            attn_gemm(acc, dv, s, ld, v_bh + (long)j0 * dv, dv, n, dv, w, 1.0f);
                            acc_empty = 0;
                        } else {
                            attn_gemm(pv, dv, s, ld, v_bh + (long)j0 * dv, dv, n, dv, w, 1.0f);
                            attn_rescale_add(acc, pv, factor, n, dv);
                        }
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

/* out (B, H, Tq, dv); probs, scores (B, H, Tq, Tk) or NULL; q (B, H, Tq, dk),
 * k (B, H, Tk, dk), v (B, H, Tk, dv): attn_sdpa_dropout without dropout. */
int attn_sdpa(float *out, float *probs, float *scores,
              const float *q, const float *k, const float *v,
              const attn_visibility *vis, const attn_dims *dims, float scale, int bug) {
    return attn_sdpa_dropout(out, probs, scores, q, k, v, vis, dims, scale, NULL, bug);
}

/* out (B, H, Tq, dv); probs, scores (B, H, Tq, Tk) or NULL; q (B, H, Tq, dk),
 * k (B, H, Tk, dk), v (B, H, Tk, dv); dropout NULL, or p, seed and keep
 * (B, H, Tq, Tk) or NULL. With probs, scores and dropout all NULL and the
 * bug ATTN_BUG_NONE or ATTN_BUG_NO_RESCALE, the tiled path (sdpa_tiled);
 * otherwise the numbered passes, plan.block query rows at a time. */
int attn_sdpa_dropout(float *out, float *probs, float *scores,
                      const float *q, const float *k, const float *v,
                      const attn_visibility *vis, const attn_dims *dims, float scale,
                      const attn_dropout *dropout, int bug) {
    attn_clear_error();
    if (dropout && !(dropout->p >= 0.0f && dropout->p < 1.0f))
        return attn_fail(ATTN_BAD_ARGUMENT, "dropout must be at least 0 and below 1 (got %g)", dropout->p);
    const int tiled = !probs && !scores && !dropout && (bug == ATTN_BUG_NONE || bug == ATTN_BUG_NO_RESCALE);
    if (!out) return attn_fail(ATTN_BAD_ARGUMENT, "out is required");
    int status = check_inputs(q, k, v, dims, scale, bug, probs || scores);
    if (status) return status;
    if (tiled) {
        const visibility rule = correct_visibility(vis, dims->Tk);
        status = sdpa_tiled(out, NULL, q, k, v, &rule, dims, scale, ATTN_TILE_KEYS, bug == ATTN_BUG_NO_RESCALE);
        /* The tiled accumulator holds sums of p v before the division by l,
         * up to l times larger than the output: with v near FLT_MAX it can
         * overflow where the normalised output fits. The passes below
         * normalise first, so they decide. */
        if (status != ATTN_OVERFLOW || bug != ATTN_BUG_NONE) return status;
        attn_clear_error();
    }
    if (bug == ATTN_BUG_NO_RESCALE)
        return attn_fail(ATTN_BAD_ARGUMENT, "bug no-rescale is in the tiled path, which keeps no probabilities");
    const int B = dims->B, H = dims->H, Tq = dims->Tq, Tk = dims->Tk, dk = dims->dk, dv = dims->dv;
    sdpa_plan plan;
    if ((status = make_plan(&plan, bug, scale, vis, dims))) return status;
    plan.dropout = dropout;

    /* Scratch: K^T for one head, plus the score rows when probs are not
     * kept (kept probabilities are written in place). */
    const double scratch_floats = (double)dk * Tk + (probs ? 0.0 : (double)plan.block * Tk);
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

            /* 1. pack K^T: kt holds strips of (dk, 16) */
            attn_pack_strips(kt, k_bh, Tk, dk);

            for (int i0 = 0; i0 < Tq; i0 += plan.block) {
                const int n = Tq - i0 < plan.block ? Tq - i0 : plan.block;
                float *s = probs ? probs + (bh * Tq + i0) * Tk : s_scratch;  /* (n, Tk) */

                /* 2. scores = scale * q k^T, one strip of keys at a time */
                attn_gemm_packed(s, Tk, q_bh + (long)i0 * dk, dk, kt, n, Tk, dk, plan.scale);
                if (scores) memcpy(scores + (bh * Tq + i0) * Tk, s, sizeof(float) * n * Tk);

                /* 3. mask the logits */
                if ((status = mask_rows(s, &plan, b, h, i0, n, Tk))) goto done;

                /* 4. softmax over keys */
                plan.softmax(s, n, Tk);
                if (plan.after_softmax) plan.after_softmax(&plan, s, Tk, b, h, i0, n, Tk);
                if (plan.dropout) dropout_rows(s, &plan, b, h, i0, n, Tk); /* 4b. dropout */

                /* 5. mix: out = probs v */
                attn_gemm(out_bh + (long)i0 * dv, dv, s, Tk, v_bh, dv, n, dv, Tk, 1.0f);
                if (plan.after_mix) plan.after_mix(&plan, out_bh + (long)i0 * dv, dv, b, h, i0, n, dv);
            }
        }
    }

    /* The NaN bugs are allowed to show their NaN. */
    if (!plan.nan_expected) status = check_output_finite(out, B, H, Tq, dv);
done:
    attn_free(kt);
    return status;
}

/* out (B, H, Tq, dv); trace (B, H, Tq, tiles, 3 + dv) or NULL; q (B, H, Tq, dk),
 * k (B, H, Tk, dk), v (B, H, Tk, dv): the arguments checked, then sdpa_tiled
 * with tiles of block_keys keys. */
int attn_sdpa_tiled(float *out, float *trace, const float *q, const float *k, const float *v,
                    const attn_visibility *vis, const attn_dims *dims, float scale,
                    int block_keys, int bug) {
    attn_clear_error();
    if (!out) return attn_fail(ATTN_BAD_ARGUMENT, "out is required");
    int status = check_inputs(q, k, v, dims, scale, bug, 0);
    if (status) return status;
    if (bug != ATTN_BUG_NONE && bug != ATTN_BUG_NO_RESCALE)
        return attn_fail(ATTN_BAD_ARGUMENT, "the tiled path knows only the bug no-rescale (got bug %d)", bug);
    if (block_keys < 1) return attn_fail(ATTN_BAD_ARGUMENT, "blockKeys must be at least 1 (got %d)", block_keys);
    const visibility rule = correct_visibility(vis, dims->Tk);
    return sdpa_tiled(out, trace, q, k, v, &rule, dims, scale, block_keys, bug == ATTN_BUG_NO_RESCALE);
}

/* ======================================================================== */
/* Scaled dot-product attention, backward                                    */
/* ======================================================================== */

/* The backward runs the forward's passes in reverse, for each (batch, head)
 * and each block of query rows:
 *   0. take the block's probabilities P as given, or recompute them (and
 *      the scores) as the forward did
 *   1. mix     : dP = dOut V^T,  dV += P^T dOut; blocked dP -> 0
 *   2. softmax : dS = P * (dP - rowsum(dP * P))
 *   3. mask    : blocked logits were constants, so their dS -> 0
 *   4. scores  : dQ = scale * dS K,  dK += scale * dS^T Q
 * A block's rows of P and dS are all its dQ rows need; dK and dV gather
 * every block's share, so they are zeroed once per head.
 *
 * The caller may pass the probabilities attn_sdpa returned, which saves one
 * more Q K^T (a fifth of the backward's work) and the exponentials. Without
 * them they are recomputed from q, k and v, which the caller holds anyway,
 * and nothing (Tq, Tk) has to stay alive between the two calls. Memory
 * stays two (block, Tk) matrices, small enough to stay in cache from one
 * pass to the next. The forward's plan (make_plan) recomputes exactly the
 * forward a bug made: given probabilities are refused with a forward bug,
 * and with grad-through-blocked.
 */

/* Whether some |x| of x (n) is at least `limit`. An OR of comparisons, not
 * a running maximum, so that the compiler vectorises it. */
static int any_at_least(const float *x, long n, float limit) {
    int any = 0;
    for (long i = 0; i < n; i++) any |= fabsf(x[i]) >= limit;
    return any;
}

/* Query rows per block of the backward. */
#define ATTN_BACKWARD_BLOCK 32

/* x (n, Tk): rows i0..i0+n-1 of head (b, h); entries of blocked pairs <- 0. */
static void zero_blocked_pairs(const sdpa_plan *p, float *x, int b, int h, int i0, int n, int Tk) {
    if (blocks_anything(&p->vis)) zero_blocked(p, x, Tk, b, h, i0, n, Tk);
}

/* -------------------------------------------------------------------------
 * Break-it bugs of the backward (the backward of a forward bug sits next to
 * that bug's forward, above).
 * ---------------------------------------------------------------------- */

/* bug softmax-backward-no-rowsum: ds = p * dp, the row sum forgotten. */
static void softmax_backward_no_rowsum(float *ds, const float *p, const float *dp, long n) {
    for (long i = 0; i < n; i++) ds[i] = p[i] * dp[i];
}

/* bug grad-through-blocked: p (n, Tk), rows i0.. <- blocked probabilities
 * taken as uniform, 1/Tk, for the backward only. */
static void uniform_blocked(const sdpa_plan *p, float *probs, int b, int h, int i0, int n, int Tk) {
    for (int r = 0; r < n; r++)
        for (int j = 0; j < Tk; j++)
            if (!is_allowed(&p->vis, b, h, i0 + r, j)) probs[(long)r * Tk + j] = 1.0f / (float)Tk;
}

/* p (n, Tk): saved probability rows i0..i0+n-1 of head (b, h). Refuses
 * what the forward cannot have returned under the plan's rule: a
 * non-finite entry, one outside [0, 1], a blocked pair that is not exactly
 * 0, a row with no allowed key, a row that does not sum to 1. */
static int check_saved_rows(const float *p, const sdpa_plan *plan, int b, int h, int i0, int n, int Tk) {
    const int rule = blocks_anything(&plan->vis);
    for (int r = 0; r < n; r++) {
        const float *p_r = p + (long)r * Tk;
        const int i = i0 + r;
        double sum = 0.0;
        int allowed_count = 0;
        for (int j = 0; j < Tk; j++) {
            const float x = p_r[j];
            if (!isfinite(x))
                return attn_fail(ATTN_NON_FINITE_INPUT,
                                 "weights (saved probabilities) have a non-finite value (%s) at batch %d, head %d, query %d, key %d",
                                 isnan(x) ? "NaN" : (x > 0 ? "Infinity" : "-Infinity"), b, h, i, j);
            if (x < 0.0f || x > 1.0f)
                return attn_fail(ATTN_BAD_ARGUMENT,
                                 "weights (saved probabilities) hold %g at batch %d, head %d, query %d, key %d: "
                                 "a probability is in [0, 1]", x, b, h, i, j);
            if (rule && !is_allowed(&plan->vis, b, h, i, j)) {
                if (x != 0.0f)
                    return attn_fail(ATTN_BAD_ARGUMENT,
                                     "weights (saved probabilities) hold %g at batch %d, head %d, query %d, key %d, "
                                     "a pair the rule blocks: pass the weights sdpa returned with this rule", x, b, h, i, j);
                continue;
            }
            allowed_count++;
            sum += x;
        }
        if (allowed_count == 0) return fail_all_masked(b, h, i);
        if (fabs(sum - 1.0) > 1e-4)
            return attn_fail(ATTN_BAD_ARGUMENT,
                             "weights (saved probabilities) of batch %d, head %d, query %d sum to %.6g, not 1: "
                             "pass the weights sdpa returned for these inputs", b, h, i, sum);
    }
    return ATTN_OK;
}

/* dq (B, H, Tq, dk), dk (B, H, Tk, dk), dv (B, H, Tk, dv); dscores, dprobs
 * (B, H, Tq, Tk) or NULL; dout (B, H, Tq, dv); probs (B, H, Tq, Tk) or NULL;
 * q, k, v as attn_sdpa (the widths are dims->dk, dims->dv). Passes 0-4 of
 * this section's opening comment, per (batch, head) and block of query rows. */
int attn_sdpa_backward(float *dq, float *dk, float *dv, float *dscores, float *dprobs,
                       const float *dout, const float *probs, const float *q, const float *k, const float *v,
                       const attn_visibility *vis, const attn_dims *dims, float scale, int bug) {
    attn_clear_error();

    /* Arguments, as the forward checks them, plus dout. */
    if (!dq || !dk || !dv || !dout) return attn_fail(ATTN_BAD_ARGUMENT, "dq, dk, dv and dout are required");
    int status = check_inputs(q, k, v, dims, scale, bug, dscores || dprobs);
    if (status) return status;
    const int B = dims->B, H = dims->H, Tq = dims->Tq, Tk = dims->Tk, Dk = dims->dk, Dv = dims->dv;
    if ((status = check_finite("dOutput", dout, B, H, Tq, Dv))) return status;
    sdpa_plan plan;
    if ((status = make_plan(&plan, bug, scale, vis, dims))) return status;
    const int keep_full = bug == ATTN_BUG_MASK_AFTER_SOFTMAX; /* softmax saw every key */
    const int through_blocked = bug == ATTN_BUG_GRAD_THROUGH_BLOCKED;
    if (probs && bug != ATTN_BUG_NONE && bug != ATTN_BUG_SOFTMAX_BACKWARD_NO_ROWSUM && !through_blocked)
        return attn_fail(ATTN_BAD_ARGUMENT,
                         "weights (saved probabilities) work with no bug or a backward bug only: "
                         "leave them out, and the backward recomputes those of the bugged forward");
    /* softmax-over-queries mixes every row of a column: one block of all rows */
    const int block = plan.softmax == softmax_columns ? Tq : ATTN_BACKWARD_BLOCK;

    /* Scratch for one head: K^T, V^T and K in strips, then for one block P,
     * dP (dP becomes dS in place), the transpose of P, then of dS, the
     * forward's output (pass 0b), and for two bugs the unmasked P or the
     * masked dOut. */
    const double BT = (double)block * Tk;
    const double scratch_floats = 2.0 * Tk * Dk + (double)Tk * Dv + 3 * BT + (double)block * Dv +
                                  (keep_full ? BT : 0) + (plan.after_mix ? (double)block * Dv : 0);
    float *kt = attn_alloc(4.0 * scratch_floats);
    if (!kt) return ATTN_TOO_LARGE;
    float *vt = kt + (long)Tk * Dk;       /* V^T strips */
    float *kc = vt + (long)Tk * Dv;       /* K strips (columns of K) */
    float *p = kc + (long)Tk * Dk;        /* (block, Tk) */
    float *dp = p + (long)block * Tk;     /* (block, Tk) */
    float *pt = dp + (long)block * Tk;    /* (Tk, block): P^T, then dS^T */
    float *out_blk = pt + (long)block * Tk; /* (block, Dv): the forward's output */
    float *p_full = out_blk + (long)block * Dv; /* (block, Tk), mask-after-softmax */
    float *dout_masked = p_full + (keep_full ? (long)block * Tk : 0); /* (block, Dv), mask-output */

    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const long bh = (long)b * H + h;
            const float *q_bh = q + bh * Tq * Dk;        /* (Tq, Dk) */
            const float *k_bh = k + bh * Tk * Dk;        /* (Tk, Dk) */
            const float *v_bh = v + bh * Tk * Dv;        /* (Tk, Dv) */
            const float *dout_bh = dout + bh * Tq * Dv;  /* (Tq, Dv) */
            float *dq_bh = dq + bh * Tq * Dk, *dk_bh = dk + bh * Tk * Dk, *dv_bh = dv + bh * Tk * Dv;
            attn_pack_strips(kt, k_bh, Tk, Dk);
            attn_pack_strips(vt, v_bh, Tk, Dv);
            attn_pack_columns(kc, k_bh, Tk, Dk);
            memset(dk_bh, 0, sizeof(float) * Tk * Dk);
            memset(dv_bh, 0, sizeof(float) * Tk * Dv);
            /* Probabilities of a row sum to 1 give |p v| <= max |v|, up to
             * rounding: only v near FLT_MAX, or a bug's probabilities, can
             * make the forward's output overflow. */
            const int check_out = !plan.nan_expected &&
                                  (bug != ATTN_BUG_NONE || any_at_least(v_bh, (long)Tk * Dv, FLT_MAX / 4));

            for (int i0 = 0; i0 < Tq; i0 += block) {
                const int n = Tq - i0 < block ? Tq - i0 : block;
                const float *q_blk = q_bh + (long)i0 * Dk;     /* (n, Dk) */
                float *dscores_blk = dscores ? dscores + (bh * Tq + i0) * Tk : NULL;
                float *dprobs_blk = dprobs ? dprobs + (bh * Tq + i0) * Tk : NULL;

                /* 0. the probabilities pr: the saved ones, or recomputed as
                 * the forward made them, p = softmax(mask(scale * q k^T)) */
                const float *pr = p;
                if (probs) {
                    pr = probs + (bh * Tq + i0) * Tk;
                    if ((status = check_saved_rows(pr, &plan, b, h, i0, n, Tk))) goto done;
                    if (through_blocked) {
                        memcpy(p, pr, sizeof(float) * n * Tk);
                        pr = p;
                    }
                } else {
                    attn_gemm_packed(p, Tk, q_blk, Dk, kt, n, Tk, Dk, plan.scale);
                    if ((status = mask_rows(p, &plan, b, h, i0, n, Tk))) goto done;
                    plan.softmax(p, n, Tk);
                    if (keep_full) memcpy(p_full, p, sizeof(float) * n * Tk);
                    if (plan.after_softmax) plan.after_softmax(&plan, p, Tk, b, h, i0, n, Tk);
                }

                /* 0b. the forward's output out = p v of the block, when it can
                 * overflow: the forward refuses such a call, and so does its
                 * backward, with the same message */
                if (check_out) {
                    attn_gemm(out_blk, Dv, pr, Tk, v_bh, Dv, n, Dv, Tk, 1.0f);
                    if (plan.after_mix) plan.after_mix(&plan, out_blk, Dv, b, h, i0, n, Dv);
                    const long at = attn_find_non_finite(out_blk, (long)n * Dv);
                    if (at >= 0) {
                        status = fail_output_overflow(b, h, i0 + at / Dv, at % Dv);
                        goto done;
                    }
                }
                if (through_blocked) uniform_blocked(&plan, p, b, h, i0, n, Tk);

                /* 1. mix: out = p v, so dp = dout v^T and dv += p^T dout */
                const float *g = dout_bh + (long)i0 * Dv;  /* (n, Dv) */
                if (plan.after_mix) { /* bug mask-output: the output was masked, so is its gradient */
                    memcpy(dout_masked, g, sizeof(float) * n * Dv);
                    plan.after_mix(&plan, dout_masked, Dv, b, h, i0, n, Dv);
                    g = dout_masked;
                }
                attn_gemm_packed(dp, Tk, g, Dv, vt, n, Tk, Dv, 1.0f);
                attn_transpose(pt, pr, n, Tk);
                attn_gemm_add(dv_bh, Dv, pt, n, g, Dv, Tk, Dv, n, 1.0f);
                /* a blocked probability is a constant 0: it takes no gradient */
                if (!plan.after_mix && !through_blocked) zero_blocked_pairs(&plan, dp, b, h, i0, n, Tk);
                if (dprobs_blk) memcpy(dprobs_blk, dp, sizeof(float) * n * Tk);

                /* 2. softmax: ds = p * (dp - rowsum(dp * p)), in place in dp */
                if (bug == ATTN_BUG_SOFTMAX_BACKWARD_NO_ROWSUM) softmax_backward_no_rowsum(dp, pr, dp, (long)n * Tk);
                else if (plan.softmax == softmax_columns) softmax_columns_backward(dp, pr, dp, n, Tk);
                else attn_softmax_backward_rows(dp, keep_full ? p_full : pr, dp, Tk, n, Tk);

                /* 3. mask: a blocked logit was replaced by -INFINITY, a constant */
                if (plan.mask_logits && !through_blocked) zero_blocked_pairs(&plan, dp, b, h, i0, n, Tk);
                if (dscores_blk) memcpy(dscores_blk, dp, sizeof(float) * n * Tk);

                /* 4. scores = scale * q k^T: dq = scale * ds k, dk += scale * ds^T q */
                attn_gemm_packed(dq_bh + (long)i0 * Dk, Dk, dp, Tk, kc, n, Dk, Tk, plan.scale);
                attn_transpose(pt, dp, n, Tk);
                attn_gemm_add(dk_bh, Dk, pt, n, q_blk, Dk, Tk, Dk, n, plan.scale);
            }
        }
    }

    /* Finite inputs and probabilities in [0, 1] can still overflow float32
     * in the products; say so rather than return Infinity. */
    if (!plan.nan_expected) {
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

/* ======================================================================== */
/* Scratch of one call                                                       */
/* ======================================================================== */

/* The largest single attn_alloc block of each path above (one is live at a
 * time), in floats, plus the block header: keep in step with them. */
double attn_sdpa_scratch_bytes(const attn_dims *d) {
    const double Tq = d->Tq, Tk = d->Tk, dk = d->dk, dv = d->dv;
    const double rows = fmax(Tq, ATTN_QUERY_BLOCK), block = fmax(Tq, ATTN_BACKWARD_BLOCK);
    const double forward = dk * Tk + rows * Tk;
    const double tiled = dk * Tk + ATTN_TILE_QUERIES * (Tk + 2.0 * ATTN_STRIP + 2.0 * dv + 4.0);
    const double backward = 2.0 * Tk * dk + Tk * dv + 4.0 * block * Tk + 2.0 * block * dv;
    return 4.0 * fmax(forward, fmax(tiled, backward)) + 2 * ALLOC_HEADER;
}

/* ======================================================================== */
/* Observability                                                             */
/* ======================================================================== */

/* Whether badness x beats the worst so far; NaN beats everything once. */
static int worse(double x, double worst_so_far) {
    if (isnan(worst_so_far)) return 0;
    return isnan(x) || x > worst_so_far;
}

/* stats[4], where[7]: see attention.h. scores (or NULL), probs (B, H, Tq, Tk). */
int attn_observe(float *stats, int32_t *where, const float *scores, const float *probs,
                 const attn_visibility *vis, int B, int H, int Tq, int Tk) {
    attn_clear_error();
    if (!stats || !where || !probs) return attn_fail(ATTN_BAD_ARGUMENT, "stats, where and probs are required");
    if (B < 1 || H < 1 || Tq < 1 || Tk < 1)
        return attn_fail(ATTN_BAD_ARGUMENT, "dims must be positive: B=%d H=%d Tq=%d Tk=%d", B, H, Tq, Tk);
    const visibility rule = correct_visibility(vis, Tk);
    double max_score = 0, blocked = 0, max_row_error = 0, max_forbidden = 0;
    for (int w = 0; w < 7; w++) where[w] = -1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++) {
                const long row = (((long)b * H + h) * Tq + i) * Tk;
                double sum = 0;
                for (int j = 0; j < Tk; j++) {
                    /* A NaN score is the worst too (fmax would skip it). */
                    if (scores && worse(fabs(scores[row + j]), max_score)) max_score = fabs(scores[row + j]);
                    sum += probs[row + j];
                    if (is_allowed(&rule, b, h, i, j)) continue;
                    blocked++;
                    const double p = fabs(probs[row + j]);
                    if (worse(p, max_forbidden)) {
                        max_forbidden = p;
                        where[3] = b, where[4] = h, where[5] = i, where[6] = j;
                    }
                }
                const double error = fabs(sum - 1.0);
                if (worse(error, max_row_error)) {
                    max_row_error = error;
                    where[0] = b, where[1] = h, where[2] = i;
                }
            }
    stats[0] = (float)max_score;
    stats[1] = (float)(blocked / ((double)B * H * Tq * Tk));
    stats[2] = (float)max_row_error;
    stats[3] = (float)max_forbidden;
    return ATTN_OK;
}

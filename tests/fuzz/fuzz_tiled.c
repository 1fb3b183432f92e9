/* fuzz_tiled.c: attn_sdpa_tiled, the online-softmax path, with fuzzed
 * dims, data, masks, key padding, causal offsets, key tile widths (1 up,
 * and 0, negative or huge ones it must refuse), with and without the trace,
 * and bug ids (only none and no-rescale are its own).
 * On success with no bug: the output is finite and equals probs @ v of the
 * standard path within float32 rounding, the traced and untraced calls give
 * the same bits, and the trace is the recurrence: per query row the running
 * max never falls, the rescale factor is in [0, 1], the running sum is
 * finite and ends above 0, and out = accumulator / sum after the last tile.
 * A refusal for a row with no allowed key names a row the rule really
 * leaves empty. On failure: a known status and a message. See fuzz.h. */
#include "fuzz.h"

static int take_block_keys(bytes_in *in) {
    const uint8_t kind = take_u8(in);
    if (kind < 240) return 1 + kind % 12;
    static const int odd[] = {0, -1, INT_MIN, INT_MAX, 128, 1 << 20};
    return odd[kind % 6];
}

/* Whether some row of a valid call has no allowed key. */
static int some_row_empty(const sdpa_call *c) {
    const attn_dims *d = &c->dims;
    for (int b = 0; b < d->B; b++)
        for (int h = 0; h < d->H; h++)
            for (int i = 0; i < d->Tq; i++) {
                int any = 0;
                for (int j = 0; j < d->Tk; j++) any |= rule_allows(c->rule, d->Tk, b, h, i, j);
                if (!any) return 1;
            }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes_in in = {data, size, 0};
    sdpa_call c;
    sdpa_call_take(&in, &c);
    const attn_dims *d = &c.dims;
    const int block_keys = take_block_keys(&in);
    const uint8_t flags = take_u8(&in);
    const int bug = (flags & 1) ? ATTN_BUG_NO_RESCALE : (flags & 2) ? take_range(&in, -2, ATTN_BUG_COUNT + 1) : ATTN_BUG_NONE;
    const int traced = (flags & 4) != 0;
    /* the trace (B, H, Tq, tiles, 3 + dv), for the small dims */
    const long Tk = c.valid ? d->Tk : 1, dv = c.valid ? d->dv : 1;
    const long bk = block_keys >= 1 && block_keys < Tk ? block_keys : Tk;
    const long tiles = (Tk + bk - 1) / bk;
    const long ntrace = c.nout / dv * tiles * (3 + dv);
    float *out = malloc(sizeof(float) * c.nout), *out2 = malloc(sizeof(float) * c.nout);
    float *trace = malloc(sizeof(float) * ntrace), *probs = malloc(sizeof(float) * c.nw);
    uint8_t *allowed = malloc(c.nw);

    const int status = attn_sdpa_tiled(out, traced ? trace : NULL, c.q, c.k, c.v, c.rule, d, c.scale, block_keys, bug);
    if (status != ATTN_OK) {
        check_refusal(status, "attn_sdpa_tiled");
        if (status == ATTN_ALL_MASKED_ROW)
            INVARIANT(c.valid && some_row_empty(&c), "refused a row with no allowed key, but every row has one");
        goto done;
    }
    INVARIANT(c.valid, "dims B=%d H=%d Tq=%d Tk=%d dk=%d dv=%d accepted", d->B, d->H, d->Tq, d->Tk, d->dk, d->dv);
    INVARIANT(c.finite, "a non-finite input was accepted");
    INVARIANT(isfinite(c.scale), "a non-finite scale was accepted");
    INVARIANT(block_keys >= 1, "block_keys %d accepted", block_keys);
    INVARIANT(bug == ATTN_BUG_NONE || bug == ATTN_BUG_NO_RESCALE, "bug %d accepted by the tiled path", bug);
    INVARIANT(attn_last_error()[0] == '\0', "success left a message: %s", attn_last_error());
    check_finite_all(out, c.nout, "out");
    if (bug != ATTN_BUG_NONE) goto done;

    /* the trace only watches: the other call gives the same bits */
    const int again = attn_sdpa_tiled(out2, traced ? NULL : trace, c.q, c.k, c.v, c.rule, d, c.scale, block_keys, bug);
    INVARIANT(again == ATTN_OK, "the same call refused with%s the trace: %s", traced ? "out" : "", attn_last_error());
    INVARIANT(memcmp(out, out2, sizeof(float) * c.nout) == 0, "the trace changed the output");

    /* the recurrence, row by row */
    for (long row = 0; row < c.nout / dv; row++) {
        float m_old = -INFINITY;
        for (long t = 0; t < tiles; t++) {
            const float *tr = trace + (row * tiles + t) * (3 + dv);
            INVARIANT(tr[0] >= m_old, "row %ld tile %ld: running max fell from %g to %g", row, t, m_old, tr[0]);
            INVARIANT(tr[2] >= 0.0f && tr[2] <= 1.0f, "row %ld tile %ld: rescale factor %g", row, t, tr[2]);
            INVARIANT(isfinite(tr[1]) && tr[1] >= 0.0f, "row %ld tile %ld: running sum %g", row, t, tr[1]);
            m_old = tr[0];
        }
        const float *last = trace + (row * tiles + tiles - 1) * (3 + dv);
        INVARIANT(last[1] > 0.0f, "row %ld: running sum %g at the end of an accepted row", row, last[1]);
        for (long col = 0; col < dv; col++) {
            const double want = (double)last[3 + col] / last[1], got = out[row * dv + col];
            INVARIANT(fabs(got - want) <= 1e-6 * fabs(want) + 1e-37, "row %ld col %ld: out %g, accumulator / sum %g",
                      row, col, got, want);
        }
    }

    /* the standard path: out = probs @ v */
    const int standard = attn_sdpa(out2, probs, NULL, c.q, c.k, c.v, c.rule, d, c.scale, ATTN_BUG_NONE);
    INVARIANT(standard == ATTN_OK, "the standard path refused what the tiled path ran: %s", attn_last_error());
    sdpa_call_allowed(&c, allowed, "attn_sdpa_tiled");
    check_probabilities(probs, allowed, c.nw / d->Tk, d->Tk, "attn_sdpa");
    check_probs_times_v(out, probs, c.v, d, 1, "attn_sdpa_tiled");
done:
    sdpa_call_free(&c);
    free(out), free(out2), free(trace), free(probs), free(allowed);
    return 0;
}

/* fuzz_sdpa.c: attn_sdpa with fuzzed dims, data, masks (any strides,
 * including 0), key padding, causal offsets, bug ids and scale.
 * On success with the correct path: the output is finite and equals
 * probs @ v, probability rows sum to 1, blocked pairs weigh exactly 0, a row
 * with no allowed key was refused, the no-probs path gives the same output;
 * on failure: a known status and a message. See fuzz.h. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes_in in = {data, size, 0};
    sdpa_call c;
    sdpa_call_take(&in, &c);
    const attn_dims *d = &c.dims;
    float *out = malloc(sizeof(float) * c.nout), *out2 = malloc(sizeof(float) * c.nout);
    float *probs = malloc(sizeof(float) * c.nw), *scores = malloc(sizeof(float) * c.nw);
    uint8_t *allowed = malloc(c.nw);

    const int status = attn_sdpa(out, c.keep ? probs : NULL, c.keep_scores ? scores : NULL, c.q, c.k, c.v,
                                 c.rule, d, c.scale, c.bug);
    if (status != ATTN_OK) {
        check_refusal(status, "attn_sdpa");
        goto done;
    }
    INVARIANT(c.valid, "dims B=%d H=%d Tq=%d Tk=%d dk=%d dv=%d accepted", d->B, d->H, d->Tq, d->Tk, d->dk, d->dv);
    INVARIANT(c.finite, "a non-finite input was accepted");
    INVARIANT(isfinite(c.scale), "a non-finite scale was accepted");
    INVARIANT(attn_last_error()[0] == '\0', "success left a message: %s", attn_last_error());
    INVARIANT(c.bug >= 0 && c.bug < ATTN_BUG_COUNT, "bug %d accepted", c.bug);
    if (c.bug != ATTN_BUG_SOFTMAX_OVER_QUERIES && c.bug != ATTN_BUG_NO_ALL_MASKED_GUARD) check_finite_all(out, c.nout, "out");
    if (c.bug != ATTN_BUG_NONE) goto done;

    sdpa_call_allowed(&c, allowed, "attn_sdpa");
    if (c.keep) {
        check_probabilities(probs, allowed, c.nw / d->Tk, d->Tk, "attn_sdpa");
        /* the no-probs path (the tiled online softmax) computes the same
         * output, up to float32 rounding of its running rescales */
        const int again = attn_sdpa(out2, NULL, NULL, c.q, c.k, c.v, c.rule, d, c.scale, c.bug);
        INVARIANT(again == ATTN_OK, "the no-probs path refused what the probs path ran: %s", attn_last_error());
        check_probs_times_v(out, probs, c.v, d, 0, "attn_sdpa");
        check_probs_times_v(out2, probs, c.v, d, 1, "attn_sdpa, no probs");
    }
done:
    sdpa_call_free(&c);
    free(out), free(out2), free(probs), free(scores), free(allowed);
    return 0;
}

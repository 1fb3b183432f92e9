/* fuzz_backward.c: attn_sdpa_backward on the calls fuzz_sdpa makes (see
 * fuzz.h), with a fuzzed dOutput.
 * On success with the correct path: every gradient is finite; dScores and
 * dProbs are exactly 0 on blocked pairs; each dScores row sums to 0 (the
 * softmax's gradient); dv = probs^T @ dOutput and, on allowed pairs,
 * dProbs = dOutput @ v^T, with probs from the forward; a key no query may
 * see gets exactly 0 in dk and dv. On failure: a known status and a message,
 * and the forward refuses the same call unless dOutput is at fault. */
#include "fuzz.h"

/* The backward given the forward's probabilities computes what it computes
 * when it recomputes them, bit for bit; with one entry spoiled (made NaN,
 * negative, above 1, or nonzero on a blocked pair) it refuses the call. */
static void check_saved_probs(const sdpa_call *c, const float *dout, float *probs,
                              const float *dq, const float *dk, const float *dv, bytes_in *in) {
    const attn_dims *d = &c->dims;
    float *sq = malloc(sizeof(float) * c->nq), *sk = malloc(sizeof(float) * c->nk), *sv = malloc(sizeof(float) * c->nv);
    int status = attn_sdpa_backward(sq, sk, sv, NULL, NULL, dout, probs, c->q, c->k, c->v, c->rule, d, c->scale, c->bug);
    INVARIANT(status == ATTN_OK, "the backward refused the forward's own probabilities: %s", attn_last_error());
    INVARIANT(!memcmp(sq, dq, sizeof(float) * c->nq) && !memcmp(sk, dk, sizeof(float) * c->nk) &&
              !memcmp(sv, dv, sizeof(float) * c->nv), "gradients from saved probabilities differ from recomputed ones");
    const long at = take_u32(in) % c->nw;
    const float kept = probs[at];
    const float spoiled[] = {NAN, -0.25f, 1.5f, kept <= 0.75f ? kept + 0.25f : kept - 0.25f};
    probs[at] = spoiled[take_u8(in) % 4];
    status = attn_sdpa_backward(sq, sk, sv, NULL, NULL, dout, probs, c->q, c->k, c->v, c->rule, d, c->scale, c->bug);
    INVARIANT(status != ATTN_OK, "the backward took spoiled probabilities (entry %ld: %g for %g)", at, probs[at], kept);
    check_refusal(status, "attn_sdpa_backward with spoiled probabilities");
    probs[at] = kept;
    free(sq), free(sk), free(sv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes_in in = {data, size, 0};
    sdpa_call c;
    sdpa_call_take(&in, &c);
    const attn_dims *d = &c.dims;
    float *dout = malloc(sizeof(float) * c.nout);
    const int dout_finite = fill_floats(&in, dout, c.nout);
    float *dq = malloc(sizeof(float) * c.nq), *dk = malloc(sizeof(float) * c.nk), *dv = malloc(sizeof(float) * c.nv);
    float *dscores = malloc(sizeof(float) * c.nw), *dprobs = malloc(sizeof(float) * c.nw);
    float *out = malloc(sizeof(float) * c.nout), *probs = malloc(sizeof(float) * c.nw);
    uint8_t *allowed = malloc(c.nw);

    const int status = attn_sdpa_backward(dq, dk, dv, c.keep ? dscores : NULL, c.keep ? dprobs : NULL,
                                          dout, NULL, c.q, c.k, c.v, c.rule, d, c.scale, c.bug);
    const int forward = attn_sdpa(out, probs, NULL, c.q, c.k, c.v, c.rule, d, c.scale, c.bug);
    if (status != ATTN_OK) {
        attn_sdpa_backward(dq, dk, dv, NULL, NULL, dout, NULL, c.q, c.k, c.v, c.rule, d, c.scale, c.bug);
        check_refusal(status, "attn_sdpa_backward");
        INVARIANT(forward != ATTN_OK || !dout_finite || status == ATTN_OVERFLOW,
                  "backward refused (%d) what the forward ran", status);
        goto done;
    }
    INVARIANT(c.valid && c.finite && dout_finite && isfinite(c.scale), "backward accepted a bad call");
    INVARIANT(c.bug >= 0 && c.bug < ATTN_BUG_COUNT, "bug %d accepted", c.bug);
    if (c.bug != ATTN_BUG_NONE) goto done;
    INVARIANT(forward == ATTN_OK, "the forward refused what the backward ran: %s", attn_last_error());
    check_finite_all(dq, c.nq, "dq");
    check_finite_all(dk, c.nk, "dk");
    check_finite_all(dv, c.nv, "dv");
    sdpa_call_allowed(&c, allowed, "attn_sdpa_backward");
    const int B = d->B, H = d->H, Tq = d->Tq, Tk = d->Tk, Dk = d->dk, Dv = d->dv;
    for (long bh = 0; bh < (long)B * H; bh++) {
        for (int j = 0; j < Tk; j++) {
            int seen = 0;
            for (int i = 0; i < Tq; i++) seen |= allowed[(bh * Tq + i) * Tk + j];
            for (int col = 0; col < Dv; col++) {
                double want = 0, size_sum = 0;
                for (int i = 0; i < Tq; i++) {
                    const double term = (double)probs[(bh * Tq + i) * Tk + j] * dout[(bh * Tq + i) * Dv + col];
                    want += term, size_sum += fabs(term);
                }
                const float got = dv[(bh * Tk + j) * Dv + col];
                INVARIANT(fabs(got - want) <= 1e-4 * size_sum + 1e-30, "dv[%ld, %d, %d] = %g, probs^T @ dout = %g", bh, j, col, got, want);
                if (!seen) INVARIANT(got == 0.0f, "dv of a key no query sees is %g", got);
            }
            for (int col = 0; col < Dk && !seen; col++)
                INVARIANT(dk[(bh * Tk + j) * Dk + col] == 0.0f, "dk of a key no query sees is %g", dk[(bh * Tk + j) * Dk + col]);
        }
        for (int i = 0; i < Tq && c.keep; i++) {
            double row = 0, row_size = 0;
            for (int j = 0; j < Tk; j++) {
                const long at = (bh * Tq + i) * Tk + j;
                INVARIANT(isfinite(dscores[at]) && isfinite(dprobs[at]), "non-finite dScores or dProbs at %ld", at);
                /* each dScores entry is P (dP - sum P dP): rounding scales with P |dP| */
                row += dscores[at], row_size += (double)probs[at] * fabs(dprobs[at]) + fabs(dscores[at]);
                if (!allowed[at]) {
                    INVARIANT(dscores[at] == 0.0f && dprobs[at] == 0.0f, "blocked pair %ld: dScores %g dProbs %g", at, dscores[at], dprobs[at]);
                    continue;
                }
                double want = 0, size_sum = 0;
                for (int col = 0; col < Dv; col++) {
                    const double term = (double)dout[(bh * Tq + i) * Dv + col] * c.v[(bh * Tk + j) * Dv + col];
                    want += term, size_sum += fabs(term);
                }
                INVARIANT(fabs(dprobs[at] - want) <= 1e-4 * size_sum + 1e-30, "dProbs[%ld] = %g, dout @ v^T = %g", at, dprobs[at], want);
            }
            INVARIANT(fabs(row) <= 1e-5 * (Tk + 1) * row_size + 1e-30, "dScores row %d of head %ld sums to %g", i, bh, row);
        }
    }
    check_saved_probs(&c, dout, probs, dq, dk, dv, &in);
done:
    sdpa_call_free(&c);
    free(dout), free(dq), free(dk), free(dv), free(dscores), free(dprobs), free(out), free(probs), free(allowed);
    return 0;
}

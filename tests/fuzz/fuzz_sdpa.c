/* fuzz_sdpa.c: attn_sdpa with fuzzed dims, data, masks (any strides,
 * including 0), key padding, causal offsets, bug ids and scale.
 * On success with the correct path: the output is finite and equals
 * probs @ v, probability rows sum to 1, blocked pairs weigh exactly 0, a row
 * with no allowed key was refused, the no-probs path gives the same output;
 * on failure: a known status and a message. See fuzz.h. */
#include "fuzz.h"

/* The visibility rule, written here again from its definition in attention.h. */
static int rule_allows(const attn_visibility *vis, int Tk, int b, int h, int i, int j) {
    const attn_mask *m = &vis->mask;
    if (m->data && !m->data[b * m->sb + h * m->sh + i * m->sq + j * m->sk]) return 0;
    if (vis->key_padding_mask && !vis->key_padding_mask[(long)b * Tk + j]) return 0;
    return !vis->causal || (int64_t)j <= (int64_t)i + vis->causal_offset;
}

/* A dim: small, or now and then one the core must refuse. */
static int take_dim(bytes_in *in, int max) {
    const uint8_t kind = take_u8(in);
    if (kind < 244) return 1 + kind % max;
    static const int bad[] = {0, -1, INT_MIN, INT_MAX};
    return bad[kind % 4];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes_in in = {data, size, 0};
    const attn_dims dims = {take_dim(&in, 3), take_dim(&in, 3), take_dim(&in, 10),
                            take_dim(&in, 10), take_dim(&in, 10), take_dim(&in, 10)};
    const int B = dims.B, H = dims.H, Tq = dims.Tq, Tk = dims.Tk, dk = dims.dk, dv = dims.dv;
    const int valid = B > 0 && H > 0 && Tq > 0 && Tk > 0 && dk > 0 && dv > 0 &&
                      B <= 3 && H <= 3 && Tq <= 10 && Tk <= 10 && dk <= 10 && dv <= 10;
    /* Buffers for the largest valid dims: a refused call must not read them. */
    const int sB = valid ? B : 1, sH = valid ? H : 1, sTq = valid ? Tq : 1, sTk = valid ? Tk : 1;
    const int sdk = valid ? dk : 1, sdv = valid ? dv : 1;
    const long nq = (long)sB * sH * sTq * sdk, nk = (long)sB * sH * sTk * sdk, nv = (long)sB * sH * sTk * sdv;
    const long nout = (long)sB * sH * sTq * sdv, nw = (long)sB * sH * sTq * sTk;
    float *q = malloc(sizeof(float) * nq), *k = malloc(sizeof(float) * nk), *v = malloc(sizeof(float) * nv);
    float *out = malloc(sizeof(float) * nout), *out2 = malloc(sizeof(float) * nout);
    float *probs = malloc(sizeof(float) * nw), *scores = malloc(sizeof(float) * nw);
    uint8_t *allowed = malloc(nw);

    /* The rule: a mask with fuzzed strides, key padding, causal and offset. */
    attn_visibility vis = {{NULL, 0, 0, 0, 0}, NULL, 0, 0};
    const uint8_t flags = take_u8(&in);
    uint8_t *mask = NULL, *kpm = NULL;
    if (flags & 1) {
        vis.mask.sb = take_range(&in, 0, 40), vis.mask.sh = take_range(&in, 0, 40);
        vis.mask.sq = take_range(&in, 0, 40), vis.mask.sk = take_range(&in, 0, 40);
        const long n = (sB - 1) * vis.mask.sb + (sH - 1) * vis.mask.sh + (sTq - 1) * vis.mask.sq + (sTk - 1) * vis.mask.sk + 1;
        mask = malloc(n);
        const uint8_t density = take_u8(&in);
        for (long i = 0; i < n; i++) mask[i] = take_u8(&in) < density ? 0 : take_range(&in, 1, 3);
        vis.mask.data = mask;
    }
    if (flags & 2) {
        kpm = malloc((size_t)sB * sTk);
        for (long i = 0; i < (long)sB * sTk; i++) kpm[i] = take_u8(&in) % 5 != 0;
        vis.key_padding_mask = kpm;
    }
    vis.causal = (flags & 4) != 0;
    vis.causal_offset = take_offset(&in);
    const int bug = (flags & 8) ? take_range(&in, -2, ATTN_BUG_COUNT + 1) : ATTN_BUG_NONE;
    const float scale = (flags & 16) ? take_float(&in) : 1.0f / sqrtf((float)sdk);
    const int keep = (flags & 32) == 0, keep_scores = (flags & 64) != 0;
    const int rule_given = (flags & 128) == 0 || vis.mask.data || vis.key_padding_mask || vis.causal;

    int finite = fill_floats(&in, q, nq);
    finite &= fill_floats(&in, k, nk);
    finite &= fill_floats(&in, v, nv);

    const int status = attn_sdpa(out, keep ? probs : NULL, keep_scores ? scores : NULL, q, k, v,
                                 rule_given ? &vis : NULL, &dims, scale, bug);
    if (status != ATTN_OK) {
        check_refusal(status, "attn_sdpa");
        goto done;
    }
    INVARIANT(valid, "dims B=%d H=%d Tq=%d Tk=%d dk=%d dv=%d accepted", B, H, Tq, Tk, dk, dv);
    INVARIANT(finite, "a non-finite input was accepted");
    INVARIANT(isfinite(scale), "a non-finite scale was accepted");
    INVARIANT(attn_last_error()[0] == '\0', "success left a message: %s", attn_last_error());
    INVARIANT(bug >= 0 && bug < ATTN_BUG_COUNT, "bug %d accepted", bug);
    if (bug != ATTN_BUG_SOFTMAX_OVER_QUERIES && bug != ATTN_BUG_NO_ALL_MASKED_GUARD) check_finite_all(out, nout, "out");
    if (bug != ATTN_BUG_NONE) goto done;

    /* The correct path: the rule as written above, row by row. */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++) {
                int any = 0;
                for (int j = 0; j < Tk; j++) {
                    const long at = (((long)b * H + h) * Tq + i) * Tk + j;
                    allowed[at] = (uint8_t)(!rule_given || rule_allows(&vis, Tk, b, h, i, j));
                    any |= allowed[at];
                }
                INVARIANT(any, "row b=%d h=%d i=%d has no allowed key but was not refused", b, h, i);
            }
    if (keep) {
        check_probabilities(probs, allowed, (long)B * H * Tq, Tk, "attn_sdpa");
        /* out = probs @ v, in double */
        for (long bh = 0; bh < (long)B * H; bh++)
            for (int i = 0; i < Tq; i++)
                for (int c = 0; c < dv; c++) {
                    double want = 0, size_sum = 0;
                    for (int j = 0; j < Tk; j++) {
                        const double term = (double)probs[(bh * Tq + i) * Tk + j] * v[(bh * Tk + j) * dv + c];
                        want += term;
                        size_sum += fabs(term);
                    }
                    const float got = out[(bh * Tq + i) * dv + c];
                    INVARIANT(fabs(got - want) <= 1e-5 * size_sum + 1e-30, "out[%ld, %d, %d] = %g, probs @ v = %g", bh, i, c, got, want);
                }
        /* the no-probs path computes the same passes */
        const int again = attn_sdpa(out2, NULL, NULL, q, k, v, rule_given ? &vis : NULL, &dims, scale, bug);
        INVARIANT(again == ATTN_OK, "the no-probs path refused what the probs path ran: %s", attn_last_error());
        INVARIANT(memcmp(out, out2, sizeof(float) * nout) == 0, "the no-probs path gives another output");
    }
done:
    free(q), free(k), free(v), free(out), free(out2), free(probs), free(scores), free(allowed), free(mask), free(kpm);
    return 0;
}

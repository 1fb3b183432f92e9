/* fuzz_observe.c: attn_allowed_pairs and attn_observe with fuzzed dims
 * (including 0, negative and INT_MIN/INT_MAX ones, which must be refused
 * before anything is read), masks with any strides, key padding, causal
 * offsets at the ends of int, and weights with NaN and infinities.
 * allowed_pairs must match the rule as written here from attention.h;
 * observe's blocked fraction must count the same pairs, its locations must
 * be in range (or -1) and its maxima must be those of the data. */
#include "fuzz.h"

static int take_dim(bytes_in *in) {
    const uint8_t kind = take_u8(in);
    if (kind < 240) return 1 + kind % 6;
    static const int bad[] = {0, -1, INT_MIN, -7};
    return bad[kind % 4];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes_in in = {data, size, 0};
    const int B = take_dim(&in), H = take_dim(&in), Tq = take_dim(&in), Tk = take_dim(&in);
    const int valid = B > 0 && H > 0 && Tq > 0 && Tk > 0;
    const long n = valid ? (long)B * H * Tq * Tk : 1;
    const int sB = valid ? B : 1, sH = valid ? H : 1, sTq = valid ? Tq : 1, sTk = valid ? Tk : 1;
    attn_visibility vis = {{NULL, 0, 0, 0, 0}, NULL, 0, 0};
    const uint8_t flags = take_u8(&in);
    uint8_t *mask = NULL, *kpm = NULL;
    if (flags & 1) {
        vis.mask.sb = take_range(&in, 0, 50), vis.mask.sh = take_range(&in, 0, 50);
        vis.mask.sq = take_range(&in, 0, 50), vis.mask.sk = take_range(&in, 0, 50);
        const long m = (sB - 1) * vis.mask.sb + (sH - 1) * vis.mask.sh + (sTq - 1) * vis.mask.sq + (sTk - 1) * vis.mask.sk + 1;
        mask = malloc(m);
        for (long i = 0; i < m; i++) mask[i] = take_u8(&in) % 3;
        vis.mask.data = mask;
    }
    if (flags & 2) {
        kpm = malloc((size_t)sB * sTk);
        for (long i = 0; i < (long)sB * sTk; i++) kpm[i] = take_u8(&in) % 4 != 0;
        vis.key_padding_mask = kpm;
    }
    vis.causal = (flags & 4) != 0;
    vis.causal_offset = take_offset(&in);
    const attn_visibility *rule = (flags & 8) && !vis.mask.data && !vis.key_padding_mask && !vis.causal ? NULL : &vis;

    uint8_t *allowed = malloc(n);
    float *probs = malloc(sizeof(float) * n), *scores = malloc(sizeof(float) * n), stats[4];
    int32_t where[7];
    fill_floats(&in, probs, n);
    fill_floats(&in, scores, n);
    const int with_scores = (flags & 16) != 0;

    int status = attn_allowed_pairs(allowed, rule, B, H, Tq, Tk);
    if (status) {
        check_refusal(status, "attn_allowed_pairs");
        INVARIANT(!valid, "allowed_pairs refused valid dims: %s", attn_last_error());
    } else {
        INVARIANT(valid, "allowed_pairs accepted B=%d H=%d Tq=%d Tk=%d", B, H, Tq, Tk);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < Tq; i++)
                    for (int j = 0; j < Tk; j++) {
                        const int want = !rule || rule_allows(rule, Tk, b, h, i, j);
                        INVARIANT(allowed[(((long)b * H + h) * Tq + i) * Tk + j] == want, "pair (%d, %d, %d, %d) should be %d", b, h, i, j, want);
                    }
    }

    status = attn_observe(stats, where, with_scores ? scores : NULL, probs, rule, B, H, Tq, Tk);
    if (status) {
        check_refusal(status, "attn_observe");
        INVARIANT(!valid, "observe refused valid dims: %s", attn_last_error());
        goto done;
    }
    INVARIANT(valid, "observe accepted B=%d H=%d Tq=%d Tk=%d", B, H, Tq, Tk);
    long blocked = 0, nan_blocked = 0, nan_rows = 0, nan_scores = 0;
    double max_score = 0;
    for (long p = 0; p < n; p++) {
        blocked += !allowed[p];
        nan_blocked += !allowed[p] && isnan(probs[p]);
        nan_scores += with_scores && isnan(scores[p]);
        if (with_scores) max_score = fmax(max_score, fabs(scores[p]));
    }
    for (long r = 0; r < n / Tk; r++) {
        double sum = 0;
        for (int j = 0; j < Tk; j++) sum += probs[r * Tk + j];
        nan_rows += isnan(sum);
    }
    INVARIANT(stats[1] == (float)((double)blocked / n), "blocked fraction %g, counted %ld of %ld", stats[1], blocked, n);
    /* A NaN score is the worst: the largest |score| is then NaN. */
    if (nan_scores) INVARIANT(isnan(stats[0]), "max |score| %g with %ld NaN scores, want NaN", stats[0], nan_scores);
    else INVARIANT(stats[0] == (float)max_score, "max |score| %g, want %g", stats[0], max_score);
    INVARIANT(!nan_blocked || isnan(stats[3]), "a NaN on a blocked pair was not reported");
    INVARIANT(!nan_rows || isnan(stats[2]), "a NaN row sum was not reported");
    const int dims[4] = {B, H, Tq, Tk};
    for (int w = 0; w < 7; w++) {
        const int dim = dims[w < 3 ? w : w - 3];
        INVARIANT(where[w] >= -1 && where[w] < dim, "where[%d] = %d out of range", w, where[w]);
    }
    INVARIANT((where[3] < 0) == (stats[3] == 0.0f), "where of the blocked maximum %d, maximum %g", where[3], stats[3]);
    if (where[3] >= 0) {
        const long at = (((long)where[3] * H + where[4]) * Tq + where[5]) * Tk + where[6];
        INVARIANT(!allowed[at], "the largest blocked weight is on an allowed pair");
    }
done:
    free(mask), free(kpm), free(allowed), free(probs), free(scores);
    return 0;
}

/* test_core.c: native tests of c_src under ASan and UBSan.
 * Reference values are the lesson's worked examples and a double-precision
 * attention written here. Run by tests/native.test.mjs from npm test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "check.h"


/* Compare got (n) with want (n) within tol absolute; print the first
 * mismatches and the max difference, as llm.c's check_tensor does. */
static void check_close(const char *name, const float *got, const double *want, int n, double tol) {
    double max_diff = 0;
    int shown = 0;
    for (int i = 0; i < n; i++) {
        const double diff = fabs(got[i] - want[i]);
        if (!(diff <= tol) && shown++ < 5) printf("  %s[%d]: got %.7f want %.7f (diff %.2e)\n", name, i, got[i], want[i], diff);
        if (diff > max_diff || isnan(diff)) max_diff = diff;
    }
    CHECK(max_diff <= tol, "%s: max diff %.3e > tol %.1e", name, max_diff, tol);
}

static const attn_mask NO_MASK = {NULL, 0, 0, 0, 0};

/* attn_sdpa with the rule and the dims spelled out as arguments. */
static int sdpa(float *out, float *probs, float *scores, const float *q, const float *k, const float *v,
                attn_mask mask, int B, int H, int Tq, int Tk, int dk, int dv,
                float scale, int causal, int causal_offset, int bug) {
    const attn_visibility vis = {mask, NULL, causal, causal_offset};
    const attn_dims dims = {B, H, Tq, Tk, dk, dv};
    return attn_sdpa(out, probs, scores, q, k, v, &vis, &dims, scale, bug);
}

/* One query, two keys. */
static void test_two_keys(void) {
    const float q[2] = {1, 0}, k[4] = {1, 0, 0, 1}, v[4] = {10, 0, 0, 20};
    float out[2], w[2], s[2];
    CHECK(sdpa(out, w, s, q, k, v, NO_MASK, 1, 1, 1, 2, 2, 2, 1.0f / sqrtf(2.0f), 0, 0, 0) == ATTN_OK,
          "two keys: %s", attn_last_error());
    const double ws[2] = {0.66976155, 0.33023845}, os[2] = {6.6976155, 6.604769}, ss[2] = {0.70710678, 0};
    check_close("two-keys weights", w, ws, 2, 1e-6);
    check_close("two-keys output", out, os, 2, 1e-5);
    check_close("two-keys scores", s, ss, 2, 1e-6);

    /* only the first key allowed: weights [1, 0], output [10, 0], exactly */
    const uint8_t allowed[2] = {1, 0};
    const attn_mask m = {allowed, 0, 0, 0, 1};
    CHECK(sdpa(out, w, NULL, q, k, v, m, 1, 1, 1, 2, 2, 2, 1.0f / sqrtf(2.0f), 0, 0, 0) == ATTN_OK, "first key");
    CHECK(w[0] == 1.0f && w[1] == 0.0f && out[0] == 10.0f && out[1] == 0.0f,
          "first key only: w=[%g,%g] out=[%g,%g]", w[0], w[1], out[0], out[1]);
}

/* The 3x3 example, T = 3, dk = 4, dv = 2. */
static void test_three_by_three(void) {
    const float q[12] = {1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0};
    const float k[12] = {1, 0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0};
    const float v[6] = {10, 0, 0, 10, 5, 5};
    const double want_w[9] = {0.3837, 0.2327, 0.3837, 0.2327, 0.3837, 0.3837, 0.2741, 0.2741, 0.4519};
    const double want_o[6] = {5.7548, 4.2452, 4.2452, 5.7548, 5.0, 5.0};
    float out[6], w[9];
    CHECK(sdpa(out, w, NULL, q, k, v, NO_MASK, 1, 1, 3, 3, 4, 2, 0.5f, 0, 0, 0) == ATTN_OK, "3x3");
    check_close("3x3 weights", w, want_w, 9, 5e-5);
    check_close("3x3 output", out, want_o, 6, 5e-5);
}

/* Causal T = 4: the upper triangle is exactly 0 and rows sum to 1. */
static void test_causal(void) {
    float q[16], k[16], v[16], out[16], w[16];
    for (int i = 0; i < 16; i++) q[i] = sinf(i), k[i] = cosf(i * 0.7f), v[i] = (float)i;
    CHECK(sdpa(out, w, NULL, q, k, v, NO_MASK, 1, 1, 4, 4, 4, 4, 0.5f, 1, 0, 0) == ATTN_OK, "causal");
    for (int i = 0; i < 4; i++) {
        double sum = 0;
        for (int j = 0; j < 4; j++) {
            sum += w[i * 4 + j];
            if (j > i) CHECK(w[i * 4 + j] == 0.0f, "causal w[%d][%d] = %g", i, j, w[i * 4 + j]);
        }
        CHECK(fabs(sum - 1) < 1e-6, "causal row %d sums to %g", i, sum);
    }
    CHECK(w[0] == 1.0f, "row 0 sees only key 0");
}

/* Refusals: codes and messages naming the row or argument. */
static void test_errors(void) {
    const float q[4] = {1, 0, 0, 1}, k[4] = {1, 0, 0, 1}, v[4] = {1, 2, 3, 4};
    float out[4], w[4];
    const uint8_t blocked_row1[4] = {1, 1, 0, 0};
    const attn_mask m = {blocked_row1, 0, 0, 2, 1};
    CHECK(sdpa(out, w, NULL, q, k, v, m, 1, 1, 2, 2, 2, 2, 1, 0, 0, 0) == ATTN_ALL_MASKED_ROW, "all masked");
    CHECK(strstr(attn_last_error(), "query 1") != NULL, "message names the row: %s", attn_last_error());
    for (int i = 0; i < 4; i++) CHECK(!isnan(w[i]), "no NaN after refusal");

    float bad[4] = {1, NAN, 0, 1};
    CHECK(sdpa(out, w, NULL, bad, k, v, NO_MASK, 1, 1, 2, 2, 2, 2, 1, 0, 0, 0) == ATTN_NON_FINITE_INPUT, "NaN q");
    CHECK(strstr(attn_last_error(), "q has a non-finite value (NaN)") != NULL, "%s", attn_last_error());
    bad[1] = INFINITY;
    CHECK(sdpa(out, w, NULL, q, k, bad, NO_MASK, 1, 1, 2, 2, 2, 2, 1, 0, 0, 0) == ATTN_NON_FINITE_INPUT, "inf v");
    CHECK(sdpa(out, w, NULL, q, k, v, NO_MASK, 1, 1, 2, 2, 2, 2, NAN, 0, 0, 0) == ATTN_NON_FINITE_INPUT, "scale");
    CHECK(sdpa(out, w, NULL, q, k, v, NO_MASK, 1, 1, 0, 2, 2, 2, 1, 0, 0, 0) == ATTN_BAD_ARGUMENT, "zero dim");
    CHECK(sdpa(out, w, NULL, q, k, v, NO_MASK, 1, 1, 2, 2, 2, 2, 1, 0, 0, 99) == ATTN_BAD_ARGUMENT, "bug");
    CHECK(sdpa(NULL, w, NULL, q, k, v, NO_MASK, 1, 1, 2, 2, 2, 2, 1, 0, 0, 0) == ATTN_BAD_ARGUMENT, "null");
    /* far too large: refused before allocating anything */
    CHECK(sdpa(out, NULL, NULL, q, k, v, NO_MASK, 1, 1, 2, 1 << 30, 64, 2, 1, 0, 0, 0) == ATTN_TOO_LARGE, "huge");
    CHECK(attn_workspace(1e12) == NULL && strstr(attn_last_error(), "MiB") != NULL, "workspace huge");

    /* huge finite inputs: finite weights, or a clear overflow error */
    const float big[4] = {1e18f, 0, 0, -1e18f};
    int st = sdpa(out, w, NULL, big, big, v, NO_MASK, 1, 1, 2, 2, 2, 2, 1, 0, 0, 0);
    CHECK(st == ATTN_OK && w[0] == 1.0f && w[1] == 0.0f, "1e18: finite, saturated weights: %d %g %g", st, w[0], w[1]);
    const float huge[4] = {1e20f, 0, 0, 1e20f};
    st = sdpa(out, w, NULL, huge, huge, v, NO_MASK, 1, 1, 2, 2, 2, 2, 1, 0, 0, 0);
    CHECK(st == ATTN_OVERFLOW && strstr(attn_last_error(), "overflow"), "1e20 squared overflows: status %d", st);
    const float big2[4] = {1e18f, 0, 0, 1e18f}, small[4] = {1e-18f, 0, 0, 1e-18f};
    st = sdpa(out, w, NULL, big2, small, big2, NO_MASK, 1, 1, 2, 2, 2, 2, 1, 0, 0, 0);
    CHECK(st == ATTN_OK && isfinite(w[0]) && isfinite(out[0]), "1e18 * 1e-18 is fine: %d %s", st, attn_last_error());
}

/* A double-precision reference, and random shapes with odd dims. */
static void reference(double *out, const float *q, const float *k, const float *v, const uint8_t *allowed,
                      int Tq, int Tk, int dk, int dv, double scale) {
    double *s = malloc(sizeof(double) * Tk);
    for (int i = 0; i < Tq; i++) {
        double max = -INFINITY, sum = 0;
        for (int j = 0; j < Tk; j++) {
            double dot = 0;
            for (int d = 0; d < dk; d++) dot += (double)q[i * dk + d] * k[j * dk + d];
            s[j] = allowed[i * Tk + j] ? dot * scale : -INFINITY;
            if (s[j] > max) max = s[j];
        }
        for (int j = 0; j < Tk; j++) sum += (s[j] = exp(s[j] - max));
        for (int c = 0; c < dv; c++) {
            double acc = 0;
            for (int j = 0; j < Tk; j++) acc += s[j] / sum * v[j * dv + c];
            out[i * dv + c] = acc;
        }
    }
    free(s);
}

static void test_random_shapes(void) {
    const int dims[] = {1, 3, 5, 17, 33};
    attn_rng rng;
    attn_rng_seed(&rng, 7);
    for (int a = 0; a < 5; a++)
        for (int c = 0; c < 5; c++) {
            const int Tq = dims[a], Tk = dims[(a + c) % 5], dk = dims[c], dv = dims[(c + 2) % 5];
            float *q = malloc(sizeof(float) * Tq * dk), *k = malloc(sizeof(float) * Tk * dk);
            float *v = malloc(sizeof(float) * Tk * dv), *out = malloc(sizeof(float) * Tq * dv);
            uint8_t *allowed = malloc(Tq * Tk);
            double *want = malloc(sizeof(double) * Tq * dv);
            for (int i = 0; i < Tq * dk; i++) q[i] = attn_rng_normal(&rng);
            for (int i = 0; i < Tk * dk; i++) k[i] = attn_rng_normal(&rng);
            for (int i = 0; i < Tk * dv; i++) v[i] = attn_rng_normal(&rng);
            for (int i = 0; i < Tq; i++)
                for (int j = 0; j < Tk; j++) allowed[i * Tk + j] = j == 0 || attn_rng_uniform(&rng) < 0.7f;
            const attn_mask m = {allowed, 0, 0, Tk, 1};
            const float scale = 1.0f / sqrtf((float)dk);
            CHECK(sdpa(out, NULL, NULL, q, k, v, m, 1, 1, Tq, Tk, dk, dv, scale, 0, 0, 0) == ATTN_OK,
                  "random %d %d %d %d: %s", Tq, Tk, dk, dv, attn_last_error());
            reference(want, q, k, v, allowed, Tq, Tk, dk, dv, scale);
            char name[64];
            snprintf(name, sizeof name, "random Tq=%d Tk=%d dk=%d dv=%d", Tq, Tk, dk, dv);
            check_close(name, out, want, Tq * dv, 2e-5 * 8);
            free(q), free(k), free(v), free(out), free(allowed), free(want);
        }
}

/* The visibility rule: mask, key padding and causal offset, ANDed; and
 * attn_observe naming where the rule is broken. */
static void test_visibility(void) {
    /* (B=2, H=1, Tq=2, Tk=3): mask allows all but (0, 0, 1, 0); key 2 of
     * batch 1 is padding; causal with offset 1 blocks key 2 for query 0. */
    uint8_t mask[6] = {1, 1, 1, 0, 1, 1}, pad[6] = {1, 1, 1, 1, 1, 0}, allowed[12];
    const attn_visibility vis = {{mask, 0, 0, 3, 1}, pad, 1, 1};
    CHECK(attn_allowed_pairs(allowed, &vis, 2, 1, 2, 3) == ATTN_OK, "allowed pairs: %s", attn_last_error());
    const uint8_t want[12] = {1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 0};
    for (int n = 0; n < 12; n++) CHECK(allowed[n] == want[n], "allowed[%d] = %d, want %d", n, allowed[n], want[n]);
    CHECK(attn_allowed_pairs(allowed, NULL, 1, 1, 1, 2) == ATTN_OK && allowed[0] && allowed[1], "NULL rule: all allowed");
    CHECK(attn_allowed_pairs(allowed, &vis, 0, 1, 2, 3) == ATTN_BAD_ARGUMENT, "zero batch refused");

    float probs[12], stats[4];
    int32_t where[7];
    for (int n = 0; n < 12; n++) probs[n] = want[n] ? 0.5f : 0.0f; /* rows of two allowed keys sum to 1 */
    probs[9] = 0.25f;                                               /* batch 1, query 1: blocked key 0 */
    CHECK(attn_observe(stats, where, NULL, probs, &vis, 2, 1, 2, 3) == ATTN_OK, "observe: %s", attn_last_error());
    CHECK(where[0] == 1 && where[1] == 0 && where[2] == 1 && fabsf(stats[2] - 0.25f) < 1e-7f,
          "worst row is (1, 0, 1), sum 0.75: got (%d, %d, %d), error %g", where[0], where[1], where[2], stats[2]);
    CHECK(where[3] == 1 && where[4] == 0 && where[5] == 1 && where[6] == 0 && stats[3] == 0.25f,
          "largest blocked weight at (1, 0, 1, 0) = 0.25: got (%d, %d, %d, %d) = %g", where[3], where[4], where[5], where[6], stats[3]);
    for (int n = 0; n < 12; n++) probs[n] = want[n] ? 0.5f : 0.0f;
    probs[6] = NAN; /* batch 1, query 0, key 0 (allowed): the NaN row is the worst */
    CHECK(attn_observe(stats, where, NULL, probs, &vis, 2, 1, 2, 3) == ATTN_OK, "observe NaN");
    CHECK(isnan(stats[2]) && where[0] == 1 && where[2] == 0 && where[3] == -1, "NaN row named, no blocked weight: %g (%d, %d) %d",
          stats[2], where[0], where[2], where[3]);
}

/* The tiled path: every tile width (1, 3, 8, wider than Tk) against the
 * double reference, with a causal diagonal and a mask; the trace's last tile
 * holds l and acc with out = acc / l; a row with no key is refused. */
static void test_tiled(void) {
    const int Tq = 13, Tk = 21, dk = 7, dv = 5, widths[] = {1, 3, 8, 64};
    attn_rng rng;
    attn_rng_seed(&rng, 9);
    float q[13 * 7], k[21 * 7], v[21 * 5], out[13 * 5], trace[13 * 21 * (3 + 5)];
    uint8_t mask[13 * 21], allowed[13 * 21];
    double want[13 * 5];
    for (int i = 0; i < Tq * dk; i++) q[i] = 3.0f * attn_rng_normal(&rng);
    for (int i = 0; i < Tk * dk; i++) k[i] = 3.0f * attn_rng_normal(&rng);
    for (int i = 0; i < Tk * dv; i++) v[i] = attn_rng_normal(&rng);
    for (int i = 0; i < Tq * Tk; i++) mask[i] = i % Tk == 0 || attn_rng_uniform(&rng) < 0.6f;
    const int offset = 4; /* causal: key j visible to query i iff j <= i + 4 */
    for (int i = 0; i < Tq; i++)
        for (int j = 0; j < Tk; j++) allowed[i * Tk + j] = mask[i * Tk + j] && j <= i + offset;
    reference(want, q, k, v, allowed, Tq, Tk, dk, dv, 0.5);
    const attn_visibility causal = {{mask, 0, 0, Tk, 1}, NULL, 1, offset}, plain = {{mask, 0, 0, Tk, 1}, NULL, 0, 0};
    const attn_dims dims = {1, 1, Tq, Tk, dk, dv};
    for (int w = 0; w < 4; w++) {
        const int bk = widths[w], tiles = (Tk + (bk < Tk ? bk : Tk) - 1) / (bk < Tk ? bk : Tk);
        CHECK(attn_sdpa_tiled(out, trace, q, k, v, &causal, &dims, 0.5f, bk, 0) == ATTN_OK,
              "tiled %d: %s", bk, attn_last_error());
        char name[64];
        snprintf(name, sizeof name, "tiled, %d keys per tile", bk);
        check_close(name, out, want, Tq * dv, 1e-5);
        for (int i = 0; i < Tq; i++) {
            const float *last = trace + ((long)i * tiles + tiles - 1) * (3 + dv);
            for (int c = 0; c < dv; c++)
                CHECK(fabsf(last[3 + c] / last[1] - out[i * dv + c]) <= 1e-6f * (1 + fabsf(out[i * dv + c])),
                      "tiled %d: trace acc / l is the output (row %d)", bk, i);
        }
        /* the bug mixes exps taken against different maxima */
        CHECK(attn_sdpa_tiled(out, NULL, q, k, v, &causal, &dims, 0.5f, bk, ATTN_BUG_NO_RESCALE) == ATTN_OK, "no-rescale runs");
        double worst = 0;
        for (int i = 0; i < Tq * dv; i++) worst = fmax(worst, fabs(out[i] - want[i]));
        CHECK(bk >= Tk || worst > 1e-3, "no-rescale with %d keys per tile changes the output (max diff %g)", bk, worst);
    }
    /* row 2 loses every key: refused, naming the row, before any NaN */
    for (int j = 0; j < Tk; j++) mask[2 * Tk + j] = 0;
    CHECK(attn_sdpa_tiled(out, NULL, q, k, v, &plain, &dims, 0.5f, 3, 0) == ATTN_ALL_MASKED_ROW &&
          strstr(attn_last_error(), "query 2") != NULL, "tiled all-masked row: %s", attn_last_error());
    CHECK(attn_sdpa_tiled(out, NULL, q, k, v, &plain, &dims, 0.5f, 0, 0) == ATTN_BAD_ARGUMENT,
          "block_keys 0 refused");
    CHECK(attn_sdpa_tiled(out, NULL, q, k, v, &plain, &dims, 0.5f, 3, ATTN_BUG_NO_SCALE) == ATTN_BAD_ARGUMENT, "other bugs refused");
}

/* Dropout: p of the probabilities dropped, the rest times 1/(1 - p); the
 * mask is recorded and a bad p refused. */
static void test_dropout(void) {
    enum { T = 32, D = 4 };
    float q[T * D], out[T * D], probs[T * T], plain[T * T];
    uint8_t keep[T * T];
    for (int i = 0; i < T * D; i++) q[i] = sinf(0.3f * i);
    const attn_dims dims = {1, 1, T, T, D, D};
    CHECK(attn_sdpa(out, plain, NULL, q, q, q, NULL, &dims, 0.5f, 0) == ATTN_OK, "plain");
    attn_dropout drop = {0.25f, 9, keep};
    CHECK(attn_sdpa_dropout(out, probs, NULL, q, q, q, NULL, &dims, 0.5f, &drop, 0) == ATTN_OK, "dropout: %s", attn_last_error());
    int dropped = 0;
    for (int n = 0; n < T * T; n++) {
        dropped += !keep[n];
        const float want = keep[n] ? plain[n] / 0.75f : 0.0f;
        CHECK(fabsf(probs[n] - want) <= 1e-6f, "dropout prob %d: %g, want %g", n, probs[n], want);
    }
    CHECK(dropped > 200 && dropped < 312, "about a quarter of %d dropped: %d", T * T, dropped);
    drop.p = 1.0f;
    CHECK(attn_sdpa_dropout(out, probs, NULL, q, q, q, NULL, &dims, 0.5f, &drop, 0) == ATTN_BAD_ARGUMENT, "p = 1 refused");
}

/* Multi-head attention: the lesson's B=2, T=5, dModel=32, H=4, causal. */
static void test_mha(void) {
    attn_mha *m = attn_mha_create(32, 4, 1, 0, 3);
    CHECK(m != NULL, "create: %s", attn_last_error());
    float x[2 * 5 * 32], out[2 * 5 * 32], w[2 * 4 * 5 * 5];
    attn_rng rng;
    attn_rng_seed(&rng, 11);
    for (int i = 0; i < 2 * 5 * 32; i++) x[i] = attn_rng_normal(&rng);
    const attn_mha_visibility causal = {{NULL, 0, 0, 0, 0}, NULL, NULL, 1, 0, 0};
    int st = attn_mha_forward(out, w, m, x, NULL, 2, 5, 5, NULL, &causal, 0);
    CHECK(st == ATTN_OK, "mha forward: %s", attn_last_error());
    for (int bh = 0; bh < 8; bh++)
        for (int i = 0; i < 5; i++)
            for (int j = i + 1; j < 5; j++) CHECK(w[(bh * 5 + i) * 5 + j] == 0.0f, "mha causal upper triangle");
    CHECK(attn_mha_create(30, 4, 1, 0, 0) == NULL && attn_last_status() == ATTN_HEADS_DO_NOT_DIVIDE, "30 %% 4 refused");
    CHECK(attn_mha_create(12, 4, 1, 1, 0) == NULL && strstr(attn_last_error(), "even") != NULL &&
          attn_last_status() == ATTN_ROPE_ODD_HEAD_DIM, "odd RoPE refused");
    CHECK(attn_mha_forward(out, w, NULL, x, NULL, 2, 5, 5, NULL, NULL, 0) == ATTN_MODULE_FREED, "freed module");
    CHECK(attn_mha_forward(out, w, m, x, NULL, 2, 0, 5, NULL, NULL, 0) == ATTN_EMPTY_QUERY, "empty query");
    const attn_mha_visibility negative = {{NULL, 0, 0, 0, 0}, NULL, NULL, 0, -1, 0};
    CHECK(attn_mha_forward(out, w, m, x, NULL, 2, 5, 5, NULL, &negative, 0) == ATTN_NEGATIVE_OFFSET, "negative offset");
    const attn_kv_cache holes = {NULL, NULL, NULL, 3, NULL, NULL, NULL};
    CHECK(attn_mha_forward(out, w, m, x, NULL, 2, 5, 5, &holes, NULL, 0) == ATTN_CACHE_MISMATCH, "incomplete cache");
    attn_mha_free(m);
    attn_mha_free(NULL);
}

static void test_lesson_demos(void) {
    float raw[4096], scaled[4096], var[2], peak[2];
    CHECK(attn_sample_dots(raw, scaled, var, 64, 4096, 1) == ATTN_OK, "sample");
    CHECK(var[0] > 55 && var[0] < 73, "unscaled variance near dk=64: %g", var[0]);
    CHECK(var[1] > 0.85 && var[1] < 1.15, "scaled variance near 1: %g", var[1]);
    CHECK(attn_softmax_peak(peak, 256, 16, 256, 1) == ATTN_OK, "peak");
    CHECK(peak[1] > peak[0] + 0.2, "unscaled softmax is more peaked: %g vs %g", peak[1], peak[0]);
}

int main(void) {
    test_two_keys();
    test_three_by_three();
    test_causal();
    test_errors();
    test_random_shapes();
    test_visibility();
    test_tiled();
    test_dropout();
    test_mha();
    test_lesson_demos();
    printf("native C tests: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}

/* test_hardening.c: native tests of the core's edges under ASan and UBSan:
 * causal offsets at the ends of int, dims <= 0 for observe, a bias given to
 * a module without one, the size check of the no-weights path and the
 * message of a request just over the limit. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "check.h"

/* Causal offsets near INT_MAX and INT_MIN: every key, or no key, visible. */
static void test_extreme_offsets(void) {
    const float q[4] = {1, 0, 0, 1}, k[4] = {1, 0, 0, 1}, v[4] = {1, 2, 3, 4};
    float out[4], w[4];
    const attn_dims dims = {1, 1, 2, 2, 2, 2};
    const int offsets[] = {INT_MAX, INT_MAX - 1, INT_MIN, INT_MIN + 1};
    for (int o = 0; o < 4; o++) {
        for (int bug = 0; bug < ATTN_BUG_COUNT; bug++) {
            if (bug == ATTN_BUG_HEADS_WITHOUT_TRANSPOSE || bug == ATTN_BUG_MERGE_WITHOUT_TRANSPOSE) continue;
            const attn_visibility vis = {{NULL, 0, 0, 0, 0}, NULL, 1, offsets[o]};
            const int st = attn_sdpa(out, w, NULL, q, k, v, &vis, &dims, 1.0f, bug);
            CHECK(st == ATTN_OK || attn_last_error()[0], "offset %d bug %d: status %d without a message", offsets[o], bug, st);
        }
        const attn_visibility vis = {{NULL, 0, 0, 0, 0}, NULL, 1, offsets[o]};
        uint8_t allowed[4];
        CHECK(attn_allowed_pairs(allowed, &vis, 1, 1, 2, 2) == ATTN_OK, "allowed pairs at offset %d", offsets[o]);
        const uint8_t want = offsets[o] > 0;
        for (int p = 0; p < 4; p++) CHECK(allowed[p] == want, "offset %d: pair %d is %d", offsets[o], p, allowed[p]);
    }
}

/* attn_observe refuses dims <= 0 instead of returning NaN. */
static void test_observe_dims(void) {
    float stats[4];
    int32_t where[7];
    const float probs[4] = {1, 0, 0, 1};
    const int bad[][4] = {{0, 1, 2, 2}, {1, 0, 2, 2}, {1, 1, 0, 2}, {1, 1, 2, 0}, {-1, 1, 2, 2}, {1, 1, INT_MIN, 2}};
    for (int c = 0; c < 6; c++) {
        const int st = attn_observe(stats, where, NULL, probs, NULL, bad[c][0], bad[c][1], bad[c][2], bad[c][3]);
        CHECK(st == ATTN_BAD_ARGUMENT && attn_last_error()[0], "observe dims case %d: status %d", c, st);
    }
}

/* attn_mha_set with a bias on a module created without bias is refused. */
static void test_bias_without_bias(void) {
    attn_mha *m = attn_mha_create(4, 2, 0, 0, 1);
    float weight[16] = {0}, bias[4] = {1, 2, 3, 4};
    CHECK(attn_mha_set(m, 0, weight, bias) == ATTN_BAD_ARGUMENT, "bias on a bias-less module: %s", attn_last_error());
    CHECK(strstr(attn_last_error(), "bias") != NULL, "message names the bias: %s", attn_last_error());
    CHECK(attn_mha_weight(m, 0)[0] != 0.0f, "refused set leaves the weights alone");
    CHECK(attn_mha_set(m, 0, weight, NULL) == ATTN_OK, "weight alone: %s", attn_last_error());
    attn_mha_free(m);
}

/* The no-weights path counts only what it allocates: Tq = Tk = 20100 with
 * dk = dv = 1 needs K^T and a few score rows, not Tq * Tk floats. A NaN in
 * the last value of v stops the call right after the size check (the full
 * run is tests/hardening.test.mjs's), so a refusal for NaN, not for size,
 * is the pass. */
static void test_no_weights_size(void) {
    const int T = 20100;
    float *q = calloc(T, sizeof(float)), *k = calloc(T, sizeof(float)), *v = calloc(T, sizeof(float));
    float *out = calloc(T, sizeof(float)), w[1];
    v[T - 1] = NAN;
    const attn_dims full = {1, 1, T, T, 1, 1};
    CHECK(attn_sdpa(out, NULL, NULL, q, k, v, NULL, &full, 1.0f, 0) == ATTN_NON_FINITE_INPUT,
          "T=20100 without weights passes the size check: %s", attn_last_error());
    CHECK(attn_sdpa(out, w, NULL, q, k, v, NULL, &full, 1.0f, 0) == ATTN_TOO_LARGE, "T=20100 with weights");
    free(q), free(k), free(v), free(out);
}

/* Just over the limit, the message shows the difference. */
static void test_limit_message(void) {
    CHECK(attn_workspace(ATTN_MAX_REQUEST_BYTES + 1) == NULL, "one byte over");
    const char *msg = attn_last_error();
    char needs[64], limit[64];
    const char *a = strstr(msg, "needs "), *b = strstr(msg, "limit is ");
    CHECK(a && b, "message: %s", msg);
    if (a && b) {
        sscanf(a + 6, "%63s", needs);
        sscanf(b + 9, "%63s", limit);
        CHECK(strcmp(needs, limit) != 0, "needs %s vs limit %s: %s", needs, limit, msg);
    }
}

/* Bias gradients that overflow float32 are refused like the others. */
static void test_bias_gradient_overflow(void) {
    attn_mha *m = attn_mha_create(4, 1, 1, 0, 1);
    float w[16], b[4] = {0}, x[16], dout[16];
    for (int i = 0; i < 16; i++) w[i] = 1e-3f, x[i] = 1e-30f, dout[i] = 1e38f;
    for (int p = 0; p < 4; p++) CHECK(attn_mha_set(m, p, w, b) == ATTN_OK, "set: %s", attn_last_error());
    float out[16], dquery[16], dweight[64], dbias[16];
    attn_mha_save_next(m, 1);
    CHECK(attn_mha_forward(out, NULL, m, x, NULL, 1, 4, 4, NULL, NULL, 0) == ATTN_OK, "forward: %s", attn_last_error());
    const int st = attn_mha_backward(m, dquery, NULL, dweight, dbias, dout);
    CHECK(st == ATTN_OVERFLOW, "four rows of 1e38 overflow the output bias gradient: status %d", st);
    for (int i = 0; i < 16 && st == ATTN_OK; i++) CHECK(isfinite(dbias[i]), "dbias[%d] = %g", i, dbias[i]);
    attn_mha_free(m);
}

int main(void) {
    test_bias_gradient_overflow();
    test_extreme_offsets();
    test_observe_dims();
    test_bias_without_bias();
    test_no_weights_size();
    test_limit_message();
    printf("native hardening tests: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}

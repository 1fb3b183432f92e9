/* test_train.c: the trainer (train.c) natively, under ASan and UBSan:
 * every task at small sizes runs steps, evaluation, attention and ablation
 * inside its buffers, gives the same losses for the same seed, and refuses
 * bad options with a message. Run by tests/native.test.mjs from npm test. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention.h"
#include "check.h"

/* Every task at small sizes, and induction at the largest: all entry points
 * run inside their buffers (the buffers do not depend on the task). */
static void test_tasks_run(void) {
    const int sizes[3][7] = { /* layers, heads, d_model, seq_len, vocab, batch, steps */
        {2, 4, 64, 32, 64, 32, 1},
        {1, 1, 4, 4, 2, 1, 3},
        {2, 2, 8, 7, 4, 3, 3},
    };
    for (int task = 0; task < ATTN_TASK_COUNT; task++)
        for (int s = task == ATTN_TASK_INDUCTION ? 0 : 1; s < 3; s++) {
            const int *z = sizes[s];
            attn_trainer *t = attn_train_create(task, z[0], z[1], z[2], z[3], z[4], z[5], 0.01f, 3, 1, 0);
            CHECK(t != NULL, "task %d sizes %d: %s", task, s, attn_last_error());
            if (!t) continue;
            float loss = NAN, result[2] = {NAN, NAN};
            CHECK(attn_train_step(t, &loss, z[6]) == ATTN_OK && isfinite(loss), "step: %s", attn_last_error());
            CHECK(attn_train_step_count(t) == z[6], "step count %d", attn_train_step_count(t));
            CHECK(attn_train_evaluate(t, result, 1) == ATTN_OK, "evaluate: %s", attn_last_error());
            CHECK(isfinite(result[0]) && result[1] >= 0 && result[1] <= 1, "result %g %g", result[0], result[1]);
            static float weights[2 * 4 * 32 * 32];
            int tokens[32];
            CHECK(attn_train_attention(t, weights, tokens, 0) == ATTN_OK, "attention: %s", attn_last_error());
            const int T = z[3];
            for (int i = 0; i < T; i++) { /* causal rows: sum 1, nothing after i */
                double sum = 0, later = 0;
                for (int j = 0; j < T; j++) sum += weights[i * T + j];
                for (int j = i + 1; j < T; j++) later += weights[i * T + j];
                CHECK(fabs(sum - 1) < 1e-5 && later == 0, "row %d sums to %g, %g after the diagonal", i, sum, later);
            }
            CHECK(attn_train_ablate(t, z[0] - 1, z[1] - 1, 1) == ATTN_OK, "ablate: %s", attn_last_error());
            CHECK(attn_train_attention(t, weights, tokens, 1) == ATTN_OK, "attention, ablated: %s", attn_last_error());
            CHECK(attn_train_ablate(t, z[0], 0, 1) == ATTN_BAD_ARGUMENT && strstr(attn_last_error(), "layer"),
                  "ablate layer out of range: %s", attn_last_error());
            attn_train_free(t);
        }
    attn_train_free(NULL);
}

/* The same seed gives the same loss bits; a different seed does not. */
static void test_deterministic(void) {
    float a[3], b[3], c = 0;
    for (int run = 0; run < 2; run++) {
        attn_trainer *t = attn_train_create(ATTN_TASK_INDUCTION, 2, 2, 16, 12, 10, 4, 0.01f, 9, 1, 0);
        for (int s = 0; s < 3; s++) attn_train_step(t, run ? &b[s] : &a[s], 1);
        attn_train_free(t);
    }
    CHECK(memcmp(a, b, sizeof a) == 0, "losses differ: %.9g %.9g", a[2], b[2]);
    attn_trainer *t = attn_train_create(ATTN_TASK_INDUCTION, 2, 2, 16, 12, 10, 4, 0.01f, 10, 1, 0);
    attn_train_step(t, &c, 3);
    attn_train_free(t);
    CHECK(c != a[2], "seed 10 gave seed 9's loss");
}

/* The trainer allocates once, at creation: steps (with and without the
 * no-causal-mask bug, from the smallest to the largest sizes), evaluation
 * and the attention maps make no heap allocation at all. */
static void test_no_allocation_per_step(void) {
    const int sizes[3][6] = { /* layers, heads, d_model, seq_len, vocab, batch */
        {1, 1, 4, 4, 2, 1},
        {2, 2, 32, 16, 28, 16},
        {2, 4, 64, 32, 64, 32},
    };
    for (int task = 0; task < ATTN_TASK_COUNT; task++)
        for (int s = 0; s < 3; s++)
            for (int bug = 0; bug < 2; bug++) {
                const int *z = sizes[s];
                if (task == ATTN_TASK_INDUCTION && z[4] < z[3] / 2) continue;
                attn_trainer *t = attn_train_create(task, z[0], z[1], z[2], z[3], z[4], z[5], 0.01f, 5, 1,
                                                    bug ? ATTN_BUG_NO_CAUSAL_MASK : ATTN_BUG_NONE);
                CHECK(t != NULL, "create: %s", attn_last_error());
                if (!t) continue;
                static float weights[2 * 4 * 32 * 32];
                int tokens[32];
                float loss = NAN, result[2];
                const double before = attn_heap_allocations();
                CHECK(attn_train_step(t, &loss, s == 2 ? 1 : 10) == ATTN_OK, "step: %s", attn_last_error());
                if (s < 2) CHECK(attn_train_evaluate(t, result, 1) == ATTN_OK, "evaluate: %s", attn_last_error());
                CHECK(attn_train_attention(t, weights, tokens, 0) == ATTN_OK, "attention: %s", attn_last_error());
                const double made = attn_heap_allocations() - before;
                CHECK(made == 0, "task %d sizes %d bug %d: %.0f heap allocations in steps, evaluation and attention",
                      task, s, bug, made);
                attn_train_free(t);
            }
    /* The counter does count: a plain attention call allocates its scratch. */
    const attn_dims dims = {1, 1, 4, 4, 2, 2};
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float out[8];
    const double before = attn_heap_allocations();
    CHECK(attn_sdpa(out, NULL, NULL, x, x, x, NULL, &dims, 1.0f, ATTN_BUG_NONE) == ATTN_OK, "sdpa: %s", attn_last_error());
    CHECK(attn_heap_allocations() - before >= 1, "attn_sdpa's scratch was not counted");
}

/* Bad options: NULL and a message naming the option. */
static void test_refusals(void) {
    struct { int task, layers, heads, d, T, V, B; float lr; int causal, bug; const char *word; } bad[] = {
        {3, 1, 1, 8, 8, 8, 2, 0.01f, 1, 0, "task"},
        {0, 3, 1, 8, 8, 8, 2, 0.01f, 1, 0, "layers"},
        {0, 1, 5, 20, 8, 8, 2, 0.01f, 1, 0, "heads"},
        {0, 1, 3, 8, 8, 8, 2, 0.01f, 1, 0, "divisible"},
        {0, 1, 1, 65, 8, 8, 2, 0.01f, 1, 0, "dModel"},
        {0, 1, 1, 8, 33, 8, 2, 0.01f, 1, 0, "seqLen"},
        {0, 1, 1, 8, 8, 65, 2, 0.01f, 1, 0, "vocab"},
        {0, 1, 1, 8, 8, 8, 33, 0.01f, 1, 0, "batch"},
        {0, 1, 1, 8, 8, 8, 2, 0.0f, 1, 0, "lr"},
        {0, 1, 1, 8, 8, 8, 2, NAN, 1, 0, "lr"},
        {0, 1, 1, 8, 8, 8, 2, 0.01f, 1, ATTN_BUG_NO_SCALE, "no-causal-mask"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        attn_trainer *t = attn_train_create(bad[i].task, bad[i].layers, bad[i].heads, bad[i].d, bad[i].T, bad[i].V,
                                            bad[i].B, bad[i].lr, 1, bad[i].causal, bad[i].bug);
        CHECK(t == NULL && attn_last_status() == ATTN_BAD_ARGUMENT && strstr(attn_last_error(), bad[i].word),
              "case %zu: got '%s'", i, attn_last_error());
        attn_train_free(t);
    }
    float loss;
    CHECK(attn_train_step(NULL, &loss, 1) == ATTN_MODULE_FREED && strstr(attn_last_error(), "freed"), "NULL trainer");
}

int main(void) {
    test_tasks_run();
    test_deterministic();
    test_refusals();
    test_no_allocation_per_step();
    printf("test_train: %d checks, %d failed\n", checks, failures);
    return failures != 0;
}

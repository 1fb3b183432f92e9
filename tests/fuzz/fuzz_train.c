/* fuzz_train.c: the trainer, from creation options (in and out of range,
 * lr NaN, negative or huge) through sequences of step, evaluate, attention,
 * ablate and gradients calls with fuzzed counts, layers, heads and tokens
 * (attention as evaluation and as training ran the model).
 * A trainer that is created has every option in range; one that is not
 * leaves a known status and a message. Every call either refuses (known
 * status, message) or answers: losses finite and >= 0, accuracy in [0, 1],
 * attention rows sum to 1 with the future exactly 0, gradients finite.
 * A step refused for a non-finite loss leaves the parameters untouched,
 * and a second trainer from the same options gives the same loss bits. */
#include "fuzz.h"

/* An option: usually one from its valid range, now and then an odd one. */
static int take_option(bytes_in *in, int lo, int hi) {
    const uint8_t kind = take_u8(in);
    if (kind < 232) return lo + kind % (hi - lo + 1);
    static const int odd[] = {0, -1, INT_MIN, INT_MAX, 65, 33, 3, 1000};
    return odd[kind % 8];
}

static long param_count(attn_trainer *t) {
    long n = 0;
    int info[3];
    for (int i = 0; i < ATTN_TRAIN_MAX_TENSORS && attn_train_tensor(t, i, info) == ATTN_OK; i++)
        n = n > info[0] + (long)info[1] * info[2] ? n : info[0] + (long)info[1] * info[2];
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes_in in = {data, size, 0};
    const int task = take_option(&in, 0, ATTN_TASK_COUNT - 1), layers = take_option(&in, 1, 2);
    const int heads = take_option(&in, 1, 4), width = take_option(&in, 1, 4);
    /* d_model: usually heads times a small width, so that it divides */
    const int64_t product = (int64_t)heads * width;
    const int d_model = product >= INT_MIN && product <= INT_MAX ? (int)product : width;
    const int seq_len = take_option(&in, 4, 12), vocab = take_option(&in, 2, 16), batch = take_option(&in, 1, 4);
    const uint8_t lr_kind = take_u8(&in);
    const float lr = lr_kind < 200 ? (1 + lr_kind % 100) * 1e-3f : take_float(&in);
    const uint32_t seed = take_u32(&in);
    const int causal = take_option(&in, 0, 1);
    const int bug = take_u8(&in) < 200 ? ATTN_BUG_NONE : take_range(&in, -1, ATTN_BUG_COUNT);

    attn_trainer *t = attn_train_create(task, layers, heads, d_model, seq_len, vocab, batch, lr, seed, causal, bug);
    if (!t) {
        check_refusal(attn_last_status(), "attn_train_create");
        return 0;
    }
    INVARIANT(task >= 0 && task < ATTN_TASK_COUNT && layers >= 1 && layers <= 2, "task %d layers %d accepted", task, layers);
    INVARIANT(heads >= 1 && heads <= ATTN_TRAIN_MAX_HEADS && d_model >= 1 && d_model <= ATTN_TRAIN_MAX_D_MODEL &&
              d_model % heads == 0, "heads %d d_model %d accepted", heads, d_model);
    INVARIANT(seq_len >= 4 && seq_len <= ATTN_TRAIN_MAX_SEQ_LEN && vocab >= 2 && vocab <= ATTN_TRAIN_MAX_VOCAB &&
              batch >= 1 && batch <= ATTN_TRAIN_MAX_BATCH, "seq_len %d vocab %d batch %d accepted", seq_len, vocab, batch);
    INVARIANT(lr > 0.0f && lr <= 1.0f, "lr %g accepted", lr);
    INVARIANT(attn_last_error()[0] == '\0', "creation left a message: %s", attn_last_error());

    const long n_params = param_count(t), T = seq_len;
    float *before = malloc(sizeof(float) * n_params), *weights = malloc(sizeof(float) * layers * heads * T * T);
    uint8_t *allowed = malloc((size_t)(T * T));
    int *tokens = malloc(sizeof(int) * batch * T), *targets = malloc(sizeof(int) * batch * T);
    float loss, result[2];
    int stepped = 0, diverged = 0;

    for (int op = 0; op < 6 && in.at < in.size; op++) {
        int status;
        const char *call;
        switch (take_u8(&in) % 5) {
        case 0: {
            const int n = take_range(&in, -1, 3), count = attn_train_step_count(t);
            memcpy(before, attn_train_params(t), sizeof(float) * n_params);
            status = attn_train_step(t, &loss, n), call = "attn_train_step";
            if (status == ATTN_OK) {
                INVARIANT(n >= 0 && attn_train_step_count(t) == count + n, "step count %d after %d + %d", attn_train_step_count(t), count, n);
                if (n > 0) INVARIANT(isfinite(loss) && loss >= 0.0f, "step loss %g", loss);
                stepped += n;
            } else if (status == ATTN_OVERFLOW) {
                diverged = 1;
                /* the parameters of the step that diverged were not updated */
                const int done = attn_train_step_count(t) - count;
                if (done == 0) INVARIANT(memcmp(before, attn_train_params(t), sizeof(float) * n_params) == 0,
                                         "a refused step changed the parameters");
                stepped += done;
            }
            break;
        }
        case 1: {
            const int batches = take_option(&in, 1, 2);
            if (batches > 2 && batches <= 1000) continue; /* valid, but slow under ASan */
            status = attn_train_evaluate(t, result, batches), call = "attn_train_evaluate";
            if (status == ATTN_OK) {
                INVARIANT(batches >= 1 && batches <= 1000, "batches %d accepted", batches);
                INVARIANT(isfinite(result[0]) && result[0] >= 0.0f, "held-out loss %g", result[0]);
                INVARIANT(result[1] >= 0.0f && result[1] <= 1.0f, "accuracy %g", result[1]);
            }
            break;
        }
        case 2: {
            const int given = take_u8(&in) & 1, as_training = take_option(&in, 0, 1);
            for (long i = 0; i < T; i++) tokens[i] = take_option(&in, 0, vocab - 1);
            status = attn_train_attention_as(t, weights, allowed, tokens, given, as_training), call = "attn_train_attention_as";
            /* the future is hidden when the run is causal: evaluation always, training unless its bug drops the mask */
            const int hides_future = causal && !(as_training && bug == ATTN_BUG_NO_CAUSAL_MASK);
            if (status == ATTN_OK) {
                INVARIANT(as_training == 0 || as_training == 1, "as_training %d accepted", as_training);
                for (long r = 0; r < layers * heads * T; r++) {
                    const long i = r % T;
                    double sum = 0;
                    for (long j = 0; j < T; j++) {
                        const float p = weights[r * T + j];
                        INVARIANT(isfinite(p) && p >= 0.0f && p <= 1.0f, "attention row %ld key %ld: %g", r, j, p);
                        INVARIANT(allowed[i * T + j] == (hides_future ? j <= i : 1), "allowed (%ld, %ld) is %d", i, j, allowed[i * T + j]);
                        if (!allowed[i * T + j]) INVARIANT(p == 0.0f, "attention row %ld sees hidden key %ld: %g", r, j, p);
                        sum += p;
                    }
                    INVARIANT(fabs(sum - 1.0) <= 1e-4, "attention row %ld sums to %.9f", r, sum);
                }
            }
            break;
        }
        case 3:
            status = attn_train_ablate(t, take_option(&in, 0, layers - 1), take_option(&in, 0, heads - 1), take_u8(&in) & 1);
            call = "attn_train_ablate";
            break;
        default:
            for (long i = 0; i < batch * T; i++) {
                tokens[i] = take_option(&in, 0, vocab - 1);
                targets[i] = take_option(&in, -1, vocab - 1);
            }
            status = attn_train_gradients(t, &loss, tokens, targets), call = "attn_train_gradients";
            if (status == ATTN_OK) {
                INVARIANT(loss >= 0.0f, "loss %g", loss); /* may be +inf when a target's probability underflows */
                if (isfinite(loss)) check_finite_all(attn_train_grads(t), n_params, "grads");
            }
            break;
        }
        if (status != ATTN_OK) check_refusal(status, call);
        else INVARIANT(attn_last_error()[0] == '\0', "%s succeeded with a message: %s", call, attn_last_error());
    }

    /* the same options and seed give the same loss bits */
    if (stepped > 0 && !diverged && stepped <= 6) {
        attn_trainer *twin = attn_train_create(task, layers, heads, d_model, seq_len, vocab, batch, lr, seed, causal, bug);
        INVARIANT(twin, "the same options were refused the second time: %s", attn_last_error());
        float loss_twin;
        INVARIANT(attn_train_step(twin, &loss_twin, stepped) == ATTN_OK, "the twin's steps refused: %s", attn_last_error());
        float loss_again;
        memcpy(before, attn_train_params(twin), sizeof(float) * n_params);
        INVARIANT(memcmp(before, attn_train_params(t), sizeof(float) * n_params) == 0,
                  "two trainers from seed %u differ after %d steps", seed, stepped);
        (void)loss_again;
        attn_train_free(twin);
    }

    /* a freed (NULL) trainer is refused, not dereferenced */
    INVARIANT(attn_train_step(NULL, &loss, 1) == ATTN_MODULE_FREED, "step on no trainer");
    check_refusal(ATTN_MODULE_FREED, "attn_train_step(NULL)");
    attn_train_free(t);
    free(before), free(weights), free(allowed), free(tokens), free(targets);
    return 0;
}

/* fuzz.h: what the libFuzzer harnesses of tests/fuzz share.
 *
 * A harness turns the fuzzer's bytes into a valid-looking call of the C API
 * (dims, data with NaN, infinities, denormals and huge values, masks with any
 * strides, offsets at the ends of int, bug ids out of range) and checks the
 * invariants of the answer, not only that nothing crashed:
 *   on success  outputs are finite, probability rows sum to 1, blocked
 *               weights are exactly 0;
 *   on failure  the status is a known one and there is a message.
 * A broken invariant aborts, which libFuzzer reports as a crash with the
 * input that caused it. */
#ifndef ATTENTION_FUZZ_H
#define ATTENTION_FUZZ_H

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"

/* Stop on a broken invariant, saying which. */
#define INVARIANT(cond, ...)                                   \
    do {                                                       \
        if (!(cond)) {                                         \
            fprintf(stderr, "invariant broken at %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                      \
            fprintf(stderr, "\n");                             \
            abort();                                           \
        }                                                      \
    } while (0)

/* The fuzzer's bytes, read front to back; zeros once they run out. */
typedef struct {
    const uint8_t *data;
    size_t size, at;
} bytes_in;

static inline uint8_t take_u8(bytes_in *in) { return in->at < in->size ? in->data[in->at++] : 0; }

static inline uint32_t take_u32(bytes_in *in) {
    uint32_t x = 0;
    for (int i = 0; i < 4; i++) x = x << 8 | take_u8(in);
    return x;
}

/* An int in lo..hi (inclusive). */
static inline int take_range(bytes_in *in, int lo, int hi) {
    return lo + (int)(take_u8(in) % (unsigned)(hi - lo + 1));
}

/* An int that is usually small and sometimes at the ends of int. */
static inline int take_offset(bytes_in *in) {
    const uint8_t kind = take_u8(in);
    switch (kind % 8) {
    case 0: return INT_MAX - take_range(in, 0, 3);
    case 1: return INT_MIN + take_range(in, 0, 3);
    case 2: return (int)take_u32(in);
    default: return take_range(in, -12, 12);
    }
}

/* A float that is often ordinary and sometimes special. */
static inline float take_float(bytes_in *in) {
    const uint8_t kind = take_u8(in);
    if (kind < 160) return ((float)kind - 80.0f) / 16.0f;
    switch (kind % 12) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return 1e-40f;           /* denormal */
    case 4: return -1e-42f;
    case 5: return 1e30f;
    case 6: return -1e30f;
    case 7: return FLT_MAX;
    case 8: return 1e18f;
    case 9: return 0.0f;
    case 10: return -0.0f;
    default: {
        const uint32_t bits = take_u32(in);
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    }
}

/* x (n) filled from the bytes; returns whether every value is finite. */
static inline int fill_floats(bytes_in *in, float *x, long n) {
    int finite = 1;
    for (long i = 0; i < n; i++) {
        x[i] = take_float(in);
        finite &= isfinite(x[i]) != 0;
    }
    return finite;
}

/* A failed call left a known status and a message. */
static inline void check_refusal(int status, const char *call) {
    INVARIANT(status > ATTN_OK && status <= ATTN_BACKWARD_THROUGH_CACHE, "%s: unknown status %d", call, status);
    INVARIANT(attn_last_status() == status, "%s: last status %d, returned %d", call, attn_last_status(), status);
    const char *message = attn_last_error();
    INVARIANT(message && message[0] != '\0', "%s: status %d without a message", call, status);
    INVARIANT(memchr(message, '\0', ATTN_ERROR_BYTES) != NULL, "%s: message not terminated", call);
}

/* probs (rows, Tk) with allowed (rows, Tk): finite, rows sum to 1, blocked
 * entries exactly 0. */
static inline void check_probabilities(const float *probs, const uint8_t *allowed, long rows, int Tk, const char *call) {
    for (long r = 0; r < rows; r++) {
        double sum = 0;
        for (int j = 0; j < Tk; j++) {
            const float p = probs[r * Tk + j];
            INVARIANT(isfinite(p) && p >= 0.0f && p <= 1.0f, "%s: row %ld key %d probability %g", call, r, j, p);
            if (!allowed[r * Tk + j]) INVARIANT(p == 0.0f, "%s: blocked pair row %ld key %d has weight %g", call, r, j, p);
            sum += p;
        }
        INVARIANT(fabs(sum - 1.0) <= 1e-5 * Tk, "%s: row %ld sums to %.9f", call, r, sum);
    }
}

static inline void check_finite_all(const float *x, long n, const char *what) {
    for (long i = 0; i < n; i++) INVARIANT(isfinite(x[i]), "%s[%ld] = %g is not finite", what, i, x[i]);
}

#endif

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

/* out (B, H, Tq, dv) = probs (B, H, Tq, Tk) @ v (B, H, Tk, dv), checked in
 * double: each entry within 1e-5 of the sum of its terms' sizes. A path that
 * never stores the probabilities (the tiled one, `unstored` 1) may differ by
 * FLT_MIN |v| more per term: a stored probability is resolved only down to
 * FLT_MIN (below it float32 loses precision and the SIMD exp gives 0), where
 * that path still carries p v. */
static inline void check_probs_times_v(const float *out, const float *probs, const float *v, const attn_dims *d,
                                       int unstored, const char *call) {
    for (long bh = 0; bh < (long)d->B * d->H; bh++)
        for (int i = 0; i < d->Tq; i++)
            for (int col = 0; col < d->dv; col++) {
                double want = 0, size_sum = 0, v_sum = 0;
                for (int j = 0; j < d->Tk; j++) {
                    const double vj = v[(bh * d->Tk + j) * d->dv + col];
                    const double term = (double)probs[(bh * d->Tq + i) * d->Tk + j] * vj;
                    want += term;
                    size_sum += fabs(term);
                    v_sum += fabs(vj);
                }
                const float got = out[(bh * d->Tq + i) * d->dv + col];
                INVARIANT(fabs(got - want) <= 1e-5 * size_sum + (unstored ? FLT_MIN * v_sum : 0.0) + 1e-30,
                          "%s: out[%ld, %d, %d] = %g, probs @ v = %g", call, bh, i, col, got, want);
            }
}

/* ------------------------------------------------------------------------ */
/* One attn_sdpa-shaped call decoded from the bytes (forward and backward)   */
/* ------------------------------------------------------------------------ */

typedef struct {
    attn_dims dims;
    int valid;                  /* dims the core must accept (all small and positive) */
    long nq, nk, nv, nout, nw;  /* sizes of the buffers, for the small dims */
    float *q, *k, *v;
    int finite;                 /* q, k and v hold no NaN or infinity */
    attn_visibility vis;
    const attn_visibility *rule; /* &vis, or NULL (every key visible) */
    uint8_t *mask, *kpm;
    int bug;
    float scale;
    int keep, keep_scores;      /* pass probs (or the gradients of the matrices), scores */
} sdpa_call;

/* A dim: small, or now and then one the core must refuse. */
static inline int take_call_dim(bytes_in *in, int max) {
    const uint8_t kind = take_u8(in);
    if (kind < 244) return 1 + kind % max;
    static const int bad[] = {0, -1, INT_MIN, INT_MAX};
    return bad[kind % 4];
}

static inline void sdpa_call_take(bytes_in *in, sdpa_call *c) {
    memset(c, 0, sizeof *c);
    c->dims = (attn_dims){take_call_dim(in, 3), take_call_dim(in, 3), take_call_dim(in, 10),
                          take_call_dim(in, 10), take_call_dim(in, 10), take_call_dim(in, 10)};
    const attn_dims *d = &c->dims;
    c->valid = d->B > 0 && d->H > 0 && d->Tq > 0 && d->Tk > 0 && d->dk > 0 && d->dv > 0 &&
               d->B <= 3 && d->H <= 3 && d->Tq <= 10 && d->Tk <= 10 && d->dk <= 10 && d->dv <= 10;
    /* Buffers for the small dims only: a refused call must not read them. */
    const long B = c->valid ? d->B : 1, H = c->valid ? d->H : 1, Tq = c->valid ? d->Tq : 1,
               Tk = c->valid ? d->Tk : 1, dk = c->valid ? d->dk : 1, dv = c->valid ? d->dv : 1;
    c->nq = B * H * Tq * dk, c->nk = B * H * Tk * dk, c->nv = B * H * Tk * dv;
    c->nout = B * H * Tq * dv, c->nw = B * H * Tq * Tk;

    const uint8_t flags = take_u8(in);
    if (flags & 1) { /* a mask with any strides, 0 included */
        attn_mask *m = &c->vis.mask;
        m->sb = take_range(in, 0, 40), m->sh = take_range(in, 0, 40);
        m->sq = take_range(in, 0, 40), m->sk = take_range(in, 0, 40);
        const long n = (B - 1) * m->sb + (H - 1) * m->sh + (Tq - 1) * m->sq + (Tk - 1) * m->sk + 1;
        c->mask = malloc(n);
        const uint8_t density = take_u8(in);
        for (long i = 0; i < n; i++) c->mask[i] = take_u8(in) < density ? 0 : take_range(in, 1, 3);
        m->data = c->mask;
    }
    if (flags & 2) {
        c->kpm = malloc(B * Tk);
        for (long i = 0; i < B * Tk; i++) c->kpm[i] = take_u8(in) % 5 != 0;
        c->vis.key_padding_mask = c->kpm;
    }
    c->vis.causal = (flags & 4) != 0;
    c->vis.causal_offset = take_offset(in);
    c->bug = (flags & 8) ? take_range(in, -2, ATTN_BUG_COUNT + 1) : ATTN_BUG_NONE;
    c->scale = (flags & 16) ? take_float(in) : 1.0f / sqrtf((float)dk);
    c->keep = (flags & 32) == 0, c->keep_scores = (flags & 64) != 0;
    c->rule = (flags & 128) && !c->mask && !c->kpm && !c->vis.causal ? NULL : &c->vis;

    c->q = malloc(sizeof(float) * c->nq), c->k = malloc(sizeof(float) * c->nk), c->v = malloc(sizeof(float) * c->nv);
    c->finite = fill_floats(in, c->q, c->nq);
    c->finite &= fill_floats(in, c->k, c->nk);
    c->finite &= fill_floats(in, c->v, c->nv);
}

static inline void sdpa_call_free(sdpa_call *c) {
    free(c->q), free(c->k), free(c->v), free(c->mask), free(c->kpm);
}

/* The visibility rule, written here again from its definition in attention.h. */
static inline int rule_allows(const attn_visibility *vis, int Tk, int b, int h, int i, int j) {
    if (!vis) return 1;
    const attn_mask *m = &vis->mask;
    if (m->data && !m->data[b * m->sb + h * m->sh + i * m->sq + j * m->sk]) return 0;
    if (vis->key_padding_mask && !vis->key_padding_mask[(long)b * Tk + j]) return 0;
    return !vis->causal || (int64_t)j <= (int64_t)i + vis->causal_offset;
}

/* allowed (B, H, Tq, Tk) <- the rule of a valid call; refuses (aborts) when
 * a row with no allowed key was accepted. */
static inline void sdpa_call_allowed(const sdpa_call *c, uint8_t *allowed, const char *call) {
    const attn_dims *d = &c->dims;
    for (int b = 0; b < d->B; b++)
        for (int h = 0; h < d->H; h++)
            for (int i = 0; i < d->Tq; i++) {
                int any = 0;
                for (int j = 0; j < d->Tk; j++) {
                    const long at = (((long)b * d->H + h) * d->Tq + i) * d->Tk + j;
                    allowed[at] = (uint8_t)rule_allows(c->rule, d->Tk, b, h, i, j);
                    any |= allowed[at];
                }
                INVARIANT(any, "%s: row b=%d h=%d i=%d has no allowed key but was not refused", call, b, h, i);
            }
}

#endif

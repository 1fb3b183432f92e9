/* lesson.c: the numeric demos of the lesson page, run in the core so that
 * the page never computes attention maths in JS.
 * - why divide by sqrt(dk): variance of q.k with and without the scale;
 * - how peaked softmax gets as dk grows, with and without the scale;
 * - the gradient lesson's squared-error loss, its finite-difference slope
 *   and one step of gradient descent. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "attention.h"
#include "kernels.h"

/* Variance of x (n), in double. */
static double variance(const float *x, int n) {
    double mean = 0, m2 = 0;
    for (int i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++) m2 += (x[i] - mean) * (x[i] - mean);
    return m2 / n;
}

/* unscaled, scaled (count); var[2]. q and k (dk) are drawn afresh for every
 * sample with unit-variance normal entries. */
int attn_sample_dots(float *unscaled, float *scaled, float *var, int dk, int count, uint32_t seed) {
    attn_clear_error();
    if (!unscaled || !scaled || !var) return attn_fail(ATTN_BAD_ARGUMENT, "output buffers are required");
    if (dk < 1 || dk > ATTN_DOTS_MAX_DK)
        return attn_fail(ATTN_BAD_ARGUMENT, "dk must be in 1..%d (got %d)", ATTN_DOTS_MAX_DK, dk);
    if (count < 1 || count > ATTN_DOTS_MAX_COUNT)
        return attn_fail(ATTN_BAD_ARGUMENT, "count must be in 1..%d (got %d)", ATTN_DOTS_MAX_COUNT, count);
    attn_rng rng;
    attn_rng_seed(&rng, seed);
    const float scale = 1.0f / sqrtf((float)dk);
    for (int n = 0; n < count; n++) {
        float dot = 0.0f;
        for (int d = 0; d < dk; d++) dot += attn_rng_normal(&rng) * attn_rng_normal(&rng);
        unscaled[n] = dot;
        scaled[n] = dot * scale;
    }
    var[0] = (float)variance(unscaled, count);
    var[1] = (float)variance(scaled, count);
    return ATTN_OK;
}

/* peak[2] <- mean largest weight of softmax over `keys` logits q.k, scaled
 * by 1/sqrt(dk) and unscaled, averaged over `count` random queries. */
int attn_softmax_peak(float *peak, int dk, int keys, int count, uint32_t seed) {
    attn_clear_error();
    if (!peak) return attn_fail(ATTN_BAD_ARGUMENT, "output buffer is required");
    if (dk < 1 || dk > ATTN_PEAK_MAX_DK)
        return attn_fail(ATTN_BAD_ARGUMENT, "dk must be in 1..%d (got %d)", ATTN_PEAK_MAX_DK, dk);
    if (keys < 1 || keys > ATTN_PEAK_MAX_KEYS)
        return attn_fail(ATTN_BAD_ARGUMENT, "keys must be in 1..%d (got %d)", ATTN_PEAK_MAX_KEYS, keys);
    if (count < 1 || count > ATTN_PEAK_MAX_COUNT)
        return attn_fail(ATTN_BAD_ARGUMENT, "count must be in 1..%d (got %d)", ATTN_PEAK_MAX_COUNT, count);
    float row_scaled[ATTN_PEAK_MAX_KEYS], row_raw[ATTN_PEAK_MAX_KEYS];
    attn_rng rng;
    attn_rng_seed(&rng, seed);
    const float scale = 1.0f / sqrtf((float)dk);
    double sum_scaled = 0, sum_raw = 0;
    for (int n = 0; n < count; n++) {
        for (int j = 0; j < keys; j++) {
            float dot = 0.0f;
            for (int d = 0; d < dk; d++) dot += attn_rng_normal(&rng) * attn_rng_normal(&rng);
            row_raw[j] = dot;
            row_scaled[j] = dot * scale;
        }
        attn_softmax_rows(row_raw, keys, 1, keys);
        attn_softmax_rows(row_scaled, keys, 1, keys);
        float max_raw = 0, max_scaled = 0;
        for (int j = 0; j < keys; j++) {
            max_raw = fmaxf(max_raw, row_raw[j]);
            max_scaled = fmaxf(max_scaled, row_scaled[j]);
        }
        sum_raw += max_raw;
        sum_scaled += max_scaled;
    }
    peak[0] = (float)(sum_scaled / count);
    peak[1] = (float)(sum_raw / count);
    return ATTN_OK;
}

/* ======================================================================== */
/* The gradient lesson: a squared-error loss, its slope, one descent step    */
/* ======================================================================== */

/* L = 1/2 sum (out - target)^2 over out, target (n), in double. */
static double squared_error(const float *out, const float *target, long n) {
    double loss = 0;
    for (long i = 0; i < n; i++) {
        const double d = (double)out[i] - target[i];
        loss += 0.5 * d * d;
    }
    return loss;
}

/* loss[1]; dout, out, target (n). */
int attn_squared_error(float *loss, float *dout, const float *out, const float *target, int n) {
    attn_clear_error();
    if (!loss || !out || !target) return attn_fail(ATTN_BAD_ARGUMENT, "loss, output and target are required");
    if (n < 1) return attn_fail(ATTN_BAD_ARGUMENT, "the output needs at least one entry (got %d)", n);
    long at;
    if ((at = attn_find_non_finite(out, n)) >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "output has a non-finite value at entry %ld", at);
    if ((at = attn_find_non_finite(target, n)) >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "target has a non-finite value at entry %ld", at);
    const double l = squared_error(out, target, n);
    if (!(l <= FLT_MAX)) return attn_fail(ATTN_OVERFLOW, "the loss overflows float32: output and target are too far apart");
    *loss = (float)l;
    if (dout)
        for (int i = 0; i < n; i++) dout[i] = out[i] - target[i];
    return ATTN_OK;
}

/* x_next, x, dx (n). */
int attn_descend(float *x_next, const float *x, const float *dx, float lr, int n) {
    attn_clear_error();
    if (!x_next || !x || !dx) return attn_fail(ATTN_BAD_ARGUMENT, "x, dx and the result are required");
    if (n < 1) return attn_fail(ATTN_BAD_ARGUMENT, "x needs at least one entry (got %d)", n);
    if (!isfinite(lr)) return attn_fail(ATTN_NON_FINITE_INPUT, "lr (the step size) is not finite");
    long at;
    if ((at = attn_find_non_finite(x, n)) >= 0) return attn_fail(ATTN_NON_FINITE_INPUT, "x has a non-finite value at entry %ld", at);
    if ((at = attn_find_non_finite(dx, n)) >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "dx has a non-finite value at entry %ld", at);
    for (int i = 0; i < n; i++) x_next[i] = x[i] - lr * dx[i];
    if ((at = attn_find_non_finite(x_next, n)) >= 0)
        return attn_fail(ATTN_OVERFLOW, "the step overflows float32 at entry %ld: lr is too large", at);
    return ATTN_OK;
}

/* slope[1]; q (B, H, Tq, dk), k, v as attn_sdpa; target (B, H, Tq, dv).
 * Two forward passes at q +- eps in entry `at`; their losses' difference. */
int attn_sdpa_loss_slope(float *slope, const float *q, const float *k, const float *v,
                         const float *target, const attn_visibility *vis,
                         const attn_dims *dims, float scale, int at, float eps) {
    attn_clear_error();
    if (!slope || !q || !target || !dims) return attn_fail(ATTN_BAD_ARGUMENT, "slope, q, target and dims are required");
    const long nq = (long)dims->B * dims->H * dims->Tq * dims->dk;
    const long nout = (long)dims->B * dims->H * dims->Tq * dims->dv;
    if (nq < 1 || nout < 1) return attn_fail(ATTN_BAD_ARGUMENT, "dims must be positive");
    if (at < 0 || at >= nq) return attn_fail(ATTN_BAD_ARGUMENT, "entry %d is outside q, which has %ld entries", at, nq);
    if (!(eps > 0) || !isfinite(eps)) return attn_fail(ATTN_BAD_ARGUMENT, "eps must be a positive finite number");
    const long bad = attn_find_non_finite(target, nout);
    if (bad >= 0) return attn_fail(ATTN_NON_FINITE_INPUT, "target has a non-finite value at entry %ld", bad);
    /* Past q's own size (or 1) the difference is no longer a slope at q. */
    const float most = fmaxf(1.0f, fabsf(q[at]));
    if (isfinite(q[at]) && eps > most)
        return attn_fail(ATTN_BAD_ARGUMENT, "eps (%g) is too large for a slope at q entry %d: at most max(1, |q|) = %g",
                         (double)eps, at, (double)most);

    float *nudged = attn_alloc(4.0 * ((double)nq + nout)); /* q (nq), then out (nout) */
    if (!nudged) return ATTN_TOO_LARGE;
    float *out = nudged + nq;
    double loss[2];
    int status = ATTN_OK;
    for (int side = 0; side < 2 && !status; side++) {
        memcpy(nudged, q, sizeof(float) * nq);
        nudged[at] += side == 0 ? eps : -eps;
        if (!isfinite(nudged[at])) { /* q was finite: the nudge took it past float32 */
            status = attn_fail(ATTN_OVERFLOW, "q %c eps overflows float32 at entry %d: eps is too large for this q",
                               side == 0 ? '+' : '-', at);
            break;
        }
        if (nudged[at] == q[at]) { /* the nudge is lost in float32: no difference to divide */
            status = attn_fail(ATTN_BAD_ARGUMENT, "eps (%g) is lost in float32: q entry %d is %g, and %g %c eps rounds back to %g; use a larger eps",
                               (double)eps, at, (double)q[at], (double)q[at], side == 0 ? '+' : '-', (double)q[at]);
            break;
        }
        status = attn_sdpa(out, NULL, NULL, nudged, k, v, vis, dims, scale, ATTN_BUG_NONE);
        if (!status) loss[side] = squared_error(out, target, nout);
        /* The losses are summed in double; beyond float32 (where squared
         * error refuses its loss) their difference is lost. */
        if (!status && !(loss[side] <= FLT_MAX))
            status = attn_fail(ATTN_OVERFLOW, "the loss overflows float32 at q %c eps (entry %d): sdpa's output and target are too far apart",
                               side == 0 ? '+' : '-', at);
    }
    attn_free(nudged);
    if (status) return status;
    const double change = (loss[0] - loss[1]) / (2.0 * eps);
    if (!(fabs(change) <= FLT_MAX))
        return attn_fail(ATTN_OVERFLOW, "the slope overflows float32 at entry %d: v or target are too large", at);
    *slope = (float)change;
    return ATTN_OK;
}

/* lesson.c: the numeric demos of the lesson page, run in the core so that
 * the page never computes attention maths in JS.
 * - why divide by sqrt(dk): variance of q.k with and without the scale;
 * - how peaked softmax gets as dk grows, with and without the scale. */
#include <math.h>

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

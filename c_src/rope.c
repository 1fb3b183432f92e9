/* rope.c: rotary position embeddings (RoPE), shared by lab.applyRope and
 * the multi-head module.
 *
 * Split-halves pairing (as GPT-NeoX and Llama code do): in a row of width D,
 * entry d < D/2 is rotated together with entry d + D/2 by the angle
 * pos * base^(-2d/D). A score q.k between a query rotated at position p and
 * a key rotated at position p' then depends only on p - p'.
 */
#include <math.h>

#include "attention.h"

/* x (BH, T, D) <- rotated in place; row t at position positions[t], or at
 * first_pos + t when positions is NULL. D even. Positions are doubles so
 * that an offset plus a cache length cannot wrap around. direction -1
 * rotates back by the same angles: the inverse, which is also the
 * transpose (RoPE's backward). */
void attn_rope_rotate(float *x, const double *positions, double first_pos, int BH, int T, int D, double base,
                      int direction) {
    const int half = D / 2;
    for (int t = 0; t < T; t++) {
        const double pos = positions ? positions[t] : first_pos + t;
        for (int d = 0; d < half; d++) {
            const double angle = pos * pow(base, -2.0 * d / D);
            const float c = (float)cos(angle), s = (float)(direction * sin(angle));
            for (int bh = 0; bh < BH; bh++) {
                float *row = x + ((long)bh * T + t) * D;
                const float x1 = row[d], x2 = row[d + half];
                row[d] = x1 * c - x2 * s;
                row[d + half] = x2 * c + x1 * s;
            }
        }
    }
}

/* x (BH, T, D) rotated in place at positions (T); checks the arguments. */
int attn_rope(float *x, const double *positions, int BH, int T, int D, double base) {
    attn_clear_error();
    if (!x || !positions) return attn_fail(ATTN_BAD_ARGUMENT, "x and positions are required");
    if (BH < 1 || T < 1 || D < 2) return attn_fail(ATTN_BAD_ARGUMENT, "dims must be positive, d at least 2 (got %d, %d, %d)", BH, T, D);
    if (D % 2) return attn_fail(ATTN_BAD_ARGUMENT, "RoPE pairs entries, so the last dim d must be even (got %d)", D);
    if (!(isfinite(base) && base > 0)) return attn_fail(ATTN_BAD_ARGUMENT, "base must be a positive finite number");
    for (int t = 0; t < T; t++)
        if (!isfinite(positions[t]))
            return attn_fail(ATTN_NON_FINITE_INPUT, "positions has a non-finite value at %d", t);
    const long at = attn_find_non_finite(x, (long)BH * T * D);
    if (at >= 0)
        return attn_fail(ATTN_NON_FINITE_INPUT, "x has a non-finite value at row %ld, column %ld", at / D % T, at % D);
    attn_rope_rotate(x, positions, 0.0, BH, T, D, base, 1);
    const long over = attn_find_non_finite(x, (long)BH * T * D);
    if (over >= 0)
        return attn_fail(ATTN_OVERFLOW, "rotating x overflows float32 at row %ld, column %ld", over / D % T, over % D);
    return ATTN_OK;
}

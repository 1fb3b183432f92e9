/* rng.c: deterministic random numbers for weight init and the lesson demos.
 * splitmix64 turns the seed into a state, xorshift64* steps it. The integer
 * stream is the same on every build; normals come two at a time from
 * Marsaglia's polar method (Box-Muller without the sine and cosine). */
#include <math.h>

#include "attention.h"

/* splitmix64's mixing step: 64 well-spread bits from any x. */
static uint64_t mix64(uint64_t x) {
    uint64_t z = x + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* r <- a state made from seed. */
void attn_rng_seed(attn_rng *r, uint32_t seed) {
    r->s = mix64(seed) | 1u; /* never zero */
    r->has_spare = 0;
}

/* In [0, 1): the number at position `counter` of the stream of `seed`. It
 * depends on nothing else, so any entry can be drawn in any order. */
float attn_hash_uniform(uint32_t seed, uint64_t counter) {
    return (float)(mix64(mix64(seed) ^ counter) >> 40) * (1.0f / 16777216.0f);
}

/* The next 64 random bits. */
static uint64_t next_u64(attn_rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}

/* In [0, 1), from the top 24 bits. */
float attn_rng_uniform(attn_rng *r) { return (float)(next_u64(r) >> 40) * (1.0f / 16777216.0f); }

/* Mean 0, variance 1. */
float attn_rng_normal(attn_rng *r) {
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    float u, v, s;
    do { /* a point uniform in the unit disc, not the centre */
        u = 2.0f * attn_rng_uniform(r) - 1.0f;
        v = 2.0f * attn_rng_uniform(r) - 1.0f;
        s = u * u + v * v;
    } while (s >= 1.0f || s == 0.0f);
    const float factor = sqrtf(-2.0f * logf(s) / s);
    r->spare = v * factor;
    r->has_spare = 1;
    return u * factor;
}

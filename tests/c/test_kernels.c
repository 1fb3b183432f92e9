/* test_kernels.c: native tests of the numeric kernels (c_src/kernels.c),
 * scalar build, under ASan and UBSan. Every result is compared with a
 * double-precision loop written here; tails are covered by every width
 * N = 1..17 (a strip of 8, then 4, then 1 in the SIMD build). Run by
 * tests/native.test.mjs from npm test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "check.h"
#include "kernels.h"


/* got (n) vs want (n) within tol * max(1, |want|); prints the first
 * mismatches and the largest difference. */
static void check_close(const char *name, const float *got, const double *want, int n, double tol) {
    double worst = 0;
    int shown = 0;
    for (int i = 0; i < n; i++) {
        const double diff = fabs(got[i] - want[i]) / fmax(1.0, fabs(want[i]));
        if (!(diff <= tol) && shown++ < 5) printf("  %s[%d]: got %.9g want %.9g (diff %.2e)\n", name, i, got[i], want[i], diff);
        if (!(diff <= worst)) worst = diff;
    }
    CHECK(worst <= tol, "%s: max diff %.3e > tol %.1e", name, worst, tol);
}

static float *random_floats(attn_rng *rng, int n) {
    float *x = malloc(sizeof(float) * (n > 0 ? n : 1));
    for (int i = 0; i < n; i++) x[i] = attn_rng_normal(rng);
    return x;
}

/* c (M, N) = alpha * a (M, K) @ b (K, N) and the packed form against a
 * double loop, for every N in 1..17 and M, K around the block sizes. */
static void test_gemm_tails(void) {
    attn_rng rng;
    attn_rng_seed(&rng, 5);
    const int Ms[] = {1, 3, 4, 5, 9}, Ks[] = {1, 3, 8, 17};
    for (int mi = 0; mi < 5; mi++)
        for (int ki = 0; ki < 4; ki++)
            for (int N = 1; N <= 17; N++) {
                const int M = Ms[mi], K = Ks[ki];
                const float alpha = 0.375f;
                float *a = random_floats(&rng, M * K), *b = random_floats(&rng, K * N);
                float *bt = malloc(sizeof(float) * N * K), *packed = malloc(sizeof(float) * N * K);
                float *c = malloc(sizeof(float) * M * N), *c_packed = malloc(sizeof(float) * M * N);
                double *want = malloc(sizeof(double) * M * N);
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++) {
                        double acc = 0;
                        for (int k = 0; k < K; k++) acc += (double)a[i * K + k] * b[k * N + j];
                        want[i * N + j] = alpha * acc;
                    }
                attn_gemm(c, N, a, K, b, N, M, N, K, alpha);
                attn_transpose(bt, b, K, N); /* (N, K): the layout attn_pack_strips takes */
                for (int k = 0; k < K; k++)
                    for (int j = 0; j < N; j++)
                        CHECK(bt[j * K + k] == b[k * N + j], "transpose (%d, %d) of %dx%d", k, j, K, N);
                attn_pack_strips(packed, bt, N, K);
                attn_gemm_packed(c_packed, N, a, K, packed, M, N, K, alpha);
                char name[64];
                snprintf(name, sizeof name, "gemm M=%d N=%d K=%d", M, N, K);
                check_close(name, c, want, M * N, 1e-5 * K);
                snprintf(name, sizeof name, "gemm_packed M=%d N=%d K=%d", M, N, K);
                check_close(name, c_packed, want, M * N, 1e-5 * K);
                CHECK(memcmp(c, c_packed, sizeof(float) * M * N) == 0, "packed and plain agree bit for bit, M=%d N=%d K=%d", M, N, K);
                free(a), free(b), free(bt), free(packed), free(c), free(c_packed), free(want);
            }
}

/* One softmax row x (n) against a double softmax; -INFINITY entries must
 * come out exactly 0 and the row must sum to 1. */
static void check_softmax_row(const char *name, const float *in, int n) {
    float *x = calloc((size_t)n, sizeof(float));
    double *want = calloc((size_t)n, sizeof(double));
    memcpy(x, in, sizeof(float) * n);
    double max = -INFINITY, sum = 0;
    for (int j = 0; j < n; j++) max = fmax(max, in[j]);
    for (int j = 0; j < n; j++) sum += (want[j] = exp((double)in[j] - max));
    for (int j = 0; j < n; j++) want[j] /= sum;
    attn_softmax_rows(x, n, 1, n);
    check_close(name, x, want, n, 2e-6);
    double total = 0;
    for (int j = 0; j < n; j++) {
        total += x[j];
        if (isinf(in[j])) CHECK(x[j] == 0.0f, "%s: -INFINITY at %d gives %g, not exactly 0", name, j, x[j]);
    }
    CHECK(fabs(total - 1.0) <= 1e-5, "%s: row sums to %.9f", name, total);
    free(x), free(want);
}

static void test_softmax(void) {
    attn_rng rng;
    attn_rng_seed(&rng, 9);
    for (int n = 1; n <= 17; n++) {
        float row[64];
        char name[64];
        /* U(90, 100): exp of these overflows float32 without the max shift */
        for (int j = 0; j < n; j++) row[j] = 90.0f + 10.0f * attn_rng_uniform(&rng);
        snprintf(name, sizeof name, "softmax U(90,100) n=%d", n);
        check_softmax_row(name, row, n);
        /* -INFINITY entries, keeping at least one finite */
        for (int j = 0; j < n; j++) row[j] = (j % 3 == 1) ? -INFINITY : attn_rng_normal(&rng);
        snprintf(name, sizeof name, "softmax with -inf n=%d", n);
        check_softmax_row(name, row, n);
        /* a very wide range: entries far below the max underflow to 0 */
        for (int j = 0; j < n; j++) row[j] = (j % 2 ? -1e30f : 1e30f) * attn_rng_uniform(&rng);
        row[n - 1] = 3e38f;
        snprintf(name, sizeof name, "softmax wide range n=%d", n);
        check_softmax_row(name, row, n);
        for (int j = 0; j < n; j++) row[j] = -80.0f * j;
        snprintf(name, sizeof name, "softmax steps of -80 n=%d", n);
        check_softmax_row(name, row, n);
    }
    /* several rows with a stride wider than the row */
    float rows[3 * 7];
    for (int i = 0; i < 21; i++) rows[i] = (float)i;
    attn_softmax_rows(rows, 7, 3, 5);
    for (int r = 0; r < 3; r++) {
        double s = 0;
        for (int j = 0; j < 5; j++) s += rows[r * 7 + j];
        CHECK(fabs(s - 1) < 1e-6 && rows[r * 7 + 5] == (float)(r * 7 + 5), "strided row %d: sum %g, untouched tail", r, s);
    }
}

int main(void) {
    test_gemm_tails();
    test_softmax();
    printf("native kernel tests: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}

/* fuzz_workspace.c: sequences of attn_workspace requests of any size,
 * including NaN, negative, zero, just under and just over the limit.
 * A granted buffer holds at least the bytes asked for (ASan checks every
 * byte is writable) and keeps what was written when a smaller request
 * reuses it; a refused one is NULL with TOO_LARGE or BAD_ARGUMENT and a
 * message. Requests between 64 MiB and the limit are skipped: they are
 * valid but too slow for a fuzzer under ASan. */
#include "fuzz.h"

static double take_bytes(bytes_in *in) {
    const uint8_t kind = take_u8(in);
    switch (kind % 10) {
    case 0: return NAN;
    case 1: return -(double)take_u32(in);
    case 2: return ATTN_MAX_REQUEST_BYTES + take_range(in, 1, 100);
    case 3: return ATTN_MAX_REQUEST_BYTES * 1e6;
    case 4: return INFINITY;
    case 5: return 0;
    case 6: return (double)take_u32(in) / 64.0;  /* up to 64 MiB */
    default: return take_range(in, 1, 255) * (double)take_range(in, 1, 255);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes_in in = {data, size, 0};
    double granted = 0;
    for (int step = 0; step < 16 && in.at < in.size; step++) {
        const double bytes = take_bytes(&in);
        if (bytes > 64.0 * 1048576.0 && bytes <= ATTN_MAX_REQUEST_BYTES) continue;
        uint8_t *p = attn_workspace(bytes);
        if (!p) {
            check_refusal(attn_last_status(), "attn_workspace");
            INVARIANT(!(bytes >= 0) || bytes > ATTN_MAX_REQUEST_BYTES, "refused %.0f bytes: %s", bytes, attn_last_error());
            continue;
        }
        INVARIANT(bytes >= 0 && bytes <= ATTN_MAX_REQUEST_BYTES, "granted %g bytes", bytes);
        INVARIANT(attn_last_error()[0] == '\0', "success left a message");
        const size_t n = (size_t)bytes;
        if (n > 0) {
            INVARIANT(n > granted || p[0] == 0xA5, "a reused workspace lost its contents");
            memset(p, 0xA5, n);
            granted = n;
        }
    }
    return 0;
}

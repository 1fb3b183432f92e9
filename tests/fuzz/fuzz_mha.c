/* fuzz_mha.c: sequences of attn_mha_create / set / forward (saving for
 * backward or not) / backward / free on a few module slots, with KV caches carried from one forward to the next,
 * position offsets (negative ones and ones at the ends of int), masks with
 * any strides, key and query padding and bug ids.
 * On success with the correct path: the output is finite, padded queries
 * give exactly 0, probability rows sum to 1 and blocked pairs (by the rule
 * written here from attention.h) weigh exactly 0, the new cache starts with
 * the old one; on failure: a known status and a message. See fuzz.h. */
#include "fuzz.h"

#define SLOTS 3
#define MAX_C 16

typedef struct {
    attn_mha *m;
    int C, H, D, bias;
    /* the cache the last self-attention forward returned, (1|2, H, Tp, D) */
    float *k, *v;
    uint8_t *kpm;
    int B, Tp;
    int saved_bug; /* bug of the forward saved for backward; -1: none or unknown */
} slot;

static void drop_cache(slot *s) {
    free(s->k), free(s->v), free(s->kpm);
    s->k = s->v = NULL, s->kpm = NULL, s->Tp = 0, s->B = 0;
}

static void op_create(bytes_in *in, slot *s) {
    const int C = take_range(in, -1, MAX_C), H = take_range(in, 0, 5);
    const int bias = take_u8(in) & 1, rope = take_u8(in) & 1;
    attn_mha *m = attn_mha_create(C, H, bias, rope, take_u32(in));
    if (!m) {
        check_refusal(attn_last_status(), "attn_mha_create");
        INVARIANT(C < 1 || H < 1 || C % H || (rope && (C / H) % 2), "create(%d, %d, rope %d) refused: %s", C, H, rope, attn_last_error());
        return;
    }
    INVARIANT(C >= 1 && H >= 1 && C % H == 0 && !(rope && (C / H) % 2), "create(%d, %d, rope %d) accepted", C, H, rope);
    attn_mha_free(s->m);
    drop_cache(s);
    *s = (slot){m, C, H, C / H, bias, NULL, NULL, NULL, 0, 0, -1};
}

static void op_set(bytes_in *in, slot *s) {
    const int C = s->m ? s->C : 1, which = take_range(in, -1, 4);
    float weight[MAX_C * MAX_C], bias[MAX_C];
    int finite = fill_floats(in, weight, (long)C * C);
    const int give_bias = take_u8(in) & 1;
    if (give_bias) finite &= fill_floats(in, bias, C);
    const int status = attn_mha_set(s->m, which, weight, give_bias ? bias : NULL);
    if (status) {
        check_refusal(status, "attn_mha_set");
        return;
    }
    INVARIANT(s->m && which >= 0 && which < 4 && finite && (!give_bias || s->bias), "attn_mha_set accepted a bad call");
    INVARIANT(memcmp(attn_mha_weight(s->m, which), weight, sizeof(float) * C * C) == 0, "weights not stored");
    drop_cache(s); /* its keys came from other weights */
}

/* attn_mha_backward through whatever forward the module saved (buffers of
 * the largest size a saved forward can have). On success every gradient is
 * finite. */
static void op_backward(bytes_in *in, slot *s) {
    enum { MAX_BTC = 2 * 5 * MAX_C };
    float dout[MAX_BTC], dquery[MAX_BTC] = {0}, dkv[MAX_BTC] = {0};
    float dweight[4 * MAX_C * MAX_C] = {0}, dbias[4 * MAX_C] = {0};
    fill_floats(in, dout, MAX_BTC); /* only the saved forward's part is read */
    const int status = attn_mha_backward(s->m, dquery, dkv, dweight, s->m && s->bias ? dbias : NULL, dout);
    if (status) {
        check_refusal(status, "attn_mha_backward");
        return;
    }
    INVARIANT(s->m, "backward on a freed module");
    if (s->saved_bug != ATTN_BUG_NONE) return; /* a bugged forward may show its NaN */
    check_finite_all(dquery, MAX_BTC, "dquery");
    check_finite_all(dkv, MAX_BTC, "dkv");
    check_finite_all(dweight, 4 * MAX_C * MAX_C, "dweight");
    check_finite_all(dbias, 4 * MAX_C, "dbias");
}

static void op_forward(bytes_in *in, slot *s) {
    const int C = s->m ? s->C : 4, H = s->m ? s->H : 1, D = s->m ? s->D : 4;
    const int use_cache = s->Tp > 0 && (take_u8(in) & 1);
    const int B = use_cache ? s->B : take_range(in, 1, 2), Tq = take_range(in, 1, 5);
    const int cross = !use_cache && (take_u8(in) & 1);
    const int Tkn = cross ? take_range(in, 1, 5) : Tq, Tp = use_cache ? s->Tp : 0, Tk = Tp + Tkn;
    const uint8_t flags = take_u8(in);
    float query[2 * 5 * MAX_C], kv[2 * 5 * MAX_C];
    int finite = fill_floats(in, query, (long)B * Tq * C);
    if (cross) finite &= fill_floats(in, kv, (long)B * Tkn * C);

    attn_mha_visibility vis = {{NULL, 0, 0, 0, 0}, NULL, NULL, (flags & 1) != 0, 0, 0};
    uint8_t mask[4096], kpm[2 * 5], qpm[2 * 5];
    if (flags & 2) {
        vis.mask.sb = take_range(in, 0, 30), vis.mask.sh = take_range(in, 0, 30);
        vis.mask.sq = take_range(in, 0, 30), vis.mask.sk = take_range(in, 0, 30);
        const long n = (B - 1) * vis.mask.sb + (H - 1) * vis.mask.sh + (Tq - 1) * vis.mask.sq + (Tk - 1) * vis.mask.sk + 1;
        for (long i = 0; i < n && i < 4096; i++) mask[i] = take_u8(in) % 4 != 0;
        if (n <= 4096) vis.mask.data = mask;
    }
    if (flags & 4) {
        for (int i = 0; i < B * Tkn; i++) kpm[i] = take_u8(in) % 4 != 0;
        vis.key_padding_mask = kpm;
    }
    if (flags & 8) {
        for (int i = 0; i < B * Tq; i++) qpm[i] = take_u8(in) % 3 != 0;
        vis.query_padding_mask = qpm;
    }
    if (flags & 16) vis.q_offset = take_offset(in), vis.k_offset = take_offset(in);
    else if (use_cache) vis.q_offset = Tp;
    const int bug = (flags & 32) ? take_range(in, -1, ATTN_BUG_COUNT) : ATTN_BUG_NONE;
    const int keep = (flags & 64) == 0, save = !cross && (flags & 128);
    const int for_backward = take_u8(in) & 1;
    if (for_backward) attn_mha_save_next(s->m, 1);

    float *out = malloc(sizeof(float) * B * Tq * C), *probs = malloc(sizeof(float) * B * H * Tq * Tk);
    float *new_k = malloc(sizeof(float) * B * H * Tk * D), *new_v = malloc(sizeof(float) * B * H * Tk * D);
    uint8_t *new_kpm = malloc((size_t)B * Tk);
    const attn_kv_cache cache = {use_cache ? s->k : NULL, use_cache ? s->v : NULL, use_cache ? s->kpm : NULL, Tp,
                                 save ? new_k : NULL, save ? new_v : NULL, save ? new_kpm : NULL};
    const int status = attn_mha_forward(out, keep ? probs : NULL, s->m, query, cross ? kv : NULL, B, Tq, Tkn,
                                        &cache, &vis, bug);
    if (for_backward) s->saved_bug = status ? -1 : bug;
    if (status) {
        check_refusal(status, "attn_mha_forward");
        goto done;
    }
    INVARIANT(s->m && finite && vis.q_offset >= 0 && vis.k_offset >= 0, "attn_mha_forward accepted a bad call");
    INVARIANT(bug >= 0 && bug < ATTN_BUG_COUNT, "bug %d accepted", bug);
    if (bug != ATTN_BUG_NONE) goto done;
    check_finite_all(out, (long)B * Tq * C, "mha out");
    if (vis.query_padding_mask)
        for (int r = 0; r < B * Tq; r++)
            if (!qpm[r])
                for (int c = 0; c < C; c++) INVARIANT(out[(long)r * C + c] == 0.0f, "padded query %d has output %g", r, out[(long)r * C + c]);
    if (keep) {
        uint8_t *allowed = malloc((size_t)B * H * Tq * Tk);
        const int64_t diagonal = (int64_t)vis.q_offset - vis.k_offset;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < Tq; i++)
                    for (int j = 0; j < Tk; j++) {
                        const attn_mask *m = &vis.mask;
                        int ok = !m->data || m->data[b * m->sb + h * m->sh + i * m->sq + j * m->sk];
                        ok &= j < Tp ? s->kpm[b * Tp + j] != 0 : !vis.key_padding_mask || kpm[b * Tkn + j - Tp];
                        ok &= !vis.causal || (int64_t)j <= (int64_t)i + diagonal;
                        allowed[(((long)b * H + h) * Tq + i) * Tk + j] = (uint8_t)ok;
                    }
        check_probabilities(probs, allowed, (long)B * H * Tq, Tk, "attn_mha_forward");
        free(allowed);
    }
    if (save) {
        for (long bh = 0; bh < (long)B * H && use_cache; bh++)
            INVARIANT(memcmp(new_k + bh * Tk * D, s->k + bh * Tp * D, sizeof(float) * Tp * D) == 0, "new cache does not start with the old");
        check_finite_all(new_k, (long)B * H * Tk * D, "new_k");
        drop_cache(s);
        s->k = new_k, s->v = new_v, s->kpm = new_kpm, s->B = B, s->Tp = Tk;
        new_k = new_v = NULL, new_kpm = NULL;
    }
done:
    free(out), free(probs), free(new_k), free(new_v), free(new_kpm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes_in in = {data, size, 0};
    slot slots[SLOTS] = {{0}};
    for (int step = 0; step < 12 && in.at < in.size; step++) {
        slot *s = &slots[take_u8(&in) % SLOTS];
        switch (take_u8(&in) % 5) {
        case 0: op_create(&in, s); break;
        case 1: op_set(&in, s); break;
        case 2: op_forward(&in, s); break;
        case 3: op_backward(&in, s); break;
        default:
            attn_mha_free(s->m);
            s->m = NULL;
            drop_cache(s);
            break;
        }
    }
    for (int i = 0; i < SLOTS; i++) attn_mha_free(slots[i].m), drop_cache(&slots[i]);
    return 0;
}

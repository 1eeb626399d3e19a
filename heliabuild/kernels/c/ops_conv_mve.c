/*
 * ops_conv_mve.c - the Helium (MVE) bodies of int8 FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D, written
 * with the ACLE intrinsics of arm_mve.h. Compiled only where the target has integer MVE (the Cortex-M55
 * without +nomve); ops_conv.c calls them from the run entries and keeps the portable bodies as the reference.
 *
 * Why the bytes equal the portable bodies' (docs/kernels.md, "Helium (MVE) bodies"):
 * - Sums are reordered, never rounded: the check bounds the taps so that sum(filter * (input - zp)) fits
 *   int32, and every partial sum here is computed modulo 2^32 (MVE integer lanes and VMLADAV wrap), so the
 *   reordered sum is the same int32.
 * - The input zero point is folded out: sum(w * (x - zp)) = sum(w * x) - zp * sum(w), modulo 2^32, with
 *   sum(w) the caller's weight sums (the code generator's, from the filter's own bytes). A padding tap
 *   must then contribute
 *   w * (x - zp) = 0: the im2col row holds zp there, and the depthwise border pixels subtract zp per tap.
 * - Requantization in four lanes is the scalar arithmetic step for step: VQRDMULH is gemmlowp's saturating
 *   rounding doubling high multiply (floor((a * b + 2^30) / 2^31) for every a, b, the one overflow
 *   saturated); VRSHL by -e after adding -1 to a negative value (when e > 0) is the rounding divide with
 *   ties away from zero; the single rounding takes the exact 64-bit product's high and low words (VMULH,
 *   VMUL) and rounds once. helia_fixed_mve.h; tests/test_kernels_mve_requantize.py compares them with the scalar
 *   functions on QEMU.
 *
 * C99, no heap, no recursion.
 */
#include "helia_ops_internal.h"

#if HELIA_OPS_MVE

#include <arm_mve.h>

#include "helia_bytes_mve.h"
#include "helia_fixed_mve.h"

#define ROUND_SINGLE 1
#define ROUND_DOUBLE 2

/* ---- four-lane requantization ------------------------------------------------------------------ */

/* What four output channels need to requantize, computed once per block of channels: the shift split as the
 * rounding wants it (helia_fixed_mve.h). */
typedef struct requant4 {
    int32x4_t offset;     /* bias, less input_zero_point * weight sum (modulo 2^32) */
    int32x4_t multiplier;
    int32x4_t left;       /* double: max(shift, 0); single: shift + 1 */
    int32x4_t right;      /* double: min(shift, 0); single: shift - 31 */
} requant4;

typedef struct output_range {
    int32_t zero_point;
    int32_t act_min;
    int32_t act_max;
} output_range;

/* The lanes' values of per-channel `values` at channel + index[j]: contiguous channels (`interleave` 1) load
 * in one VLDRW, the even or the odd channels of eight (2, the depthwise body's widening multiplies) gather. */
static inline int32x4_t channel_values(const int32_t *values, int32_t channel, uint32x4_t index, mve_pred16_t lanes,
                                       int interleave)
{
    return interleave == 1 ? vldrwq_z_s32(values + channel, lanes)
                           : vldrwq_gather_shifted_offset_z_s32(values + channel, index, lanes);
}

/* The constants of the channels channel + index[j], for the lanes j of `lanes`, loaded once per block and layer
 * (or per im2col pixel), outside the tap loops. */
static inline requant4 requant_constants(const int32_t *bias, const int32_t *weight_sums, const int32_t *multipliers,
                                         const int32_t *shifts, int32_t quant_count, int32_t input_zero_point,
                                         int32_t channel, uint32x4_t index, mve_pred16_t lanes, int interleave,
                                         int rounding)
{
    const int32x4_t zero = vdupq_n_s32(0);
    requant4 r;
    int32x4_t shift;
    r.offset = bias != NULL ? channel_values(bias, channel, index, lanes, interleave) : zero;
    r.offset = vmlaq_n_s32(r.offset, channel_values(weight_sums, channel, index, lanes, interleave), -input_zero_point);
    if (quant_count == 1) {
        r.multiplier = vdupq_n_s32(multipliers[0]);
        shift = vdupq_n_s32(shifts[0]);
    } else {
        r.multiplier = channel_values(multipliers, channel, index, lanes, interleave);
        shift = channel_values(shifts, channel, index, lanes, interleave);
    }
    if (rounding == ROUND_SINGLE) {
        r.left = vaddq_n_s32(shift, 1);
        r.right = vsubq_n_s32(shift, 31);
    } else {
        r.left = vmaxq_s32(shift, zero);
        r.right = vminq_s32(shift, zero);
    }
    return r;
}

/* The four sums `acc` requantized and clamped. Always inlined with constant `rounding` and `wide` (single
 * rounding with every lane's shift below -1), so each call site compiles one rounding. */
static inline __attribute__((always_inline)) int32x4_t requantize4(int32x4_t acc, const requant4 *r, int rounding,
                                                                  int wide, output_range range)
{
    const int32x4_t value = vaddq_s32(acc, r->offset);
    int32x4_t scaled;
    if (rounding == ROUND_DOUBLE) {
        scaled = helia_mbqm_double_split_x4(value, r->multiplier, r->left, r->right);
    } else if (wide) {
        scaled = helia_mbqm_single_wide_x4(value, r->multiplier, r->left);
    } else {
        scaled = helia_mbqm_single_split_x4(value, r->multiplier, r->left, r->right);
    }
    scaled = vaddq_n_s32(scaled, range.zero_point);
    return vminq_s32(vmaxq_s32(scaled, vdupq_n_s32(range.act_min)), vdupq_n_s32(range.act_max));
}

/* What four output channels (channel + index[j], for the lanes j where that is below `channels`) need to
 * requantize: the contiguous lanes of the matrix-vector product, or the even and the odd channels of the
 * depthwise body's widening multiplies. */
typedef struct channel_block {
    int32x4_t offset; /* bias, less input_zero_point * weight sum when folded (modulo 2^32) */
    int32x4_t multiplier;
    int32x4_t shift;
    uint32x4_t index;
    mve_pred16_t lanes;
} channel_block;

static inline int32x4_t per_channel(const int32_t *values, int32_t quant_count, int32_t channel, uint32x4_t index,
                                    mve_pred16_t lanes)
{
    return quant_count == 1 ? vdupq_n_s32(values[0]) : vldrwq_gather_shifted_offset_z_s32(values + channel, index, lanes);
}

static inline channel_block block_of(const int32_t *bias, const int32_t *weight_sums, const int32_t *multipliers,
                                     const int32_t *shifts, int32_t quant_count, int32_t input_zero_point,
                                     int32_t channel, int32_t channels, uint32x4_t index, int fold_zero_point)
{
    channel_block block;
    int32x4_t offset;
    block.index = index;
    block.lanes = vcmpltq_n_s32(vreinterpretq_s32_u32(index), channels - channel);
    offset = bias != NULL ? vldrwq_gather_shifted_offset_z_s32(bias + channel, index, block.lanes) : vdupq_n_s32(0);
    if (fold_zero_point) {
        offset = vmlaq_n_s32(offset, vldrwq_gather_shifted_offset_z_s32(weight_sums + channel, index, block.lanes),
                             -input_zero_point);
    }
    block.offset = offset;
    block.multiplier = per_channel(multipliers, quant_count, channel, index, block.lanes);
    block.shift = per_channel(shifts, quant_count, channel, index, block.lanes);
    return block;
}

/* The four sums `acc` of `block` (its offset added here) requantized and clamped. Always inlined with a constant
 * `rounding`, so each call site compiles one rounding. */
static inline __attribute__((always_inline)) int32x4_t requantize_block(int32x4_t acc, const channel_block *block,
                                                                       int rounding, int32_t output_zero_point,
                                                                       int32_t act_min, int32_t act_max)
{
    const int32x4_t value = vaddq_s32(acc, block->offset);
    int32x4_t scaled = rounding == ROUND_SINGLE ? helia_mbqm_single_x4(value, block->multiplier, block->shift)
                                                : helia_mbqm_double_x4(value, block->multiplier, block->shift);
    scaled = vaddq_n_s32(scaled, output_zero_point);
    return vminq_s32(vmaxq_s32(scaled, vdupq_n_s32(act_min)), vdupq_n_s32(act_max));
}

/* requantize_block, stored at out[index] for the active lanes. */
static inline __attribute__((always_inline)) void store_block(int8_t *out, int32x4_t acc, const channel_block *block,
                                                             int rounding, int32_t output_zero_point, int32_t act_min,
                                                             int32_t act_max)
{
    vstrbq_scatter_offset_p_s32(
        out, block->index, requantize_block(acc, block, rounding, output_zero_point, act_min, act_max), block->lanes);
}

/* ---- matrix-vector product: FULLY_CONNECTED, 1x1 and im2col CONV_2D ------------------------------ */

/* sum(x[k] * w_r[k]) for `rows` (1..4) filter rows w_r = w + r * depth, as four lanes (unused lanes 0). Four rows
 * share each input load; whole 16-byte chunks load unpredicated, the row's tail once under VCTP, so no byte past
 * `depth` is read. */
static inline int32x4_t dot_rows(const int8_t *x, const int8_t *w, int32_t depth, int32_t rows)
{
    const int32_t chunks = depth / 16;
    const int32_t tail = depth - 16 * chunks;
    const mve_pred16_t last = vctp8q((uint32_t)tail);
    int32_t sums[4] = {0, 0, 0, 0};
    int32_t n;
    if (rows == 4) {
        const int8_t *in = x;
        const int8_t *w0 = w;
        const int8_t *w1 = w0 + depth;
        const int8_t *w2 = w1 + depth;
        const int8_t *w3 = w2 + depth;
        int32_t s0 = 0;
        int32_t s1 = 0;
        int32_t s2 = 0;
        int32_t s3 = 0;
        for (n = 0; n < chunks; ++n) {
            const int8x16_t v = vldrbq_s8(in);
            s0 = vmladavaq_s8(s0, v, vldrbq_s8(w0));
            s1 = vmladavaq_s8(s1, v, vldrbq_s8(w1));
            s2 = vmladavaq_s8(s2, v, vldrbq_s8(w2));
            s3 = vmladavaq_s8(s3, v, vldrbq_s8(w3));
            in += 16;
            w0 += 16;
            w1 += 16;
            w2 += 16;
            w3 += 16;
        }
        if (tail != 0) {
            const int8x16_t v = vldrbq_z_s8(in, last);
            s0 = vmladavaq_s8(s0, v, vldrbq_z_s8(w0, last));
            s1 = vmladavaq_s8(s1, v, vldrbq_z_s8(w1, last));
            s2 = vmladavaq_s8(s2, v, vldrbq_z_s8(w2, last));
            s3 = vmladavaq_s8(s3, v, vldrbq_z_s8(w3, last));
        }
        sums[0] = s0;
        sums[1] = s1;
        sums[2] = s2;
        sums[3] = s3;
    } else {
        int32_t r;
        for (r = 0; r < rows; ++r) {
            const int8_t *in = x;
            const int8_t *row = w + (size_t)r * (size_t)depth;
            int32_t s = 0;
            for (n = 0; n < chunks; ++n) {
                s = vmladavaq_s8(s, vldrbq_s8(in), vldrbq_s8(row));
                in += 16;
                row += 16;
            }
            if (tail != 0) {
                s = vmladavaq_s8(s, vldrbq_z_s8(in, last), vldrbq_z_s8(row, last));
            }
            sums[r] = s;
        }
    }
    return vld1q_s32(sums);
}

typedef struct matvec {
    const int8_t *filter; /* [channels, depth] */
    const int32_t *bias;
    const int32_t *weight_sums;
    const int32_t *multipliers;
    const int32_t *shifts;
    int32_t quant_count;
    int32_t depth;
    int32_t channels;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t act_min;
    int32_t act_max;
} matvec;

/* The block of the four contiguous channels from `channel`: unpredicated loads when all four exist. */
static inline channel_block contiguous_block(const matvec *m, int32_t channel)
{
    channel_block block;
    if (m->channels - channel < 4) {
        return block_of(m->bias, m->weight_sums, m->multipliers, m->shifts, m->quant_count, m->input_zero_point,
                        channel, m->channels, vidupq_n_u32(0u, 1), 1);
    }
    block.index = vidupq_n_u32(0u, 1);
    block.lanes = 0xFFFF;
    block.offset = m->bias != NULL ? vldrwq_s32(m->bias + channel) : vdupq_n_s32(0);
    block.offset = vmlaq_n_s32(block.offset, vldrwq_s32(m->weight_sums + channel), -m->input_zero_point);
    block.multiplier = m->quant_count == 1 ? vdupq_n_s32(m->multipliers[0]) : vldrwq_s32(m->multipliers + channel);
    block.shift = m->quant_count == 1 ? vdupq_n_s32(m->shifts[0]) : vldrwq_s32(m->shifts + channel);
    return block;
}

static inline int32_t rows_at(const matvec *m, int32_t channel)
{
    return m->channels - channel < 4 ? m->channels - channel : 4;
}

/* sum(x[k] * w_r[k]) of four filter rows, as four lanes: one 16-byte input load shared by four VMLADAVA, the
 * tail once under `last`, so no byte past the row is read. */
static inline __attribute__((always_inline)) int32x4_t dot_four(const int8_t *x, const int8_t *w, const int8_t *w1,
                                                               const int8_t *w2, const int8_t *w3, int32_t chunks,
                                                               int32_t tail, mve_pred16_t last)
{
    int32_t s0 = 0;
    int32_t s1 = 0;
    int32_t s2 = 0;
    int32_t s3 = 0;
    int32_t n;
    int32x4_t sums;
    for (n = 0; n < chunks; ++n) {
        const int8x16_t v = vldrbq_s8(x);
        s0 = vmladavaq_s8(s0, v, vldrbq_s8(w));
        s1 = vmladavaq_s8(s1, v, vldrbq_s8(w1));
        s2 = vmladavaq_s8(s2, v, vldrbq_s8(w2));
        s3 = vmladavaq_s8(s3, v, vldrbq_s8(w3));
        x += 16;
        w += 16;
        w1 += 16;
        w2 += 16;
        w3 += 16;
    }
    if (tail != 0) {
        const int8x16_t v = vldrbq_z_s8(x, last);
        s0 = vmladavaq_s8(s0, v, vldrbq_z_s8(w, last));
        s1 = vmladavaq_s8(s1, v, vldrbq_z_s8(w1, last));
        s2 = vmladavaq_s8(s2, v, vldrbq_z_s8(w2, last));
        s3 = vmladavaq_s8(s3, v, vldrbq_z_s8(w3, last));
    }
    sums = vdupq_n_s32(s0);
    sums = vsetq_lane_s32(s1, sums, 1);
    sums = vsetq_lane_s32(s2, sums, 2);
    return vsetq_lane_s32(s3, sums, 3);
}

/* One filter row against the held input chunks. */
static inline __attribute__((always_inline)) int32_t held_row(int8x16_t x0, int8x16_t x1, int8x16_t x2,
                                                             int8x16_t x3, const int8_t *w, int chunks)
{
    int32_t sum = vmladavq_s8(x0, vldrbq_s8(w));
    if (chunks > 1) {
        sum = vmladavaq_s8(sum, x1, vldrbq_s8(w + 16));
    }
    if (chunks > 2) {
        sum = vmladavaq_s8(sum, x2, vldrbq_s8(w + 32));
    }
    if (chunks > 3) {
        sum = vmladavaq_s8(sum, x3, vldrbq_s8(w + 48));
    }
    return sum;
}

static void __attribute__((noinline)) fully_connected_blocks(const helia_fully_connected_s8_args *args);

/* Rows of FULLY_CONNECTED whose sums one held-vector pass keeps on the stack before requantizing them. */
#define HELD_ROWS 64

/* The outputs of four sums (their offset, bias less input_zero_point * weight sum, added here) for a shift of -1
 * or below, t = 31 - shift >= 32: VQDMULH gives floor(y * m / 2^31) exactly (it saturates only for
 * m = INT32_MIN, and m >= 0), and VRSHL by the shift rounds once: floor((floor(y / 2^31) + 2^(k - 1)) / 2^k)
 * = floor((y + 2^(t - 1)) / 2^t) for k = t - 31 >= 1, the single rounding. */
static inline __attribute__((always_inline)) int32x4_t held_outputs(int32x4_t acc, int32x4_t weight_sums,
                                                                   int32x4_t bias, int32_t input_zero_point,
                                                                   int32_t multiplier, int32_t shift,
                                                                   int32_t zero_point, int32x4_t act_min,
                                                                   int32x4_t act_max)
{
    int32x4_t value = vaddq_s32(vmlaq_n_s32(acc, weight_sums, -input_zero_point), bias);
    value = vaddq_n_s32(vrshlq_n_s32(vqdmulhq_n_s32(value, multiplier), shift), zero_point);
    return vminq_s32(vmaxq_s32(value, act_min), act_max);
}

/* Rows g to g + HELD_ROWS of FULLY_CONNECTED batch b (depth 16 * chunks, per tensor, with a bias, shift -1 or
 * below) against the input vector, held in Q registers: each row's sum (its loads at offsets 0 to 48 from one
 * pointer walking the rows) to the stack, then the sums requantized four at a time, the last block under a
 * predicate. Simple loops over locals, so that GCC keeps every value in a register. Always inlined with
 * constant `chunks`, into one function each. */
static inline __attribute__((always_inline)) void held_pass(const helia_fully_connected_s8_args *args, int32_t b,
                                                           int32_t g, int chunks)
{
    const size_t row = 16u * (size_t)chunks;
    const int32_t channels = args->output_depth;
    const int32_t rows = channels - g < HELD_ROWS ? channels - g : HELD_ROWS;
    const int8_t *x = args->input + (size_t)b * row;
    const int8_t *w = args->filter + (size_t)g * row;
    int8_t *out = args->output + (size_t)b * (size_t)channels + g;
    const int32_t *bias = args->bias + g;
    const int32_t *weight_sums = args->weight_sums + g;
    const int32_t input_zero_point = args->input_zero_point;
    const int32_t multiplier = args->multipliers[0];
    const int32_t shift = args->shifts[0];
    const int32_t zero_point = args->output_zero_point;
    const int32_t act_min = args->act_min;
    const int32_t act_max = args->act_max;
    const int8x16_t x0 = vldrbq_s8(x);
    const int8x16_t x1 = chunks > 1 ? vldrbq_s8(x + 16) : x0;
    const int8x16_t x2 = chunks > 2 ? vldrbq_s8(x + 32) : x0;
    const int8x16_t x3 = chunks > 3 ? vldrbq_s8(x + 48) : x0;
    int32_t sums[HELD_ROWS];
    int32_t c;
#define HELD_BLOCK(c)                                                                                              \
    vstrbq_s32(out + (c), held_outputs(vldrwq_s32(sums + (c)), vldrwq_s32(weight_sums + (c)), vldrwq_s32(bias + (c)), \
                                       input_zero_point, multiplier, shift, zero_point, vdupq_n_s32(act_min),         \
                                       vdupq_n_s32(act_max)))
    int32_t *sum = sums;
    int32_t n;
    /* Two rows per iteration: their eight loads at offsets 0 to 112 from one pointer. */
    for (n = rows >> 1; n > 0; --n) {
        sum[0] = held_row(x0, x1, x2, x3, w, chunks);
        sum[1] = held_row(x0, x1, x2, x3, w + row, chunks);
        sum += 2;
        w += 2 * row;
    }
    if ((rows & 1) != 0) {
        *sum = held_row(x0, x1, x2, x3, w, chunks);
    }
    for (n = rows >> 2, c = 0; n > 0; --n, c += 4) {
        HELD_BLOCK(c);
    }
    if (c < rows && rows >= 4) {
        /* The last four rows again, unpredicated: the outputs already stored get the same bytes, and every input
         * was read before the first store. */
        c = rows - 4;
        HELD_BLOCK(c);
    } else if (c < rows) {
        const mve_pred16_t lanes = vctp32q((uint32_t)(rows - c));
        vstrbq_p_s32(out + c,
                     held_outputs(vldrwq_z_s32(sums + c, lanes), vldrwq_z_s32(weight_sums + c, lanes),
                                  vldrwq_z_s32(bias + c, lanes), input_zero_point, multiplier, shift, zero_point,
                                  vdupq_n_s32(act_min), vdupq_n_s32(act_max)),
                     lanes);
    }
#undef HELD_BLOCK
}

static void held_pass_1(const helia_fully_connected_s8_args *args, int32_t b, int32_t g)
{
    held_pass(args, b, g, 1);
}

static void held_pass_2(const helia_fully_connected_s8_args *args, int32_t b, int32_t g)
{
    held_pass(args, b, g, 2);
}

static void held_pass_3(const helia_fully_connected_s8_args *args, int32_t b, int32_t g)
{
    held_pass(args, b, g, 3);
}

static void held_pass_4(const helia_fully_connected_s8_args *args, int32_t b, int32_t g)
{
    held_pass(args, b, g, 4);
}

/* FULLY_CONNECTED of depth 16 to 64 in whole chunks, per tensor, with a bias and a shift of -1 or below: passes
 * of up to HELD_ROWS rows per batch. */
static void fully_connected_held(const helia_fully_connected_s8_args *args)
{
    static void (*const passes[4])(const helia_fully_connected_s8_args *, int32_t, int32_t) = {
        held_pass_1, held_pass_2, held_pass_3, held_pass_4};
    void (*const pass)(const helia_fully_connected_s8_args *, int32_t, int32_t) = passes[args->depth / 16 - 1];
    int32_t b;
    int32_t g;
    for (b = 0; b < args->batches; ++b) {
        for (g = 0; g < args->output_depth; g += HELD_ROWS) {
            pass(args, b, g);
        }
    }
}

/* FULLY_CONNECTED: the held-vector passes where they apply, else four output rows per pass sharing each input
 * load, the whole blocks' four outputs requantized at once (single rounding; the high word alone when every
 * lane's shift is below -1). */
void helia_ops_fully_connected_mve(const helia_fully_connected_s8_args *args)
{
    if (args->depth % 16 == 0 && args->depth <= 64 && args->bias != NULL && args->quant_count == 1 &&
        args->shifts[0] <= -1) {
        fully_connected_held(args);
    } else {
        fully_connected_blocks(args);
    }
}

/* FULLY_CONNECTED of any depth: four output rows per pass sharing each input load. Not inlined: the held-vector
 * bodies' callers need no frame of its size. */
static void __attribute__((noinline)) fully_connected_blocks(const helia_fully_connected_s8_args *args)
{
    const size_t depth = (size_t)args->depth;
    const int32_t chunks = args->depth / 16;
    const int32_t tail = args->depth % 16;
    const mve_pred16_t last = vctp8q((uint32_t)tail);
    const int32_t whole = args->output_depth / 4 * 4;
    const int32_t per_channel = args->quant_count != 1;
    int32_t b;
    int32_t c;
    for (b = 0; b < args->batches; ++b) {
        const int8_t *x = args->input + (size_t)b * depth;
        int8_t *out = args->output + (size_t)b * (size_t)args->output_depth;
        for (c = 0; c < args->output_depth; c += 4) {
            const int32_t count = args->output_depth - c < 4 ? args->output_depth - c : 4;
            const mve_pred16_t lanes = vctp32q((uint32_t)count);
            /* A last block of fewer rows reads its first row again in the missing ones (never stored). */
            const int8_t *w = args->filter + (size_t)c * depth;
            int32x4_t acc = c < whole ? dot_four(x, w, w + depth, w + 2 * depth, w + 3 * depth, chunks, tail, last)
                                      : dot_four(x, w, count > 1 ? w + depth : w, count > 2 ? w + 2 * depth : w, w,
                                                 chunks, tail, last);
            int32x4_t shift;
            int32x4_t multiplier;
            int32x4_t value;
            acc = vmlaq_n_s32(acc, vldrwq_z_s32(args->weight_sums + c, lanes), -args->input_zero_point);
            if (args->bias != NULL) {
                acc = vaddq_s32(acc, vldrwq_z_s32(args->bias + c, lanes));
            }
            multiplier = per_channel ? vldrwq_z_s32(args->multipliers + c, lanes) : vdupq_n_s32(args->multipliers[0]);
            shift = vaddq_n_s32(per_channel ? vldrwq_z_s32(args->shifts + c, lanes) : vdupq_n_s32(args->shifts[0]), 1);
            if (vmaxvq_s32(INT32_MIN, vpselq_s32(shift, vdupq_n_s32(-1), lanes)) < 0) {
                value = helia_mbqm_single_wide_x4(acc, multiplier, shift);
            } else {
                value = helia_mbqm_single_split_x4(acc, multiplier, shift, vsubq_n_s32(shift, 32));
            }
            value = vaddq_n_s32(value, args->output_zero_point);
            value = vminq_s32(vmaxq_s32(value, vdupq_n_s32(args->act_min)), vdupq_n_s32(args->act_max));
            vstrbq_p_s32(out + c, value, lanes);
        }
    }
}

static matvec conv_matvec(const helia_conv_s8_args *args)
{
    const matvec m = {args->filter, args->bias, args->weight_sums, args->multipliers, args->shifts,
                      args->quant_count, args->filter_h * args->filter_w * args->input_c, args->output_c,
                      args->input_zero_point, args->output_zero_point, args->act_min, args->act_max};
    return m;
}

/* The pixels of one four-channel block of a 1x1 CONV_2D: rows and constants fixed, the outputs `out_step`
 * bytes apart. Always inlined with constant `whole` (four channels: unpredicated stores). Every argument is a
 * local value, so that the int8 stores (which may alias anything) force no reload. */
static inline __attribute__((always_inline)) void in_place_pixels(
    const int8_t *pixel, size_t pixel_step, size_t row_step, int32_t rows, int32_t columns, int8_t *out,
    size_t out_step, const int8_t *w0, const int8_t *w1, const int8_t *w2, const int8_t *w3, int32_t chunks,
    int32_t tail, mve_pred16_t last, int32x4_t offset, int32x4_t multiplier, int32x4_t left, int32x4_t right,
    int32_t zero_point, int32_t act_min, int32_t act_max, int whole, mve_pred16_t lanes)
{
    int32_t oy;
    int32_t ox;
    for (oy = 0; oy < rows; ++oy) {
        const int8_t *x = pixel;
        for (ox = 0; ox < columns; ++ox) {
            int32x4_t value = vaddq_s32(dot_four(x, w0, w1, w2, w3, chunks, tail, last), offset);
            value = vaddq_n_s32(helia_mbqm_double_split_x4(value, multiplier, left, right), zero_point);
            value = vminq_s32(vmaxq_s32(value, vdupq_n_s32(act_min)), vdupq_n_s32(act_max));
            if (whole) {
                vstrbq_s32(out, value);
            } else {
                vstrbq_p_s32(out, value, lanes);
            }
            x += pixel_step;
            out += out_step;
        }
        pixel += row_step;
    }
}

static void conv2d_in_place_blocks(const helia_conv_s8_args *args);

/* Output channels whose constants a held-vector pass keeps on the stack (one requant4 each four). */
#define HELD_GROUP 64

/* The requantized outputs of `blocks` whole blocks of four channels for one input vector of `chunks` whole
 * 16-byte chunks, held in Q registers: the blocks' rows are one contiguous run, read by one pointer, and their
 * constants `k` were split once per layer. Always inlined with constant `chunks` (1 to 3). */
static inline __attribute__((always_inline)) void held_vector(const int8_t *x, const int8_t *w, int8_t *out,
                                                             const requant4 *k, int32_t blocks, output_range range,
                                                             int chunks)
{
    const int8x16_t x0 = vldrbq_s8(x);
    const int8x16_t x1 = chunks > 1 ? vldrbq_s8(x + 16) : x0;
    const int8x16_t x2 = chunks > 2 ? vldrbq_s8(x + 32) : x0;
    const int8x16_t x3 = chunks > 3 ? vldrbq_s8(x + 48) : x0;
    const size_t row = 16u * (size_t)chunks;
    int32_t n;
    for (n = 0; n < blocks; ++n) {
        const int32_t s0 = held_row(x0, x1, x2, x3, w, chunks);
        const int32_t s1 = held_row(x0, x1, x2, x3, w + row, chunks);
        const int32_t s2 = held_row(x0, x1, x2, x3, w + 2 * row, chunks);
        const int32_t s3 = held_row(x0, x1, x2, x3, w + 3 * row, chunks);
        int32x4_t value = vsetq_lane_s32(s1, vdupq_n_s32(s0), 1);
        value = vsetq_lane_s32(s2, value, 2);
        value = vsetq_lane_s32(s3, value, 3);
        vstrbq_s32(out, requantize4(value, &k[n], ROUND_DOUBLE, 0, range));
        out += 4;
        w += 4 * row;
    }
}

/* A 1x1 CONV_2D whose depth is 16, 32 or 48 and whose channels come in fours: pixels outside, each input
 * vector held in registers through every channel of a group. */
static void conv2d_in_place_held(const helia_conv_s8_args *args)
{
    const size_t depth = (size_t)args->input_c;
    const int32_t chunks = args->input_c / 16;
    const int32_t channels = args->output_c;
    const output_range range = {args->output_zero_point, args->act_min, args->act_max};
    const size_t pixel_step = (size_t)args->stride_w * depth;
    const size_t row_step = (size_t)args->stride_h * (size_t)args->input_w * depth;
    const size_t image = (size_t)args->input_h * (size_t)args->input_w * depth;
    const int32_t rows = args->output_h;
    const int32_t columns = args->output_w;
    requant4 k[HELD_GROUP / 4];
    int32_t g;
    int32_t b;
    int32_t oy;
    int32_t ox;
    int32_t n;
    for (g = 0; g < channels; g += HELD_GROUP) {
        const int32_t blocks = (channels - g < HELD_GROUP ? channels - g : HELD_GROUP) / 4;
        const int8_t *w = args->filter + (size_t)g * depth;
        for (n = 0; n < blocks; ++n) {
            k[n] = requant_constants(args->bias, args->weight_sums, args->multipliers, args->shifts, args->quant_count,
                                     args->input_zero_point, g + 4 * n, vidupq_n_u32(0u, 1), 0xFFFF, 1,
                                     ROUND_DOUBLE);
        }
        for (b = 0; b < args->batches; ++b) {
            const int8_t *line = args->input + (size_t)b * image;
            int8_t *out = args->output + (size_t)b * (size_t)rows * (size_t)columns * (size_t)channels + g;
            for (oy = 0; oy < rows; ++oy) {
                const int8_t *x = line;
                for (ox = 0; ox < columns; ++ox) {
                    if (chunks == 1) {
                        held_vector(x, w, out, k, blocks, range, 1);
                    } else if (chunks == 2) {
                        held_vector(x, w, out, k, blocks, range, 2);
                    } else if (chunks == 3) {
                        held_vector(x, w, out, k, blocks, range, 3);
                    } else {
                        held_vector(x, w, out, k, blocks, range, 4);
                    }
                    x += pixel_step;
                    out += channels;
                }
                line += row_step;
            }
        }
    }
}

void helia_ops_conv2d_in_place_mve(const helia_conv_s8_args *args)
{
    if (args->input_c % 16 == 0 && args->input_c <= 64 && args->output_c % 4 == 0) {
        conv2d_in_place_held(args);
    } else {
        conv2d_in_place_blocks(args);
    }
}

/* A 1x1 CONV_2D of any depth: channel blocks outside (their rows and constants fixed), pixels inside. */
static void conv2d_in_place_blocks(const helia_conv_s8_args *args)
{
    const size_t depth = (size_t)args->input_c;
    const int32_t chunks = args->input_c / 16;
    const int32_t tail = args->input_c % 16;
    const mve_pred16_t last = vctp8q((uint32_t)tail);
    const size_t pixel_step = (size_t)args->stride_w * depth;
    const size_t row_step = (size_t)args->stride_h * (size_t)args->input_w * depth;
    const size_t image = (size_t)args->input_h * (size_t)args->input_w * depth;
    const int32_t channels = args->output_c;
    const int32_t batches = args->batches;
    const int32_t rows = args->output_h;
    const int32_t columns = args->output_w;
    const int32_t zero_point = args->output_zero_point;
    const int32_t act_min = args->act_min;
    const int32_t act_max = args->act_max;
    const int8_t *input = args->input;
    int8_t *output = args->output;
    const int32x4_t zero = vdupq_n_s32(0);
    int32_t c;
    int32_t b;
    /* Channel blocks outside (their rows and constants fixed), pixels inside. */
    for (c = 0; c < channels; c += 4) {
        const int32_t count = channels - c < 4 ? channels - c : 4;
        const mve_pred16_t lanes = vctp32q((uint32_t)count);
        /* A last block of fewer rows reads its first row again in the missing ones (never stored). */
        const int8_t *w0 = args->filter + (size_t)c * depth;
        const int8_t *w1 = count > 1 ? w0 + depth : w0;
        const int8_t *w2 = count > 2 ? w1 + depth : w0;
        const int8_t *w3 = count > 3 ? w2 + depth : w0;
        const int32x4_t shift =
            args->quant_count != 1 ? vldrwq_z_s32(args->shifts + c, lanes) : vdupq_n_s32(args->shifts[0]);
        const int32x4_t multiplier =
            args->quant_count != 1 ? vldrwq_z_s32(args->multipliers + c, lanes) : vdupq_n_s32(args->multipliers[0]);
        const int32x4_t left = vmaxq_s32(shift, zero);
        const int32x4_t right = vminq_s32(shift, zero);
        int32x4_t offset = vmulq_n_s32(vldrwq_z_s32(args->weight_sums + c, lanes), -args->input_zero_point);
        if (args->bias != NULL) {
            offset = vaddq_s32(offset, vldrwq_z_s32(args->bias + c, lanes));
        }
        for (b = 0; b < batches; ++b) {
            const int8_t *pixel = input + (size_t)b * image;
            int8_t *out = output + (size_t)b * (size_t)rows * (size_t)columns * (size_t)channels + c;
            if (count == 4) {
                in_place_pixels(pixel, pixel_step, row_step, rows, columns, out, (size_t)channels, w0, w1, w2, w3,
                                chunks, tail, last, offset, multiplier, left, right, zero_point, act_min, act_max, 1,
                                lanes);
            } else {
                in_place_pixels(pixel, pixel_step, row_step, rows, columns, out, (size_t)channels, w0, w1, w2, w3,
                                chunks, tail, last, offset, multiplier, left, right, zero_point, act_min, act_max, 0,
                                lanes);
            }
        }
    }
}

/* out[c] for every channel c: the requantized dot product of the im2col row `x` with filter row c. */
static void im2col_row(const matvec *m, const int8_t *x, int8_t *out)
{
    int32_t c;
    for (c = 0; c < m->channels; c += 4) {
        const channel_block block = contiguous_block(m, c);
        const int32x4_t acc = dot_rows(x, m->filter + (size_t)c * (size_t)m->depth, m->depth, rows_at(m, c));
        store_block(out + c, acc, &block, ROUND_DOUBLE, m->output_zero_point, m->act_min, m->act_max);
    }
}

void helia_ops_conv2d_im2col_mve(const helia_conv_s8_args *args)
{
    const matvec m = conv_matvec(args);
    const int32_t channels = args->input_c;
    const int32_t span = args->filter_w * channels; /* one filter row of the im2col row */
    const int8_t zero_point = (int8_t)args->input_zero_point;
    int8_t *out = args->output;
    int32_t b;
    int32_t oy;
    int32_t ox;
    int32_t fy;
    int32_t fx;
    for (b = 0; b < args->batches; ++b) {
        const int8_t *image = args->input + (size_t)b * (size_t)args->input_h * (size_t)args->input_w * (size_t)channels;
        for (oy = 0; oy < args->output_h; ++oy) {
            const int32_t origin_y = oy * args->stride_h - args->pad_top;
            for (ox = 0; ox < args->output_w; ++ox) {
                const int32_t origin_x = ox * args->stride_w - args->pad_left;
                const int32_t last_x = origin_x + (args->filter_w - 1) * args->dilation_w;
                const int rows_inside = origin_x >= 0 && last_x < args->input_w && args->dilation_w == 1;
                int8_t *column = args->scratch;
                /* The row holds the window's input bytes, and the input zero point at padding taps. */
                for (fy = 0; fy < args->filter_h; ++fy) {
                    const int32_t iy = origin_y + fy * args->dilation_h;
                    const int8_t *line = image + (size_t)(iy > 0 ? iy : 0) * (size_t)args->input_w * (size_t)channels;
                    if (iy < 0 || iy >= args->input_h) {
                        fill_bytes(column, zero_point, span);
                    } else if (rows_inside) {
                        copy_bytes(column, line + (size_t)origin_x * (size_t)channels, span);
                    } else {
                        for (fx = 0; fx < args->filter_w; ++fx) {
                            const int32_t ix = origin_x + fx * args->dilation_w;
                            if (ix < 0 || ix >= args->input_w) {
                                fill_bytes(column + fx * channels, zero_point, channels);
                            } else {
                                copy_bytes(column + fx * channels, line + (size_t)ix * (size_t)channels, channels);
                            }
                        }
                    }
                    column += span;
                }
                im2col_row(&m, args->scratch, out);
                out += args->output_c;
            }
        }
    }
}

/* ---- DEPTHWISE_CONV_2D (depth multiplier 1), across channels --------------------------------------- */

/* The first and one-past-last index f < count whose coordinate origin + f * dilation is inside [0, extent). */
static inline void tap_range(int32_t origin, int32_t dilation, int32_t count, int32_t extent, int32_t *first,
                             int32_t *end)
{
    int32_t f0 = origin >= 0 ? 0 : (-origin + dilation - 1) / dilation;
    int32_t f1 = extent - origin <= 0 ? 0 : (extent - origin + dilation - 1) / dilation;
    f0 = f0 < count ? f0 : count;
    f1 = f1 < count ? f1 : count;
    *first = f0;
    *end = f1 > f0 ? f1 : f0;
}

/* The requantization of eight channels: the even channels' lanes and the odd ones' (VMULLB, VMULLT), and
 * zero_point * weight sum, which a pixel whose taps subtract the zero point adds back. */
typedef struct depthwise_block {
    requant4 even;
    requant4 odd;
    int32x4_t even_delta;
    int32x4_t odd_delta;
} depthwise_block;

/* The layer's strides, in bytes. */
typedef struct depthwise_layer {
    int32_t input_row;     /* one tap row down in the input */
    int32_t input_column;  /* one tap across in the input */
    int32_t filter_row;    /* one tap row down in the filter */
    int32_t channels;      /* one tap across in the filter */
    int32_t filter_h;
    int16_t zero_point;
    output_range range;
} depthwise_layer;

/* One pass: one output pixel, or two pixels one above the other that share their input rows (stride_h ==
 * dilation_h: the lower pixel's filter row j - 1 reads the upper one's row j). */
typedef struct depthwise_pass {
    const int8_t *input;  /* the input at the first valid row and column, at the group's first channel */
    const int8_t *filter; /* the filter at row 0 and the first valid column, at the group's first channel */
    int8_t *out;          /* the (upper) pixel's output, at the group's first channel */
    int8_t *out_below;    /* the lower pixel's */
    int32_t first;        /* the valid input rows: pair, rows j in [first, end) of 0..filter_h; else filter rows */
    int32_t end;
    int32_t columns;      /* valid filter columns */
} depthwise_pass;

#define WIDEN_LOAD(p) (whole ? vldrbq_s16(p) : vldrbq_z_s16((p), lanes))
#define TAP(x, w, e, o)                              \
    do {                                             \
        e = vaddq_s32(e, vmullbq_int_s16((x), (w))); \
        o = vaddq_s32(o, vmulltq_int_s16((x), (w))); \
    } while (0)

/* The taps of eight channels at `channel` of a pass, and their requantized outputs. Each input value less the
 * zero point where `border` (a pixel with a padding tap: it fits int16, and the delta restores the folded
 * weight sums); `whole` loads eight lanes unpredicated, else the `lanes` of a tail. Always inlined, so that each
 * constant (pair, border, whole) is its own loop with the sums in registers. */
static inline __attribute__((always_inline)) void depthwise_block_run(const depthwise_layer *layer,
                                                                     const depthwise_pass *pass,
                                                                     const depthwise_block *k, int32_t channel,
                                                                     int pair, int border, int whole,
                                                                     mve_pred16_t lanes)
{
    const int32_t middle = pass->end < layer->filter_h ? pass->end : layer->filter_h;
    const int8_t *in_column = pass->input + channel;
    const int8_t *filter_column = pass->filter + channel;
    int32x4_t e0 = vdupq_n_s32(0);
    int32x4_t o0 = e0;
    int32x4_t e1 = e0;
    int32x4_t o1 = e0;
    int32_t fx;
    int32_t j;
    for (fx = 0; fx < pass->columns; ++fx) {
        const int8_t *in = in_column;
        int16x8_t x;
        int16x8_t w;
        j = pass->first;
        if (pair) {
            if (j == 0) {
                x = WIDEN_LOAD(in);
                x = border ? vsubq_n_s16(x, layer->zero_point) : x;
                w = WIDEN_LOAD(filter_column);
                TAP(x, w, e0, o0);
                in += layer->input_row;
                j = 1;
            } else {
                w = WIDEN_LOAD(filter_column + (size_t)(j - 1) * (size_t)layer->filter_row);
            }
            for (; j < middle; ++j) {
                x = WIDEN_LOAD(in);
                x = border ? vsubq_n_s16(x, layer->zero_point) : x;
                TAP(x, w, e1, o1);
                w = WIDEN_LOAD(filter_column + (size_t)j * (size_t)layer->filter_row);
                TAP(x, w, e0, o0);
                in += layer->input_row;
            }
            if (j < pass->end) {
                x = WIDEN_LOAD(in);
                x = border ? vsubq_n_s16(x, layer->zero_point) : x;
                TAP(x, w, e1, o1);
            }
        } else {
            const int8_t *taps = filter_column + (size_t)j * (size_t)layer->filter_row;
            for (; j < pass->end; ++j) {
                x = WIDEN_LOAD(in);
                x = border ? vsubq_n_s16(x, layer->zero_point) : x;
                w = WIDEN_LOAD(taps);
                TAP(x, w, e0, o0);
                in += layer->input_row;
                taps += layer->filter_row;
            }
        }
        in_column += layer->input_column;
        filter_column += layer->channels;
    }
    {
        const int32x4_t de = border ? k->even_delta : vdupq_n_s32(0);
        const int32x4_t dd = border ? k->odd_delta : vdupq_n_s32(0);
        /* The even and odd lanes requantized, interleaved back into channel order (VMOVNB, VMOVNT), 8 bytes. */
        const int16x8_t upper = vmovntq_s32(
            vmovnbq_s32(vdupq_n_s16(0),
                        requantize4(border ? vaddq_s32(e0, de) : e0, &k->even, ROUND_DOUBLE, 0, layer->range)),
            requantize4(border ? vaddq_s32(o0, dd) : o0, &k->odd, ROUND_DOUBLE, 0, layer->range));
        if (whole) {
            vstrbq_s16(pass->out + channel, upper);
        } else {
            vstrbq_p_s16(pass->out + channel, upper, lanes);
        }
        if (pair) {
            const int16x8_t lower = vmovntq_s32(
                vmovnbq_s32(vdupq_n_s16(0),
                            requantize4(border ? vaddq_s32(e1, de) : e1, &k->even, ROUND_DOUBLE, 0, layer->range)),
                requantize4(border ? vaddq_s32(o1, dd) : o1, &k->odd, ROUND_DOUBLE, 0, layer->range));
            if (whole) {
                vstrbq_s16(pass->out_below + channel, lower);
            } else {
                vstrbq_p_s16(pass->out_below + channel, lower, lanes);
            }
        }
    }
}

#undef WIDEN_LOAD
#undef TAP

/* Channels one pass covers (eight blocks of eight): the pixel's window is found once per pass and group, and
 * the constants take 1.3 KiB of stack. */
#define DEPTHWISE_GROUP 64

/* Every block of a group for one pass: whole blocks in the variant the pass needs, the tail predicated (and
 * subtracting the zero point, which is exact for every pixel). */
static void depthwise_pass_run(const depthwise_layer *layer, const depthwise_pass *pass, const depthwise_block *blocks,
                               int32_t group, int pair, int border)
{
    int32_t c;
    for (c = 0; c + 8 <= group; c += 8) {
        const depthwise_block *k = &blocks[c / 8];
        if (pair) {
            if (border) {
                depthwise_block_run(layer, pass, k, c, 1, 1, 1, 0xFFFF);
            } else {
                depthwise_block_run(layer, pass, k, c, 1, 0, 1, 0xFFFF);
            }
        } else if (border) {
            depthwise_block_run(layer, pass, k, c, 0, 1, 1, 0xFFFF);
        } else {
            depthwise_block_run(layer, pass, k, c, 0, 0, 1, 0xFFFF);
        }
    }
    if (c < group) {
        const mve_pred16_t lanes = vctp16q((uint32_t)(group - c));
        if (pair) {
            depthwise_block_run(layer, pass, &blocks[c / 8], c, 1, 1, 0, lanes);
        } else {
            depthwise_block_run(layer, pass, &blocks[c / 8], c, 0, 1, 0, lanes);
        }
    }
}

static void depthwise_general(const helia_conv_s8_args *args);

void helia_ops_depthwise_conv2d_mve(const helia_conv_s8_args *args)
{
    if (helia_ops_depthwise_plane_applies(args)) {
        helia_ops_depthwise_plane_mve(args);
    } else {
        depthwise_general(args);
    }
}

/* The general body: eight channels per block (widening multiplies), any window. */
static void depthwise_general(const helia_conv_s8_args *args)
{
    const int32_t channels = args->output_c;
    /* Two pixels one above the other share their input rows when the rows they read interleave exactly. */
    const int shared = args->stride_h == args->dilation_h;
    const uint32x4_t even = vidupq_n_u32(0u, 2);
    const uint32x4_t odd = vidupq_n_u32(1u, 2);
    depthwise_layer layer;
    depthwise_block blocks[DEPTHWISE_GROUP / 8];
    int32_t b;
    int32_t oy;
    int32_t ox;
    int32_t g;
    int32_t k;
    layer.input_row = args->dilation_h * args->input_w * channels;
    layer.input_column = args->dilation_w * channels;
    layer.filter_row = args->filter_w * channels;
    layer.channels = channels;
    layer.filter_h = args->filter_h;
    layer.zero_point = (int16_t)args->input_zero_point;
    layer.range.zero_point = args->output_zero_point;
    layer.range.act_min = args->act_min;
    layer.range.act_max = args->act_max;
    /* Up to 64 channels outside, pixels inside: each block's constants are loaded once per layer. */
    for (g = 0; g < channels; g += DEPTHWISE_GROUP) {
        const int32_t group = channels - g < DEPTHWISE_GROUP ? channels - g : DEPTHWISE_GROUP;
        for (k = 0; 8 * k < group; ++k) {
            const int32_t first = g + 8 * k;
            const int32_t left = channels - first;
            const mve_pred16_t even_lanes = vcmpltq_n_s32(vreinterpretq_s32_u32(even), left);
            const mve_pred16_t odd_lanes = vcmpltq_n_s32(vreinterpretq_s32_u32(odd), left);
            blocks[k].even = requant_constants(args->bias, args->weight_sums, args->multipliers, args->shifts,
                                               args->quant_count, args->input_zero_point, first, even, even_lanes, 2,
                                               ROUND_DOUBLE);
            blocks[k].odd = requant_constants(args->bias, args->weight_sums, args->multipliers, args->shifts,
                                              args->quant_count, args->input_zero_point, first, odd, odd_lanes, 2,
                                              ROUND_DOUBLE);
            blocks[k].even_delta = vmulq_n_s32(
                vldrwq_gather_shifted_offset_z_s32(args->weight_sums + first, even, even_lanes), args->input_zero_point);
            blocks[k].odd_delta = vmulq_n_s32(
                vldrwq_gather_shifted_offset_z_s32(args->weight_sums + first, odd, odd_lanes), args->input_zero_point);
        }
        for (b = 0; b < args->batches; ++b) {
            for (oy = 0; oy < args->output_h;) {
                const int pair = shared && oy + 1 < args->output_h;
                const int32_t origin_y = oy * args->stride_h - args->pad_top;
                const int32_t rows = args->filter_h + (pair ? 1 : 0);
                int32_t first;
                int32_t end;
                tap_range(origin_y, args->dilation_h, rows, args->input_h, &first, &end);
                for (ox = 0; ox < args->output_w; ++ox) {
                    const int32_t origin_x = ox * args->stride_w - args->pad_left;
                    int32_t fx0;
                    int32_t fx1;
                    depthwise_pass pass;
                    tap_range(origin_x, args->dilation_w, args->filter_w, args->input_w, &fx0, &fx1);
                    pass.out = args->output +
                               (((size_t)b * (size_t)args->output_h + (size_t)oy) * (size_t)args->output_w + (size_t)ox) *
                                   (size_t)channels + (size_t)g;
                    pass.out_below = pass.out + (size_t)args->output_w * (size_t)channels;
                    pass.first = first;
                    pass.end = end;
                    pass.columns = end > first ? fx1 - fx0 : 0; /* no valid tap: the loops read nothing */
                    pass.input = args->input + g;
                    pass.filter = args->filter + g + (size_t)fx0 * (size_t)channels;
                    if (pass.columns > 0) {
                        pass.input += (((size_t)b * (size_t)args->input_h + (size_t)(origin_y + first * args->dilation_h)) *
                                           (size_t)args->input_w + (size_t)(origin_x + fx0 * args->dilation_w)) *
                                      (size_t)channels;
                    }
                    depthwise_pass_run(&layer, &pass, blocks, group, pair,
                                       first != 0 || end != rows || fx0 != 0 || fx1 != args->filter_w);
                }
                oy += pair ? 2 : 1;
            }
        }
    }
}

#else

/* ISO C needs a declaration in every translation unit; without MVE this file compiles to nothing. */
typedef int helia_ops_conv_mve_unused;

#endif

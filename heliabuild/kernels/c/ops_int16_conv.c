/*
 * ops_int16_conv.c - FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D in the TFLite converter's 16x8 form: int16 activations
 * with zero point 0, int8 symmetric weights (per tensor or per output channel), int64 bias.
 *
 * Per output element: acc = sum over the taps inside the input of filter * input, plus bias, in int64; then
 * the channel's multiplier, rounded the way LiteRT's reference kernel of each operator rounds it (measured
 * against BUILTIN_REF, docs/kernels.md):
 *   FULLY_CONNECTED: floor((acc * m + 2^(30 - shift)) / 2^(31 - shift)), once;
 *   CONV_2D and DEPTHWISE_CONV_2D: m reduced to 16 bits, r = (m + 2^15) >> 16 (32767 for m >= 0x7FFF0000), then
 *                    floor((acc * r + 2^(14 - shift)) / 2^(15 - shift));
 * exactly (a 95-bit product), then narrowed to int32 and clamped to [act_min, act_max]. CONV_2D's narrowing
 * wraps, as LiteRT's int64-to-int32 cast does; FULLY_CONNECTED's saturates, since there LiteRT's own int64
 * product overflows (undefined in C++) wherever the scaled value leaves int32 (docs/kernels.md).
 *
 * C99, no heap, no recursion, no floating point.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

#define ROUND_FULL 1
#define ROUND_REDUCED 2

static int s16_activation_ok(int32_t act_min, int32_t act_max)
{
    return act_min >= INT16_MIN && act_min <= act_max && act_max <= INT16_MAX;
}

/* The multipliers of the 16x8 kernels: as the int8 kernels', with the left shifts LiteRT allows (< 8). */
static helia_status s16_multipliers_ok(const int32_t *multipliers, const int32_t *shifts, int32_t count)
{
    int32_t i;
    for (i = 0; i < count; ++i) {
        if (!helia_ops_multiplier_ok(multipliers[i], shifts[i]) || shifts[i] > 7) {
            return HELIA_STATUS_BAD_PARAMETER;
        }
    }
    return HELIA_STATUS_OK;
}

/* The checks FULLY_CONNECTED and CONV_2D share once the extents are known: the quantization, the activation
 * bounds, and an output sharing no byte with any operand. */
typedef struct weighted_s16 {
    const void *output;
    int64_t output_count;
    const void *input;
    int64_t input_count;
    const void *filter;
    int64_t filter_count;
    const int64_t *bias;
    int32_t channels;
    const int32_t *multipliers;
    const int32_t *shifts;
    int32_t quant_count;
    int32_t act_min;
    int32_t act_max;
} weighted_s16;

static helia_status weighted_s16_check(const weighted_s16 *w)
{
    const size_t out_bytes = (size_t)w->output_count * 2u;
    const size_t quant_bytes = (size_t)w->quant_count * sizeof(int32_t);
    if ((w->quant_count != 1 && w->quant_count != w->channels) || !s16_activation_ok(w->act_min, w->act_max) ||
        s16_multipliers_ok(w->multipliers, w->shifts, w->quant_count) != HELIA_STATUS_OK) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (helia_ops_overlap(w->output, out_bytes, w->input, (size_t)w->input_count * 2u) ||
        helia_ops_overlap(w->output, out_bytes, w->filter, (size_t)w->filter_count) ||
        (w->bias != NULL && helia_ops_overlap(w->output, out_bytes, w->bias, (size_t)w->channels * sizeof(int64_t))) ||
        helia_ops_overlap(w->output, out_bytes, w->multipliers, quant_bytes) ||
        helia_ops_overlap(w->output, out_bytes, w->shifts, quant_bytes)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

/* floor((acc * multiplier + 2^(total - 1)) / 2^total) exactly, for multiplier in [0, 2^31) and total in
 * [1, 62]; for total < 32 the product's high half is held at +-2^40 (every such result is far outside
 * int32). The 95-bit product is taken in two halves: acc = high * 2^32 + low, low unsigned. */
static int64_t scale_s64(int64_t acc, int64_t multiplier, int32_t total)
{
    const int64_t limit = (int64_t)1 << 40;
    const uint64_t low = (uint64_t)acc & 0xFFFFFFFFu;
    const int64_t high = helia_floor_shift_s64(acc, 32);
    const uint64_t low_part = low * (uint64_t)multiplier + ((uint64_t)1 << (total - 1));
    int64_t upper = high * multiplier + (int64_t)(low_part >> 32);
    int64_t value;
    if (total >= 32) {
        value = helia_floor_shift_s64(upper, total - 32);
    } else {
        upper = upper > limit ? limit : (upper < -limit ? -limit : upper);
        value = upper * ((int64_t)1 << (32 - total)) + (int64_t)((low_part & 0xFFFFFFFFu) >> total);
    }
    return value;
}

static int16_t requantize_s16(int rounding, int64_t acc, const int64_t *bias, const int32_t *multipliers,
                              const int32_t *shifts, int32_t quant_count, int32_t channel, int32_t act_min,
                              int32_t act_max)
{
    const int32_t q = quant_count == 1 ? 0 : channel;
    const int32_t m = multipliers[q];
    int32_t value;
    if (bias != NULL) {
        acc = (int64_t)((uint64_t)acc + (uint64_t)bias[channel]);
    }
    if (rounding == ROUND_FULL) {
        const int64_t scaled = scale_s64(acc, m, 31 - shifts[q]);
        value = scaled > INT32_MAX ? INT32_MAX : (scaled < INT32_MIN ? INT32_MIN : (int32_t)scaled);
    } else {
        /* LiteRT's int64 result narrowed to int32 wraps; the product is exact for |acc| < 2^48. */
        const int64_t reduced = m < INT32_C(0x7FFF0000) ? (int64_t)((m + (INT32_C(1) << 15)) >> 16) : 0x7FFF;
        value = helia_wrap_s32(scale_s64(acc, reduced, 15 - shifts[q]));
    }
    return (int16_t)(value < act_min ? act_min : (value > act_max ? act_max : value));
}

/* ---- FULLY_CONNECTED ------------------------------------------------------------------------------------ */

helia_status helia_fully_connected_s16_check(const helia_fully_connected_s16_args *args)
{
    int64_t input_count;
    int64_t filter_count;
    int64_t output_count;
    if (args == NULL || args->input == NULL || args->filter == NULL || args->multipliers == NULL ||
        args->shifts == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->batches < 1 || args->depth < 1 || args->output_depth < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    input_count = (int64_t)args->batches * args->depth;
    filter_count = (int64_t)args->output_depth * args->depth;
    output_count = (int64_t)args->batches * args->output_depth;
    if (input_count > INT32_MAX / 2 || filter_count > INT32_MAX || output_count > INT32_MAX / 2 ||
        args->depth > HELIA_OPS_S16_MAX_TAPS) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    {
        const weighted_s16 w = {args->output, output_count, args->input, input_count, args->filter, filter_count,
                                args->bias, args->output_depth, args->multipliers, args->shifts,
                                args->quant_count, args->act_min, args->act_max};
        return weighted_s16_check(&w);
    }
}

helia_status helia_fully_connected_s16_run(const helia_fully_connected_s16_args *args)
{
    int32_t b;
    int32_t o;
    int32_t d;
    for (b = 0; b < args->batches; ++b) {
        const int16_t *row = args->input + (size_t)b * (size_t)args->depth;
        int16_t *out = args->output + (size_t)b * (size_t)args->output_depth;
        for (o = 0; o < args->output_depth; ++o) {
            const int8_t *weights = args->filter + (size_t)o * (size_t)args->depth;
            int64_t acc = 0;
            for (d = 0; d < args->depth; ++d) {
                acc += (int32_t)weights[d] * (int32_t)row[d];
            }
            out[o] = requantize_s16(ROUND_FULL, acc, args->bias, args->multipliers, args->shifts, args->quant_count,
                                    o, args->act_min, args->act_max);
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_fully_connected_s16(const helia_fully_connected_s16_args *args)
{
    const helia_status status = helia_fully_connected_s16_check(args);
    return status != HELIA_STATUS_OK ? status : helia_fully_connected_s16_run(args);
}

/* ---- CONV_2D and DEPTHWISE_CONV_2D ---------------------------------------------------------------------- */

static helia_status conv_s16_check(const helia_conv_s16_args *args, int depthwise)
{
    int64_t input_count;
    int64_t filter_count;
    int64_t output_count;
    int64_t taps;
    int64_t reach_h;
    int64_t reach_w;
    if (args == NULL || args->input == NULL || args->filter == NULL || args->multipliers == NULL ||
        args->shifts == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->batches < 1 || args->input_h < 1 || args->input_w < 1 || args->input_c < 1 || args->filter_h < 1 ||
        args->filter_w < 1 || args->output_h < 1 || args->output_w < 1 || args->output_c < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (depthwise && (args->depth_multiplier < 1 ||
                      (int64_t)args->input_c * args->depth_multiplier != (int64_t)args->output_c)) {
        return HELIA_STATUS_SHAPE_MISMATCH;
    }
    if (args->stride_h < 1 || args->stride_w < 1 || args->dilation_h < 1 || args->dilation_w < 1 ||
        args->pad_top < 0 || args->pad_left < 0) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    input_count = (int64_t)args->batches * args->input_h * args->input_w * args->input_c;
    output_count = (int64_t)args->batches * args->output_h * args->output_w * args->output_c;
    taps = (int64_t)args->filter_h * args->filter_w * (depthwise ? 1 : args->input_c);
    filter_count = taps * args->output_c;
    reach_h = (int64_t)(args->output_h - 1) * args->stride_h + (int64_t)(args->filter_h - 1) * args->dilation_h;
    reach_w = (int64_t)(args->output_w - 1) * args->stride_w + (int64_t)(args->filter_w - 1) * args->dilation_w;
    if (input_count > INT32_MAX / 2 || output_count > INT32_MAX / 2 || filter_count > INT32_MAX ||
        taps > HELIA_OPS_S16_MAX_TAPS || reach_h > INT32_MAX || reach_w > INT32_MAX) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    {
        const weighted_s16 w = {args->output, output_count, args->input, input_count, args->filter, filter_count,
                                args->bias, args->output_c, args->multipliers, args->shifts,
                                args->quant_count, args->act_min, args->act_max};
        return weighted_s16_check(&w);
    }
}

/* The sum over the taps inside the input of output channel `o`: CONV_2D's filter row `o` against every input
 * channel, DEPTHWISE_CONV_2D's filter column `o` against input channel o / depth_multiplier. */
static int64_t tap_sum(const helia_conv_s16_args *args, int depthwise, const int16_t *image, int32_t y0, int32_t x0,
                       int32_t o)
{
    const int32_t channels = depthwise ? 1 : args->input_c;
    const size_t tap_stride = depthwise ? (size_t)args->output_c : (size_t)args->input_c;
    const int8_t *weights = depthwise ? args->filter + o
                                      : args->filter + (size_t)o * (size_t)args->filter_h * (size_t)args->filter_w *
                                                           (size_t)args->input_c;
    const int32_t first = depthwise ? o / args->depth_multiplier : 0;
    int64_t acc = 0;
    int32_t ky;
    int32_t kx;
    int32_t c;
    for (ky = 0; ky < args->filter_h; ++ky) {
        const int32_t y = y0 + ky * args->dilation_h;
        if (y < 0 || y >= args->input_h) {
            continue;
        }
        for (kx = 0; kx < args->filter_w; ++kx) {
            const int32_t x = x0 + kx * args->dilation_w;
            const int16_t *pixel;
            const int8_t *tap;
            if (x < 0 || x >= args->input_w) {
                continue;
            }
            pixel = image + ((size_t)y * (size_t)args->input_w + (size_t)x) * (size_t)args->input_c + first;
            tap = weights + ((size_t)ky * (size_t)args->filter_w + (size_t)kx) * tap_stride;
            for (c = 0; c < channels; ++c) {
                acc += (int32_t)tap[c] * (int32_t)pixel[c];
            }
        }
    }
    return acc;
}

static helia_status conv_s16_run(const helia_conv_s16_args *args, int depthwise)
{
    const size_t image_count = (size_t)args->input_h * (size_t)args->input_w * (size_t)args->input_c;
    int16_t *out = args->output;
    int32_t n;
    int32_t oy;
    int32_t ox;
    int32_t o;
    for (n = 0; n < args->batches; ++n) {
        const int16_t *image = args->input + (size_t)n * image_count;
        for (oy = 0; oy < args->output_h; ++oy) {
            const int32_t y0 = oy * args->stride_h - args->pad_top;
            for (ox = 0; ox < args->output_w; ++ox) {
                const int32_t x0 = ox * args->stride_w - args->pad_left;
                for (o = 0; o < args->output_c; ++o) {
                    const int64_t acc = tap_sum(args, depthwise, image, y0, x0, o);
                    *out++ = requantize_s16(ROUND_REDUCED, acc, args->bias, args->multipliers, args->shifts,
                                            args->quant_count, o, args->act_min, args->act_max);
                }
            }
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_conv2d_s16_check(const helia_conv_s16_args *args)
{
    return conv_s16_check(args, 0);
}

helia_status helia_conv2d_s16_run(const helia_conv_s16_args *args)
{
    return conv_s16_run(args, 0);
}

helia_status helia_conv2d_s16(const helia_conv_s16_args *args)
{
    const helia_status status = helia_conv2d_s16_check(args);
    return status != HELIA_STATUS_OK ? status : helia_conv2d_s16_run(args);
}

helia_status helia_depthwise_conv2d_s16_check(const helia_conv_s16_args *args)
{
    return conv_s16_check(args, 1);
}

helia_status helia_depthwise_conv2d_s16_run(const helia_conv_s16_args *args)
{
    return conv_s16_run(args, 1);
}

helia_status helia_depthwise_conv2d_s16(const helia_conv_s16_args *args)
{
    const helia_status status = helia_depthwise_conv2d_s16_check(args);
    return status != HELIA_STATUS_OK ? status : helia_depthwise_conv2d_s16_run(args);
}

/*
 * ops_resize.c - int8 RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR (NHWC; input and output quantized alike).
 *
 * NEAREST copies, for every output row and column, the input row and column the caller's maps name (LiteRT
 * derives them in float32, so heliabuild.kernels.int8_spatial does, with align_corners and
 * half_pixel_centers). BILINEAR is TFLite's integer statement: the source coordinate of each output row and
 * column in 1/1024ths (scale = round(1024 * in / out), or (in - 1) / (out - 1) with align_corners; with
 * half_pixel_centers value * scale + scale / 2 - 512), its lower and upper neighbours (the lower one the
 * coordinate / 1024 truncated toward zero, at least 0; the upper one rounded up, at most size - 1), and the
 * four products of codes and weights summed in 64 bits, divided by 2^20 rounding half away from zero.
 * docs/kernels.md.
 *
 * C99, no heap, no recursion, no floating point, no 64-bit division.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

static helia_status resize_check(const helia_resize_s8_args *args, int nearest)
{
    int32_t counts[2];
    helia_status status;
    if (args == NULL || args->input == NULL || args->output == NULL ||
        (nearest && (args->row_map == NULL || args->column_map == NULL))) {
        return HELIA_STATUS_NULL_POINTER;
    }
    {
        const int32_t input_dims[4] = {args->batches, args->input_h, args->input_w, args->channels};
        const int32_t output_dims[4] = {args->batches, args->output_h, args->output_w, args->channels};
        status = helia_ops_count(input_dims, 4, &counts[0]);
        if (status == HELIA_STATUS_OK) {
            status = helia_ops_count(output_dims, 4, &counts[1]);
        }
        if (status != HELIA_STATUS_OK) {
            return status;
        }
    }
    /* BILINEAR's coordinates in 1/1024ths must fit int32. */
    if (args->input_h > (INT32_MAX >> 11) || args->input_w > (INT32_MAX >> 11) ||
        args->output_h > (INT32_MAX >> 11) || args->output_w > (INT32_MAX >> 11)) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if ((args->align_corners != 0 && args->align_corners != 1) ||
        (args->half_pixel_centers != 0 && args->half_pixel_centers != 1)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (nearest) {
        int32_t k;
        for (k = 0; k < args->output_h; ++k) {
            if (args->row_map[k] < 0 || args->row_map[k] >= args->input_h) {
                return HELIA_STATUS_BAD_PARAMETER;
            }
        }
        for (k = 0; k < args->output_w; ++k) {
            if (args->column_map[k] < 0 || args->column_map[k] >= args->input_w) {
                return HELIA_STATUS_BAD_PARAMETER;
            }
        }
        if (helia_ops_overlap(args->output, (size_t)counts[1], args->row_map,
                              (size_t)args->output_h * sizeof(int32_t)) ||
            helia_ops_overlap(args->output, (size_t)counts[1], args->column_map,
                              (size_t)args->output_w * sizeof(int32_t))) {
            return HELIA_STATUS_PARTIAL_OVERLAP;
        }
    }
    if (helia_ops_overlap(args->output, (size_t)counts[1], args->input, (size_t)counts[0])) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_resize_nearest_s8_check(const helia_resize_s8_args *args)
{
    return resize_check(args, 1);
}

helia_status helia_resize_nearest_s8_run(const helia_resize_s8_args *args)
{
    int8_t *out = args->output;
    int32_t n;
    for (n = 0; n < args->batches; ++n) {
        int32_t y;
        for (y = 0; y < args->output_h; ++y) {
            int32_t x;
            for (x = 0; x < args->output_w; ++x) {
                const int8_t *in =
                    args->input +
                    ((n * args->input_h + args->row_map[y]) * args->input_w + args->column_map[x]) * args->channels;
                int32_t c;
                for (c = 0; c < args->channels; ++c) {
                    *out++ = in[c];
                }
            }
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_resize_nearest_s8(const helia_resize_s8_args *args)
{
    const helia_status status = helia_resize_nearest_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_resize_nearest_s8_run(args);
}

helia_status helia_resize_bilinear_s8_check(const helia_resize_s8_args *args)
{
    return resize_check(args, 0);
}

/* The source coordinate of output `value` in 1/1024ths and its two neighbours (TFLite's integer rule). */
typedef struct interpolation {
    int32_t scaled;
    int32_t lower;
    int32_t upper;
} interpolation;

static int32_t scale_1024(int32_t input_size, int32_t output_size, int32_t align_corners)
{
    if (align_corners && output_size > 1) {
        return ((input_size - 1) * 1024 + (output_size - 1) / 2) / (output_size - 1);
    }
    return (input_size * 1024 + output_size / 2) / output_size;
}

static interpolation interpolate(int32_t value, int32_t scale, int32_t half_pixel_centers, int32_t size)
{
    interpolation result;
    int32_t lower;
    int32_t upper;
    result.scaled = half_pixel_centers ? value * scale + scale / 2 - 512 : value * scale;
    lower = result.scaled / 1024; /* C division truncates toward zero, as TFLite's does */
    upper = (result.scaled + 1023) / 1024;
    result.lower = lower > 0 ? lower : 0;
    result.upper = upper < size - 1 ? upper : size - 1;
    return result;
}

/* v / 2^20 rounded half away from zero, without a 64-bit division. */
static int8_t round_2_20(int64_t v)
{
    const int64_t magnitude = v >= 0 ? v : -v;
    const int64_t rounded = (magnitude + ((int64_t)1 << 19)) >> 20;
    return (int8_t)(v >= 0 ? rounded : -rounded);
}

helia_status helia_resize_bilinear_s8_run(const helia_resize_s8_args *args)
{
    const int32_t scale_h = scale_1024(args->input_h, args->output_h, args->align_corners);
    const int32_t scale_w = scale_1024(args->input_w, args->output_w, args->align_corners);
    const int32_t row = args->input_w * args->channels;
    int8_t *out = args->output;
    int32_t n;
    for (n = 0; n < args->batches; ++n) {
        const int8_t *image = args->input + n * args->input_h * row;
        int32_t y;
        for (y = 0; y < args->output_h; ++y) {
            const interpolation iy = interpolate(y, scale_h, args->half_pixel_centers, args->input_h);
            const int64_t dy = iy.scaled - 1024 * iy.lower;
            int32_t x;
            for (x = 0; x < args->output_w; ++x) {
                const interpolation ix = interpolate(x, scale_w, args->half_pixel_centers, args->input_w);
                const int64_t dx = ix.scaled - 1024 * ix.lower;
                const int8_t *ll = image + iy.lower * row + ix.lower * args->channels;
                const int8_t *lu = image + iy.upper * row + ix.lower * args->channels;
                const int8_t *rl = image + iy.lower * row + ix.upper * args->channels;
                const int8_t *ru = image + iy.upper * row + ix.upper * args->channels;
                int32_t c;
                for (c = 0; c < args->channels; ++c) {
                    const int64_t sum = (int64_t)ll[c] * (1024 - dy) * (1024 - dx) + (int64_t)lu[c] * dy * (1024 - dx) +
                                        (int64_t)rl[c] * (1024 - dy) * dx + (int64_t)ru[c] * dy * dx;
                    *out++ = round_2_20(sum);
                }
            }
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_resize_bilinear_s8(const helia_resize_s8_args *args)
{
    const helia_status status = helia_resize_bilinear_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_resize_bilinear_s8_run(args);
}

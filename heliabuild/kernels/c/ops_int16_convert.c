/*
 * ops_int16_convert.c - QUANTIZE float32 -> int16 and DEQUANTIZE int16 -> float32, the boundary operators of a
 * 16x8 model with float input and output: y = saturate(round_half_away(x / scale) + zp) in float32, and
 * x = (float)(q - zp) * scale, as LiteRT's reference kernels (docs/kernels.md, "int16 (16x8) kernels").
 *
 * C99, no heap, no recursion.
 */
#include "helia_ops.h"
#include "helia_ops_internal.h"

static helia_status convert_s16_check(const void *input, size_t input_bytes, const void *output,
                                      size_t output_bytes, int32_t count, float scale, int32_t zero_point)
{
    if (input == NULL || output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (count < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (count > INT32_MAX / 4) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    /* A positive, finite scale (NaN fails the first comparison). */
    if (!(scale > 0.0f) || !(scale <= 3.40282347e+38f) || zero_point < INT16_MIN || zero_point > INT16_MAX) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (helia_ops_overlap(output, output_bytes, input, input_bytes)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_quantize_f32_s16_check(const float *input, int16_t *output, int32_t count, float scale,
                                          int32_t zero_point)
{
    const size_t n = count > 0 ? (size_t)count : 0u;
    return convert_s16_check(input, n * sizeof(float), output, n * 2u, count, scale, zero_point);
}

helia_status helia_quantize_f32_s16_run(const float *input, int16_t *output, int32_t count, float scale,
                                        int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < count; ++i) {
        const int32_t q = helia_ops_round_half_away_s32(input[i] / scale);
        /* Saturate before adding the zero point, so the sum cannot overflow. */
        const int32_t bounded = q < -65536 ? -65536 : (q > 65536 ? 65536 : q);
        const int32_t value = bounded + zero_point;
        output[i] = (int16_t)(value < INT16_MIN ? INT16_MIN : (value > INT16_MAX ? INT16_MAX : value));
    }
    return HELIA_STATUS_OK;
}

helia_status helia_quantize_f32_s16(const float *input, int16_t *output, int32_t count, float scale,
                                    int32_t zero_point)
{
    const helia_status status = helia_quantize_f32_s16_check(input, output, count, scale, zero_point);
    return status != HELIA_STATUS_OK ? status : helia_quantize_f32_s16_run(input, output, count, scale, zero_point);
}

helia_status helia_dequantize_s16_f32_check(const int16_t *input, float *output, int32_t count, float scale,
                                            int32_t zero_point)
{
    const size_t n = count > 0 ? (size_t)count : 0u;
    return convert_s16_check(input, n * 2u, output, n * sizeof(float), count, scale, zero_point);
}

helia_status helia_dequantize_s16_f32_run(const int16_t *input, float *output, int32_t count, float scale,
                                          int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < count; ++i) {
        output[i] = (float)((int32_t)input[i] - zero_point) * scale;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_dequantize_s16_f32(const int16_t *input, float *output, int32_t count, float scale,
                                      int32_t zero_point)
{
    const helia_status status = helia_dequantize_s16_f32_check(input, output, count, scale, zero_point);
    return status != HELIA_STATUS_OK ? status : helia_dequantize_s16_f32_run(input, output, count, scale, zero_point);
}

/*
 * ops_data.c - int8 MEAN over a contiguous run of axes, as LiteRT's reference kernel computes it.
 *
 * The input is viewed as [outer, reduced, inner] and the output as [outer, inner]. Per output, with n =
 * reduced and sum the raw codes of its n inputs (int32; the check bounds n x 256 below 2^31):
 *   y = clamp(MBQM(sum - n x zp_in, m, s) + zp_out)
 * where MBQM is the double-rounding MultiplyByQuantizedMultiplier (helia_fixed.h) and (m, s) is the quantized
 * multiplier of double(in_scale) / double(out_scale) with 1/n folded in by the caller
 * (heliabuild.kernels.int8.mean_params): m = (m0 << k) / n, s = s0 - k, k = min(floor(log2 n), 32, 31 + s0).
 * So m may lie below 2^30. See docs/kernels.md. C99, no heap, no recursion, no floating point.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

helia_status helia_mean_s8_check(const helia_mean_s8_args *args)
{
    int64_t input_count;
    int64_t output_count;
    if (args == NULL || args->input == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->outer < 1 || args->reduced < 1 || args->inner < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    input_count = (int64_t)args->outer * args->reduced * args->inner;
    output_count = (int64_t)args->outer * args->inner;
    if (input_count > INT32_MAX || args->reduced > INT32_MAX / 256) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if (!helia_ops_zero_point_ok(args->input_zero_point) || !helia_ops_zero_point_ok(args->output_zero_point) ||
        args->multiplier < 0 || args->shift < -31 || args->shift > 30) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (helia_ops_overlap(args->output, (size_t)output_count, args->input, (size_t)input_count)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_mean_s8_run(const helia_mean_s8_args *args)
{
    const int32_t n = args->reduced;
    int32_t o;
    int32_t i;
    int32_t r;
    for (o = 0; o < args->outer; ++o) {
        for (i = 0; i < args->inner; ++i) {
            const int8_t *first = args->input + ((size_t)o * (size_t)n) * (size_t)args->inner + (size_t)i;
            int32_t sum = 0;
            int32_t scaled;
            for (r = 0; r < n; ++r) {
                sum += first[(size_t)r * (size_t)args->inner];
            }
            scaled = helia_mbqm_double(sum - n * args->input_zero_point, args->multiplier, args->shift);
            args->output[(size_t)o * (size_t)args->inner + (size_t)i] =
                helia_clamp_s8(helia_wrapping_add_s32(scaled, args->output_zero_point), -128, 127);
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_mean_s8(const helia_mean_s8_args *args)
{
    const helia_status status = helia_mean_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_mean_s8_run(args);
}

/*
 * ops_elementwise.c - int8 ADD and MUL (with NumPy broadcasting), QUANTIZE
 * (float32 -> int8) and DEQUANTIZE (int8 -> float32).
 *
 * ADD rescales both inputs to a common scale with 2^left_shift headroom:
 *   a = MBQM((x1 - zp1) << left_shift, m1, s1), b = MBQM((x2 - zp2) << left_shift, m2, s2)
 *   y = clamp(MBQM(a + b, m_out, s_out) + zp_out)
 * MUL: y = clamp(MBQM((x1 - zp1) * (x2 - zp2), m_out, s_out) + zp_out).
 * QUANTIZE: y = saturate(round_half_away(x / scale) + zp), in float32.
 * DEQUANTIZE: y = (float)(x - zp) * scale, one float32 rounding.
 * MBQM is the double-rounding MultiplyByQuantizedMultiplier (helia_fixed.h), as LiteRT
 * rounds for ADD and MUL. On a target with integer MVE, ADD and MUL run four lanes at a
 * time with helia_fixed_mve.h, the same arithmetic step for step (the same bytes): equal
 * extents as one run, broadcasting one run per innermost row of the output, each input
 * advancing along it or repeating one element. See docs/kernels.md.
 *
 * C99, no heap, no recursion, no libm.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

#if HELIA_OPS_MVE
#include <arm_mve.h>

#include "helia_broadcast.h"
#include "helia_fixed_mve.h"
#endif

#define KIND_ADD 0
#define KIND_MUL 1

static helia_status binary_check(const helia_binary_s8_args *args, int kind, int32_t *counts)
{
    int32_t i;
    helia_status status;
    size_t out_bytes;
    if (args == NULL || args->input1 == NULL || args->input2 == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->rank < 1 || args->rank > HELIA_OPS_MAX_RANK) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    status = helia_ops_count(args->input1_dims, args->rank, &counts[0]);
    if (status == HELIA_STATUS_OK) {
        status = helia_ops_count(args->input2_dims, args->rank, &counts[1]);
    }
    if (status == HELIA_STATUS_OK) {
        status = helia_ops_count(args->output_dims, args->rank, &counts[2]);
    }
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    for (i = 0; i < args->rank; ++i) {
        const int32_t a = args->input1_dims[i];
        const int32_t b = args->input2_dims[i];
        const int32_t o = args->output_dims[i];
        if ((a != o && a != 1) || (b != o && b != 1) || o != (a > b ? a : b)) {
            return HELIA_STATUS_SHAPE_MISMATCH;
        }
    }
    if (!helia_ops_zero_point_ok(args->input1_zero_point) || !helia_ops_zero_point_ok(args->input2_zero_point) ||
        !helia_ops_zero_point_ok(args->output_zero_point) || !helia_ops_activation_ok(args->act_min, args->act_max) ||
        !helia_ops_multiplier_ok(args->output_multiplier, args->output_shift)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (kind == KIND_ADD &&
        (args->left_shift < 0 || args->left_shift > 22 ||
         !helia_ops_multiplier_ok(args->input1_multiplier, args->input1_shift) || args->input1_shift > 0 ||
         !helia_ops_multiplier_ok(args->input2_multiplier, args->input2_shift) || args->input2_shift > 0 ||
         args->output_shift > 0)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    /* The output may be exactly an input of the output's size (in place); any other overlap is refused. */
    out_bytes = (size_t)counts[2];
    if ((helia_ops_overlap(args->output, out_bytes, args->input1, (size_t)counts[0]) &&
         !((const void *)args->output == (const void *)args->input1 && counts[0] == counts[2])) ||
        (helia_ops_overlap(args->output, out_bytes, args->input2, (size_t)counts[1]) &&
         !((const void *)args->output == (const void *)args->input2 && counts[1] == counts[2]))) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

static int8_t add_one(const helia_binary_s8_args *args, int32_t x1, int32_t x2)
{
    const int32_t a = helia_mbqm_double((x1 - args->input1_zero_point) * (INT32_C(1) << args->left_shift),
                                                             args->input1_multiplier, args->input1_shift);
    const int32_t b = helia_mbqm_double((x2 - args->input2_zero_point) * (INT32_C(1) << args->left_shift),
                                                             args->input2_multiplier, args->input2_shift);
    const int32_t sum = helia_mbqm_double(a + b, args->output_multiplier, args->output_shift);
    return helia_clamp_s8(helia_wrapping_add_s32(sum, args->output_zero_point), args->act_min, args->act_max);
}

static int8_t mul_one(const helia_binary_s8_args *args, int32_t x1, int32_t x2)
{
    const int32_t product = (x1 - args->input1_zero_point) * (x2 - args->input2_zero_point);
    const int32_t scaled = helia_mbqm_double(product, args->output_multiplier, args->output_shift);
    return helia_clamp_s8(helia_wrapping_add_s32(scaled, args->output_zero_point), args->act_min, args->act_max);
}

#if HELIA_OPS_MVE
/* ADD or MUL of `count` outputs, four lanes at a time, from inputs that advance one element per output (step 1)
 * or repeat one element (step 0, a broadcast). Always inlined with constant steps. An output that is exactly an
 * input is read before it is written, lane for lane. */
static inline __attribute__((always_inline)) void binary_row_mve(const helia_binary_s8_args *args, int kind,
                                                                const int8_t *in1, int step1, const int8_t *in2,
                                                                int step2, int32_t count, int8_t *out)
{
    const int32x4_t m1 = vdupq_n_s32(args->input1_multiplier);
    const int32x4_t s1 = vdupq_n_s32(args->input1_shift);
    const int32x4_t m2 = vdupq_n_s32(args->input2_multiplier);
    const int32x4_t s2 = vdupq_n_s32(args->input2_shift);
    const int32x4_t m_out = vdupq_n_s32(args->output_multiplier);
    const int32x4_t s_out = vdupq_n_s32(args->output_shift);
    const int32_t scale = INT32_C(1) << args->left_shift;
    const int32x4_t first1 = vdupq_n_s32(step1 ? 0 : in1[0] - args->input1_zero_point);
    const int32x4_t first2 = vdupq_n_s32(step2 ? 0 : in2[0] - args->input2_zero_point);
    int32_t n;
    for (n = 0; n < count; n += 4) {
        const mve_pred16_t lanes = vctp32q((uint32_t)(count - n));
        const int32x4_t x1 = step1 ? vsubq_n_s32(vldrbq_z_s32(in1 + n, lanes), args->input1_zero_point) : first1;
        const int32x4_t x2 = step2 ? vsubq_n_s32(vldrbq_z_s32(in2 + n, lanes), args->input2_zero_point) : first2;
        int32x4_t y;
        if (kind == KIND_ADD) {
            const int32x4_t a = helia_mbqm_double_x4(vmulq_n_s32(x1, scale), m1, s1);
            const int32x4_t b = helia_mbqm_double_x4(vmulq_n_s32(x2, scale), m2, s2);
            y = helia_mbqm_double_x4(vaddq_s32(a, b), m_out, s_out);
        } else {
            y = helia_mbqm_double_x4(vmulq_s32(x1, x2), m_out, s_out);
        }
        y = vaddq_n_s32(y, args->output_zero_point);
        y = vminq_s32(vmaxq_s32(y, vdupq_n_s32(args->act_min)), vdupq_n_s32(args->act_max));
        vstrbq_p_s32(out + n, y, lanes);
    }
}

/* binary_row_mve with the steps of the innermost axis (each 0 or 1). */
static void binary_row_steps_mve(const helia_binary_s8_args *args, int kind, const int8_t *in1, int32_t step1,
                                 const int8_t *in2, int32_t step2, int32_t count, int8_t *out)
{
    if (step1 != 0 && step2 != 0) {
        binary_row_mve(args, kind, in1, 1, in2, 1, count, out);
    } else if (step1 != 0) {
        binary_row_mve(args, kind, in1, 1, in2, 0, count, out);
    } else if (step2 != 0) {
        binary_row_mve(args, kind, in1, 0, in2, 1, count, out);
    } else {
        binary_row_mve(args, kind, in1, 0, in2, 0, count, out);
    }
}

static int same_extents(const helia_binary_s8_args *args)
{
    int32_t i;
    for (i = 0; i < args->rank; ++i) {
        if (args->input1_dims[i] != args->output_dims[i] || args->input2_dims[i] != args->output_dims[i]) {
            return 0;
        }
    }
    return 1;
}
#endif

static helia_status binary_run(const helia_binary_s8_args *args, int kind)
{
    int32_t counts[3];
    int32_t stride1[HELIA_OPS_MAX_RANK];
    int32_t stride2[HELIA_OPS_MAX_RANK];
    int32_t index[HELIA_OPS_MAX_RANK];
    int32_t step1 = 1;
    int32_t step2 = 1;
    int32_t offset1 = 0;
    int32_t offset2 = 0;
    int32_t i;
    int32_t n;
    counts[2] = helia_ops_product(args->output_dims, args->rank);
#if HELIA_OPS_MVE
    if (same_extents(args)) {
        binary_row_mve(args, kind, args->input1, 1, args->input2, 1, counts[2], args->output);
    } else {
        /* Broadcasting: one vector row per innermost run of the output, each input advancing along it or
         * repeating one element. */
        helia_broadcast_walk walk =
            helia_broadcast_begin(args->rank, args->input1_dims, args->input2_dims, args->output_dims);
        const int32_t last = args->rank - 1;
        const int32_t inner = args->output_dims[last];
        for (n = 0; n < walk.total; n += inner) {
            binary_row_steps_mve(args, kind, args->input1 + walk.at1, walk.stride1[last], args->input2 + walk.at2,
                                 walk.stride2[last], inner, args->output + n);
            helia_broadcast_advance(&walk, last - 1);
        }
    }
    return HELIA_STATUS_OK;
#endif
    /* Element strides of each input, 0 along a broadcast axis. */
    for (i = args->rank - 1; i >= 0; --i) {
        stride1[i] = args->input1_dims[i] == 1 ? 0 : step1;
        stride2[i] = args->input2_dims[i] == 1 ? 0 : step2;
        step1 *= args->input1_dims[i];
        step2 *= args->input2_dims[i];
        index[i] = 0;
    }
    for (n = 0; n < counts[2]; ++n) {
        const int32_t x1 = args->input1[offset1];
        const int32_t x2 = args->input2[offset2];
        args->output[n] = kind == KIND_ADD ? add_one(args, x1, x2) : mul_one(args, x1, x2);
        /* Advance the output index like an odometer, moving both input offsets along. */
        for (i = args->rank - 1; i >= 0; --i) {
            ++index[i];
            offset1 += stride1[i];
            offset2 += stride2[i];
            if (index[i] < args->output_dims[i]) {
                break;
            }
            offset1 -= stride1[i] * index[i];
            offset2 -= stride2[i] * index[i];
            index[i] = 0;
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_add_s8_check(const helia_binary_s8_args *args)
{
    int32_t counts[3];
    return binary_check(args, KIND_ADD, counts);
}

helia_status helia_add_s8_run(const helia_binary_s8_args *args)
{
    return binary_run(args, KIND_ADD);
}

helia_status helia_add_s8(const helia_binary_s8_args *args)
{
    const helia_status status = helia_add_s8_check(args);
    return status != HELIA_STATUS_OK ? status : binary_run(args, KIND_ADD);
}

helia_status helia_mul_s8_check(const helia_binary_s8_args *args)
{
    int32_t counts[3];
    return binary_check(args, KIND_MUL, counts);
}

helia_status helia_mul_s8_run(const helia_binary_s8_args *args)
{
    return binary_run(args, KIND_MUL);
}

helia_status helia_mul_s8(const helia_binary_s8_args *args)
{
    const helia_status status = helia_mul_s8_check(args);
    return status != HELIA_STATUS_OK ? status : binary_run(args, KIND_MUL);
}

/* ---- QUANTIZE / DEQUANTIZE -------------------------------------------------------------------- */

static helia_status convert_check(const void *input, size_t input_bytes, const void *output, size_t output_bytes,
                                  int32_t count, float scale, int32_t zero_point)
{
    if (input == NULL || output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (count < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    /* A positive, finite scale (NaN fails the first comparison). */
    if (!(scale > 0.0f) || !(scale <= 3.40282347e+38f) || !helia_ops_zero_point_ok(zero_point)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (helia_ops_overlap(output, output_bytes, input, input_bytes)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_quantize_f32_s8_check(const float *input, int8_t *output, int32_t count, float scale,
                                         int32_t zero_point)
{
    const size_t n = count > 0 ? (size_t)count : 0u;
    return convert_check(input, n * sizeof(float), output, n, count, scale, zero_point);
}

helia_status helia_quantize_f32_s8_run(const float *input, int8_t *output, int32_t count, float scale,
                                   int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < count; ++i) {
        const int32_t q = helia_ops_round_half_away_s32(input[i] / scale);
        /* Saturate before adding the zero point, so the sum cannot overflow. */
        const int32_t bounded = q < -256 ? -256 : (q > 256 ? 256 : q);
        output[i] = helia_clamp_s8(bounded + zero_point, -128, 127);
    }
    return HELIA_STATUS_OK;
}

helia_status helia_quantize_f32_s8(const float *input, int8_t *output, int32_t count, float scale,
                                   int32_t zero_point)
{
    const helia_status status = helia_quantize_f32_s8_check(input, output, count, scale, zero_point);
    return status != HELIA_STATUS_OK ? status : helia_quantize_f32_s8_run(input, output, count, scale, zero_point);
}

helia_status helia_dequantize_s8_f32_check(const int8_t *input, float *output, int32_t count, float scale,
                                           int32_t zero_point)
{
    const size_t n = count > 0 ? (size_t)count : 0u;
    return convert_check(input, n, output, n * sizeof(float), count, scale, zero_point);
}

helia_status helia_dequantize_s8_f32_run(const int8_t *input, float *output, int32_t count, float scale,
                                     int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < count; ++i) {
        output[i] = (float)((int32_t)input[i] - zero_point) * scale;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_dequantize_s8_f32(const int8_t *input, float *output, int32_t count, float scale,
                                     int32_t zero_point)
{
    const helia_status status = helia_dequantize_s8_f32_check(input, output, count, scale, zero_point);
    return status != HELIA_STATUS_OK ? status : helia_dequantize_s8_f32_run(input, output, count, scale, zero_point);
}

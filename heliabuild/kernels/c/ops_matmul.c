/*
 * ops_matmul.c - int8 BATCH_MATMUL and TRANSPOSE_CONV.
 *
 * BATCH_MATMUL: out[b, m, n] = clamp(MBQM(sum_k (lhs[b, m, k] - zp_lhs) (rhs[b, k, n] - zp_rhs)) + zp_out),
 * one per-tensor multiplier of scale_lhs * scale_rhs / scale_out, the batch axes broadcast.
 * TRANSPOSE_CONV: each output is gathered from the inputs whose strided window covers it (LiteRT's
 * reference scatters the products into an int32 scratch buffer of the output's size; an integer sum does not
 * depend on its order, so the gather needs no scratch and gives the same accumulator), + bias, then the
 * per-channel MBQM. MBQM is the double-rounding MultiplyByQuantizedMultiplier (helia_fixed.h), as LiteRT
 * rounds both. docs/kernels.md.
 *
 * On a target with integer MVE (the same bytes, docs/kernels.md "Helium (MVE) bodies"): BATCH_MATMUL with a
 * row-major rhs takes four output columns per vector (VMLA of the rhs row by the lhs element), requantized in
 * four lanes; TRANSPOSE_CONV's dot product over the input channels is VMLADAVA with the zero point folded by
 * the taps' weight sum (VADDVA), both modulo 2^32 as the bounded int32 sum.
 *
 * C99, no heap, no recursion, no floating point.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

#if HELIA_OPS_MVE
#include <arm_mve.h>

#include "helia_fixed_mve.h"
#endif

/* The largest |(lhs - zp) * (rhs - zp)| of two int8 activations: 255 * 255. */
#define MATMUL_MAX_PRODUCT 65025

/* *count = product of the batch extents times a * b, refusing extents < 1 and counts above INT32_MAX. */
static helia_status matmul_count(const int32_t *batch, int32_t a, int32_t b, int32_t *count)
{
    const int32_t dims[HELIA_BATCH_MATMUL_BATCH_AXES + 2] = {batch[0], batch[1], batch[2], a, b};
    return helia_ops_count(dims, HELIA_BATCH_MATMUL_BATCH_AXES + 2, count);
}

helia_status helia_batch_matmul_s8_check(const helia_batch_matmul_s8_args *args)
{
    int32_t lhs_count;
    int32_t rhs_count;
    int32_t output_count;
    int32_t axis;
    helia_status status;
    if (args == NULL || args->lhs == NULL || args->rhs == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    status = matmul_count(args->lhs_batch, args->rows, args->depth, &lhs_count);
    if (status == HELIA_STATUS_OK) {
        status = matmul_count(args->rhs_batch, args->depth, args->cols, &rhs_count);
    }
    if (status == HELIA_STATUS_OK) {
        status = matmul_count(args->output_batch, args->rows, args->cols, &output_count);
    }
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    for (axis = 0; axis < HELIA_BATCH_MATMUL_BATCH_AXES; ++axis) {
        const int32_t l = args->lhs_batch[axis];
        const int32_t r = args->rhs_batch[axis];
        const int32_t o = args->output_batch[axis];
        if ((l != o && l != 1) || (r != o && r != 1) || o != (l > r ? l : r)) {
            return HELIA_STATUS_SHAPE_MISMATCH;
        }
    }
    if (args->depth > INT32_MAX / MATMUL_MAX_PRODUCT) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if ((args->adj_lhs != 0 && args->adj_lhs != 1) || (args->adj_rhs != 0 && args->adj_rhs != 1) ||
        !helia_ops_zero_point_ok(args->lhs_zero_point) || !helia_ops_zero_point_ok(args->rhs_zero_point) ||
        !helia_ops_zero_point_ok(args->output_zero_point) || !helia_ops_activation_ok(args->act_min, args->act_max) ||
        !helia_ops_multiplier_ok(args->multiplier, args->shift)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (helia_ops_overlap(args->output, (size_t)output_count, args->lhs, (size_t)lhs_count) ||
        helia_ops_overlap(args->output, (size_t)output_count, args->rhs, (size_t)rhs_count)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

/* The offset of batch `index` (an output batch position) in an operand of extents `batch`. */
static int32_t batch_offset(const int32_t *batch, const int32_t *index, int32_t matrix)
{
    int32_t offset = 0;
    int32_t axis;
    for (axis = 0; axis < HELIA_BATCH_MATMUL_BATCH_AXES; ++axis) {
        offset = offset * batch[axis] + (batch[axis] == 1 ? 0 : index[axis]);
    }
    return offset * matrix;
}

#if HELIA_OPS_MVE
/* One batch of a row-major rhs (adj_rhs 0): out[m, n..n+3] = sum_k (lhs[m, k] - zp) (rhs[k, n..n+3] - zp) as
 * four lanes, then the four-lane double rounding. */
static void batch_matmul_columns_mve(const helia_batch_matmul_s8_args *args, const int8_t *lhs, const int8_t *rhs,
                                     int32_t lhs_m, int32_t lhs_k, int8_t *out)
{
    const int32x4_t multiplier = vdupq_n_s32(args->multiplier);
    const int32x4_t shift = vdupq_n_s32(args->shift);
    int32_t m;
    int32_t n;
    int32_t k;
    for (m = 0; m < args->rows; ++m) {
        for (n = 0; n < args->cols; n += 4) {
            const mve_pred16_t lanes = vctp32q((uint32_t)(args->cols - n));
            int32x4_t acc = vdupq_n_s32(0);
            for (k = 0; k < args->depth; ++k) {
                const int32x4_t right =
                    vsubq_n_s32(vldrbq_z_s32(rhs + (size_t)k * (size_t)args->cols + (size_t)n, lanes), args->rhs_zero_point);
                acc = vmlaq_n_s32(acc, right, (int32_t)lhs[m * lhs_m + k * lhs_k] - args->lhs_zero_point);
            }
            acc = vaddq_n_s32(helia_mbqm_double_x4(acc, multiplier, shift), args->output_zero_point);
            acc = vminq_s32(vmaxq_s32(acc, vdupq_n_s32(args->act_min)), vdupq_n_s32(args->act_max));
            vstrbq_p_s32(out + (size_t)m * (size_t)args->cols + (size_t)n, acc, lanes);
        }
    }
}
#endif

helia_status helia_batch_matmul_s8_run(const helia_batch_matmul_s8_args *args)
{
    /* Element steps along rows (m), columns (n) and depth (k) of each operand. */
    const int32_t lhs_m = args->adj_lhs ? 1 : args->depth;
    const int32_t lhs_k = args->adj_lhs ? args->rows : 1;
    const int32_t rhs_k = args->adj_rhs ? 1 : args->cols;
    const int32_t rhs_n = args->adj_rhs ? args->depth : 1;
    int32_t index[HELIA_BATCH_MATMUL_BATCH_AXES];
    int8_t *out = args->output;
    for (index[0] = 0; index[0] < args->output_batch[0]; ++index[0]) {
        for (index[1] = 0; index[1] < args->output_batch[1]; ++index[1]) {
            for (index[2] = 0; index[2] < args->output_batch[2]; ++index[2]) {
                const int8_t *lhs = args->lhs + batch_offset(args->lhs_batch, index, args->rows * args->depth);
                const int8_t *rhs = args->rhs + batch_offset(args->rhs_batch, index, args->depth * args->cols);
                int32_t m;
#if HELIA_OPS_MVE
                if (!args->adj_rhs) {
                    batch_matmul_columns_mve(args, lhs, rhs, lhs_m, lhs_k, out);
                    out += args->rows * args->cols;
                    continue;
                }
#endif
                for (m = 0; m < args->rows; ++m) {
                    int32_t n;
                    for (n = 0; n < args->cols; ++n) {
                        int32_t total = 0;
                        int32_t k;
                        for (k = 0; k < args->depth; ++k) {
                            total += ((int32_t)lhs[m * lhs_m + k * lhs_k] - args->lhs_zero_point) *
                                     ((int32_t)rhs[k * rhs_k + n * rhs_n] - args->rhs_zero_point);
                        }
                        total = helia_mbqm_double(total, args->multiplier, args->shift);
                        *out++ = helia_clamp_s8(helia_wrapping_add_s32(total, args->output_zero_point), args->act_min,
                                                args->act_max);
                    }
                }
            }
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_batch_matmul_s8(const helia_batch_matmul_s8_args *args)
{
    const helia_status status = helia_batch_matmul_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_batch_matmul_s8_run(args);
}

/* ---- TRANSPOSE_CONV ----------------------------------------------------------------------------- */

helia_status helia_transpose_conv_s8_check(const helia_conv_s8_args *args)
{
    int32_t counts[4];
    size_t output_bytes;
    helia_status status;
    if (args == NULL || args->input == NULL || args->filter == NULL || args->multipliers == NULL ||
        args->shifts == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    {
        const int32_t input_dims[4] = {args->batches, args->input_h, args->input_w, args->input_c};
        const int32_t filter_dims[4] = {args->output_c, args->filter_h, args->filter_w, args->input_c};
        const int32_t output_dims[4] = {args->batches, args->output_h, args->output_w, args->output_c};
        const int32_t window[3] = {args->filter_h, args->filter_w, args->input_c};
        status = helia_ops_count(input_dims, 4, &counts[0]);
        if (status == HELIA_STATUS_OK) {
            status = helia_ops_count(filter_dims, 4, &counts[1]);
        }
        if (status == HELIA_STATUS_OK) {
            status = helia_ops_count(output_dims, 4, &counts[2]);
        }
        if (status == HELIA_STATUS_OK) {
            status = helia_ops_count(window, 3, &counts[3]);
        }
        if (status != HELIA_STATUS_OK) {
            return status;
        }
    }
    if (counts[3] > INT32_MAX / HELIA_OPS_MAX_PRODUCT) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if (args->stride_h < 1 || args->stride_w < 1 || args->dilation_h != 1 || args->dilation_w != 1 ||
        args->pad_top < 0 || args->pad_left < 0 || args->depth_multiplier != 1 ||
        (args->quant_count != 1 && args->quant_count != args->output_c) ||
        !helia_ops_zero_point_ok(args->input_zero_point) || !helia_ops_zero_point_ok(args->output_zero_point) ||
        !helia_ops_activation_ok(args->act_min, args->act_max)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    status = helia_ops_multipliers_ok(args->multipliers, args->shifts, args->quant_count);
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    output_bytes = (size_t)counts[2];
    if (helia_ops_overlap(args->output, output_bytes, args->input, (size_t)counts[0]) ||
        helia_ops_overlap(args->output, output_bytes, args->filter, (size_t)counts[1]) ||
        (args->bias != NULL &&
         helia_ops_overlap(args->output, output_bytes, args->bias, (size_t)args->output_c * sizeof(int32_t))) ||
        helia_ops_overlap(args->output, output_bytes, args->multipliers,
                          (size_t)args->quant_count * sizeof(int32_t)) ||
        helia_ops_overlap(args->output, output_bytes, args->shifts, (size_t)args->quant_count * sizeof(int32_t))) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

/* The input index whose stride-`stride` window, offset by `pad`, puts tap `tap` on output `position`: -1 if
 * none (the position is between two strided inputs, or outside the input). */
static int32_t source_index(int32_t position, int32_t pad, int32_t tap, int32_t stride, int32_t size)
{
    const int32_t t = position + pad - tap;
    if (t < 0 || t % stride != 0 || t / stride >= size) {
        return -1;
    }
    return t / stride;
}

static int32_t transpose_conv_sum(const helia_conv_s8_args *args, int32_t n, int32_t y, int32_t x, int32_t c)
{
    int32_t total = 0;
    int32_t ky;
    for (ky = 0; ky < args->filter_h; ++ky) {
        const int32_t i = source_index(y, args->pad_top, ky, args->stride_h, args->input_h);
        int32_t kx;
        if (i < 0) {
            continue;
        }
        for (kx = 0; kx < args->filter_w; ++kx) {
            const int32_t j = source_index(x, args->pad_left, kx, args->stride_w, args->input_w);
            const int8_t *in;
            const int8_t *w;
            int32_t k;
            if (j < 0) {
                continue;
            }
            in = args->input + ((n * args->input_h + i) * args->input_w + j) * args->input_c;
            w = args->filter + ((c * args->filter_h + ky) * args->filter_w + kx) * args->input_c;
#if HELIA_OPS_MVE
            {
                /* sum(in * w) - zp * sum(w), modulo 2^32 as the bounded sum; the tail's lanes load as zero. */
                int32_t dot = 0;
                int32_t weights = 0;
                for (k = 0; k < args->input_c; k += 16) {
                    const mve_pred16_t lanes = vctp8q((uint32_t)(args->input_c - k));
                    const int8x16_t taps = vldrbq_z_s8(w + k, lanes);
                    dot = vmladavaq_s8(dot, vldrbq_z_s8(in + k, lanes), taps);
                    weights = vaddvaq_s8(weights, taps);
                }
                total = helia_wrap_s32((int64_t)total + dot - (int64_t)args->input_zero_point * weights);
                continue;
            }
#endif
            for (k = 0; k < args->input_c; ++k) {
                total += ((int32_t)in[k] - args->input_zero_point) * (int32_t)w[k];
            }
        }
    }
    return total;
}

helia_status helia_transpose_conv_s8_run(const helia_conv_s8_args *args)
{
    int8_t *out = args->output;
    int32_t n;
    for (n = 0; n < args->batches; ++n) {
        int32_t y;
        for (y = 0; y < args->output_h; ++y) {
            int32_t x;
            for (x = 0; x < args->output_w; ++x) {
                int32_t c;
                for (c = 0; c < args->output_c; ++c) {
                    const int32_t q = args->quant_count == 1 ? 0 : c;
                    int32_t acc = transpose_conv_sum(args, n, y, x, c);
                    if (args->bias != NULL) {
                        acc = helia_wrapping_add_s32(acc, args->bias[c]);
                    }
                    acc = helia_mbqm_double(acc, args->multipliers[q], args->shifts[q]);
                    *out++ = helia_clamp_s8(helia_wrapping_add_s32(acc, args->output_zero_point), args->act_min,
                                            args->act_max);
                }
            }
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_transpose_conv_s8(const helia_conv_s8_args *args)
{
    const helia_status status = helia_transpose_conv_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_transpose_conv_s8_run(args);
}

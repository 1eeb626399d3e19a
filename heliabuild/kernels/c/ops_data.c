/*
 * ops_data.c - int8 MEAN over a contiguous run of axes, as LiteRT's reference kernel computes it.
 *
 * The input is viewed as [outer, reduced, inner] and the output as [outer, inner]. Per output, with n =
 * reduced and sum the raw codes of its n inputs (int32; the check bounds n x 256 below 2^31):
 *   y = clamp(MBQM(sum - n x zp_in, m, s) + zp_out)
 * where MBQM is the double-rounding MultiplyByQuantizedMultiplier (helia_fixed.h) and (m, s) is the quantized
 * multiplier of double(in_scale) / double(out_scale) with 1/n folded in by the caller
 * (heliabuild.kernels.int8.mean_params): m = (m0 << k) / n, s = s0 - k, k = min(floor(log2 n), 32, 31 + s0).
 * So m may lie below 2^30.
 *
 * Index copy (STRIDED_SLICE, SLICE, TRANSPOSE, GATHER, MIRROR_PAD, SPACE_TO_DEPTH, DEPTH_TO_SPACE): output
 * element [i0, ..., ik] = input element sum_k maps_k[i_k] x input_strides[k], the per-axis index tables and
 * strides computed by the caller (heliabuild.codegen.lowering_data); the check bounds every read inside the
 * input. SPLIT, SPLIT_V, UNPACK: the inverse of CONCATENATION, byte copies. None rescales.
 * ARG_MAX / ARG_MIN: the first index of the largest / smallest raw code along the axis, as int32 or int64.
 *
 * See docs/kernels.md. C99, no heap, no recursion, no floating point.
 */
#include <string.h>

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

/* ---- index copy: STRIDED_SLICE, SLICE, TRANSPOSE, GATHER, MIRROR_PAD, SPACE_TO_DEPTH, DEPTH_TO_SPACE ---- */

helia_status helia_index_copy_check(const helia_index_copy_args *args)
{
    int64_t output_count = 1;
    int64_t last = 0;
    const int32_t *map;
    int32_t k;
    int32_t i;
    if (args == NULL || args->input == NULL || args->output == NULL || args->maps == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->rank < 1 || args->rank > HELIA_OPS_MAX_RANK || args->input_count < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (args->element_size != 1u && args->element_size != 2u && args->element_size != 4u &&
        args->element_size != 8u) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    map = args->maps;
    for (k = 0; k < args->rank; ++k) {
        int32_t largest = 0;
        if (args->output_dims[k] < 1) {
            return HELIA_STATUS_BAD_SHAPE;
        }
        output_count *= args->output_dims[k];
        if (output_count > INT32_MAX) {
            return HELIA_STATUS_SIZE_OVERFLOW;
        }
        if (args->input_strides[k] < 0) {
            return HELIA_STATUS_BAD_PARAMETER;
        }
        for (i = 0; i < args->output_dims[k]; ++i) {
            if (map[i] < 0 || map[i] >= args->input_count) {
                return HELIA_STATUS_BAD_PARAMETER;
            }
            largest = map[i] > largest ? map[i] : largest;
        }
        last += (int64_t)largest * args->input_strides[k];
        if (last >= args->input_count) {
            return HELIA_STATUS_SHAPE_MISMATCH;  /* an output element would read past the input */
        }
        map += args->output_dims[k];
    }
    if ((uint64_t)args->input_count * args->element_size > INT32_MAX ||
        (uint64_t)output_count * args->element_size > INT32_MAX) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if (helia_ops_overlap(args->output, (size_t)output_count * args->element_size, args->input,
                          (size_t)args->input_count * args->element_size)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_index_copy_run(const helia_index_copy_args *args)
{
    const int32_t *maps[HELIA_OPS_MAX_RANK];
    int32_t index[HELIA_OPS_MAX_RANK];
    int32_t part[HELIA_OPS_MAX_RANK];
    const unsigned char *input = (const unsigned char *)args->input;
    unsigned char *output = (unsigned char *)args->output;
    const size_t size = args->element_size;
    int32_t offset = 0;
    int32_t count = 1;
    int32_t k;
    int32_t n;
    const int32_t *map = args->maps;
    for (k = 0; k < args->rank; ++k) {
        maps[k] = map;
        map += args->output_dims[k];
        index[k] = 0;
        part[k] = maps[k][0] * args->input_strides[k];
        offset += part[k];
        count *= args->output_dims[k];
    }
    for (n = 0; n < count; ++n) {
        memcpy(output + (size_t)n * size, input + (size_t)offset * size, size);
        /* Advance the output index like an odometer, each axis contributing map[index] x stride. */
        for (k = args->rank - 1; k >= 0; --k) {
            offset -= part[k];
            ++index[k];
            if (index[k] == args->output_dims[k]) {
                index[k] = 0;
            }
            part[k] = maps[k][index[k]] * args->input_strides[k];
            offset += part[k];
            if (index[k] != 0) {
                break;
            }
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_index_copy(const helia_index_copy_args *args)
{
    const helia_status status = helia_index_copy_check(args);
    return status != HELIA_STATUS_OK ? status : helia_index_copy_run(args);
}

/* ---- SPLIT, SPLIT_V, UNPACK: CONCATENATION's inverse ----------------------------------------------- */

helia_status helia_split_check(const helia_split_args *args)
{
    int64_t total = 0;
    int64_t input_bytes;
    int32_t i;
    int32_t j;
    if (args == NULL || args->input == NULL || args->outputs == NULL || args->axis_extents == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->output_count < 1 || args->outer < 1 || args->inner < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (args->element_size < 1u || args->element_size > 8u) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    for (i = 0; i < args->output_count; ++i) {
        if (args->outputs[i] == NULL) {
            return HELIA_STATUS_NULL_POINTER;
        }
        if (args->axis_extents[i] < 1) {
            return HELIA_STATUS_BAD_SHAPE;
        }
        total += args->axis_extents[i];
        if (total > INT32_MAX) {
            return HELIA_STATUS_SIZE_OVERFLOW;
        }
    }
    input_bytes = (int64_t)args->outer * total * args->inner * (int64_t)args->element_size;
    if (input_bytes > INT32_MAX) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    for (i = 0; i < args->output_count; ++i) {
        const size_t bytes = (size_t)args->outer * (size_t)args->axis_extents[i] * (size_t)args->inner *
                             args->element_size;
        if (helia_ops_overlap(args->outputs[i], bytes, args->input, (size_t)input_bytes)) {
            return HELIA_STATUS_PARTIAL_OVERLAP;
        }
        for (j = 0; j < i; ++j) {
            const size_t other = (size_t)args->outer * (size_t)args->axis_extents[j] * (size_t)args->inner *
                                 args->element_size;
            if (helia_ops_overlap(args->outputs[i], bytes, args->outputs[j], other)) {
                return HELIA_STATUS_CROSS_PAIR_OVERLAP;
            }
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_split_run(const helia_split_args *args)
{
    const unsigned char *input = (const unsigned char *)args->input;
    const size_t row = (size_t)args->inner * args->element_size;
    int32_t o;
    int32_t i;
    for (o = 0; o < args->outer; ++o) {
        for (i = 0; i < args->output_count; ++i) {
            const size_t bytes = (size_t)args->axis_extents[i] * row;
            /* The table is const because the generated module emits every address table so; the bytes are not. */
            memcpy((unsigned char *)(uintptr_t)args->outputs[i] + (size_t)o * bytes, input, bytes);
            input += bytes;
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_split(const helia_split_args *args)
{
    const helia_status status = helia_split_check(args);
    return status != HELIA_STATUS_OK ? status : helia_split_run(args);
}

/* ---- ARG_MAX, ARG_MIN: the first index of the largest (smallest) code along the axis ---------------- */

helia_status helia_arg_s8_check(const helia_arg_s8_args *args)
{
    int64_t input_count;
    size_t output_bytes;
    if (args == NULL || args->input == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->outer < 1 || args->axis_extent < 1 || args->inner < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if ((args->kind != HELIA_ARG_MAX && args->kind != HELIA_ARG_MIN) ||
        (args->index_bytes != 4 && args->index_bytes != 8)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    input_count = (int64_t)args->outer * args->axis_extent * args->inner;
    if (input_count > INT32_MAX || (int64_t)args->outer * args->inner * args->index_bytes > INT32_MAX) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    output_bytes = (size_t)args->outer * (size_t)args->inner * (size_t)args->index_bytes;
    if (helia_ops_overlap(args->output, output_bytes, args->input, (size_t)input_count)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_arg_s8_run(const helia_arg_s8_args *args)
{
    int32_t o;
    int32_t i;
    int32_t a;
    for (o = 0; o < args->outer; ++o) {
        for (i = 0; i < args->inner; ++i) {
            const int8_t *first = args->input + ((size_t)o * (size_t)args->axis_extent) * (size_t)args->inner + (size_t)i;
            const size_t position = (size_t)o * (size_t)args->inner + (size_t)i;
            int8_t best = first[0];
            int32_t chosen = 0;
            for (a = 1; a < args->axis_extent; ++a) {
                const int8_t value = first[(size_t)a * (size_t)args->inner];
                if (args->kind == HELIA_ARG_MAX ? value > best : value < best) {
                    best = value;
                    chosen = a;
                }
            }
            if (args->index_bytes == 8) {
                const int64_t wide = chosen;
                memcpy((unsigned char *)args->output + position * 8u, &wide, 8u);
            } else {
                memcpy((unsigned char *)args->output + position * 4u, &chosen, 4u);
            }
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_arg_s8(const helia_arg_s8_args *args)
{
    const helia_status status = helia_arg_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_arg_s8_run(args);
}

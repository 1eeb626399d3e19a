/*
 * ops_shape.c - RESHAPE (a byte copy), PAD (a constant border) and
 * CONCATENATION (inputs sharing the output's quantization), for any element
 * size; heliabuild uses them with int8 tensors.
 *
 * C99, no heap, no recursion.
 */
#include <string.h>

#include "helia_ops.h"
#include "helia_ops_internal.h"

/* ---- RESHAPE --------------------------------------------------------------------------------- */

helia_status helia_reshape_check(const void *input, size_t input_bytes, const void *output, size_t output_bytes)
{
    if ((input == NULL && input_bytes != 0u) || (output == NULL && output_bytes != 0u)) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (input_bytes != output_bytes) {
        return HELIA_STATUS_BYTE_LENGTH_MISMATCH;
    }
    if (input != output && helia_ops_overlap(output, output_bytes, input, input_bytes)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_reshape_run(const void *input, size_t input_bytes, void *output, size_t output_bytes)
{
    (void)output_bytes; /* equal to input_bytes: the check passed */
    if (input != output && input_bytes != 0u) {
        memcpy(output, input, input_bytes);
    }
    return HELIA_STATUS_OK;
}

helia_status helia_reshape(const void *input, size_t input_bytes, void *output, size_t output_bytes)
{
    const helia_status status = helia_reshape_check(input, input_bytes, output, output_bytes);
    return status != HELIA_STATUS_OK ? status : helia_reshape_run(input, input_bytes, output, output_bytes);
}

/* ---- PAD ------------------------------------------------------------------------------------- */

static helia_status pad_sizes(const helia_pad_args *args, int32_t *output_dims, int32_t *input_count,
                              int32_t *output_count)
{
    int32_t i;
    helia_status status;
    if (args == NULL || args->input == NULL || args->output == NULL || args->pad_value == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->rank < 1 || args->rank > HELIA_OPS_MAX_RANK) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (args->element_size < 1u || args->element_size > 8u) {
        return HELIA_STATUS_UNSUPPORTED_DTYPE;
    }
    for (i = 0; i < args->rank; ++i) {
        int64_t extent;
        if (args->before[i] < 0 || args->after[i] < 0) {
            return HELIA_STATUS_BAD_PARAMETER;
        }
        extent = (int64_t)args->input_dims[i] + args->before[i] + args->after[i];
        if (extent > INT32_MAX) {
            return HELIA_STATUS_SIZE_OVERFLOW;
        }
        output_dims[i] = (int32_t)extent;
    }
    status = helia_ops_count(args->input_dims, args->rank, input_count);
    if (status == HELIA_STATUS_OK) {
        status = helia_ops_count(output_dims, args->rank, output_count);
    }
    if (status == HELIA_STATUS_OK && (uint64_t)*output_count * args->element_size > (uint64_t)SIZE_MAX / 2u) {
        status = HELIA_STATUS_SIZE_OVERFLOW;
    }
    return status;
}

helia_status helia_pad_check(const helia_pad_args *args)
{
    int32_t output_dims[HELIA_OPS_MAX_RANK];
    int32_t input_count;
    int32_t output_count;
    size_t out_bytes;
    helia_status status = pad_sizes(args, output_dims, &input_count, &output_count);
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    out_bytes = (size_t)output_count * args->element_size;
    if (helia_ops_overlap(args->output, out_bytes, args->input, (size_t)input_count * args->element_size) ||
        helia_ops_overlap(args->output, out_bytes, args->pad_value, args->element_size)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_pad_run(const helia_pad_args *args)
{
    int32_t output_dims[HELIA_OPS_MAX_RANK];
    int32_t index[HELIA_OPS_MAX_RANK];
    int32_t input_count;
    int32_t output_count;
    int32_t i;
    int32_t rows;
    int32_t row;
    const int32_t last = args != NULL ? args->rank - 1 : 0;
    const unsigned char *source;
    unsigned char *destination;
    size_t size;
    size_t inner_bytes;
    (void)pad_sizes(args, output_dims, &input_count, &output_count);
    source = (const unsigned char *)args->input;
    destination = (unsigned char *)args->output;
    size = args->element_size;
    inner_bytes = (size_t)args->input_dims[last] * size;
    rows = output_count / output_dims[last];
    for (i = 0; i < args->rank; ++i) {
        index[i] = 0;
    }
    /* One output row (the last axis) at a time: the border from pad_value, the middle copied. */
    for (row = 0; row < rows; ++row) {
        int inside = 1;
        int32_t k;
        for (i = 0; i < last; ++i) {
            if (index[i] < args->before[i] || index[i] >= args->before[i] + args->input_dims[i]) {
                inside = 0;
            }
        }
        if (inside) {
            for (k = 0; k < args->before[last]; ++k) {
                memcpy(destination + (size_t)k * size, args->pad_value, size);
            }
            memcpy(destination + (size_t)args->before[last] * size, source, inner_bytes);
            source += inner_bytes;
            for (k = args->before[last] + args->input_dims[last]; k < output_dims[last]; ++k) {
                memcpy(destination + (size_t)k * size, args->pad_value, size);
            }
        } else {
            for (k = 0; k < output_dims[last]; ++k) {
                memcpy(destination + (size_t)k * size, args->pad_value, size);
            }
        }
        destination += (size_t)output_dims[last] * size;
        for (i = last - 1; i >= 0; --i) {
            if (++index[i] < output_dims[i]) {
                break;
            }
            index[i] = 0;
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_pad(const helia_pad_args *args)
{
    const helia_status status = helia_pad_check(args);
    return status != HELIA_STATUS_OK ? status : helia_pad_run(args);
}

/* ---- CONCATENATION --------------------------------------------------------------------------- */

helia_status helia_concatenation_check(const helia_concat_args *args)
{
    int64_t axis_total = 0;
    int64_t output_count;
    size_t out_bytes;
    int32_t i;
    if (args == NULL || args->inputs == NULL || args->axis_extents == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->input_count < 1) {
        return HELIA_STATUS_PAIR_COUNT;
    }
    if (args->element_size < 1u || args->element_size > 8u) {
        return HELIA_STATUS_UNSUPPORTED_DTYPE;
    }
    if (args->outer < 1 || args->inner < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    for (i = 0; i < args->input_count; ++i) {
        if (args->inputs[i] == NULL) {
            return HELIA_STATUS_NULL_POINTER;
        }
        if (args->axis_extents[i] < 1) {
            return HELIA_STATUS_BAD_SHAPE;
        }
        axis_total += args->axis_extents[i];
        if (axis_total > INT32_MAX) {
            return HELIA_STATUS_SIZE_OVERFLOW;
        }
    }
    output_count = (int64_t)args->outer * axis_total * args->inner;
    if (output_count > INT32_MAX) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    out_bytes = (size_t)output_count * args->element_size;
    for (i = 0; i < args->input_count; ++i) {
        const size_t in_bytes = (size_t)args->outer * (size_t)args->axis_extents[i] * (size_t)args->inner *
                                args->element_size;
        if (helia_ops_overlap(args->output, out_bytes, args->inputs[i], in_bytes)) {
            return HELIA_STATUS_PARTIAL_OVERLAP;
        }
    }
    if (helia_ops_overlap(args->output, out_bytes, args->inputs, (size_t)args->input_count * sizeof(void *)) ||
        helia_ops_overlap(args->output, out_bytes, args->axis_extents, (size_t)args->input_count * sizeof(int32_t))) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_concatenation_run(const helia_concat_args *args)
{
    int32_t o;
    int32_t i;
    unsigned char *destination;
    destination = (unsigned char *)args->output;
    for (o = 0; o < args->outer; ++o) {
        for (i = 0; i < args->input_count; ++i) {
            const size_t chunk = (size_t)args->axis_extents[i] * (size_t)args->inner * args->element_size;
            memcpy(destination, (const unsigned char *)args->inputs[i] + (size_t)o * chunk, chunk);
            destination += chunk;
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_concatenation(const helia_concat_args *args)
{
    const helia_status status = helia_concatenation_check(args);
    return status != HELIA_STATUS_OK ? status : helia_concatenation_run(args);
}

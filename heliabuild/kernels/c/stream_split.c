/*
 * stream_split.c - the ETHOS_U_STREAM_SPLIT identity copy; contract in stream_split.h.
 */
#include "stream_split.h"

#include <string.h>

size_t helia_stream_split_element_size(int32_t dtype)
{
    switch (dtype) {
    case HELIA_DTYPE_INT8:
    case HELIA_DTYPE_UINT8:
    case HELIA_DTYPE_BOOL:
        return 1u;
    case HELIA_DTYPE_INT16:
    case HELIA_DTYPE_FLOAT16:
        return 2u;
    case HELIA_DTYPE_INT32:
    case HELIA_DTYPE_FLOAT32:
        return 4u;
    case HELIA_DTYPE_INT64:
        return 8u;
    default:
        return 0u;
    }
}

static helia_status check_shape(const helia_tensor_desc *tensor)
{
    int32_t axis;
    if (tensor->rank < 0) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (tensor->rank > 0 && tensor->dims == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    for (axis = 0; axis < tensor->rank; ++axis) {
        if (tensor->dims[axis] < 0) {
            return HELIA_STATUS_BAD_SHAPE;
        }
    }
    return HELIA_STATUS_OK;
}

static int same_shape(const helia_tensor_desc *a, const helia_tensor_desc *b)
{
    int32_t axis;
    if (a->rank != b->rank) {
        return 0;
    }
    for (axis = 0; axis < a->rank; ++axis) {
        if (a->dims[axis] != b->dims[axis]) {
            return 0;
        }
    }
    return 1;
}

/* flat size x element_size into *bytes; 0 when that does not fit size_t. */
static int byte_count(const helia_tensor_desc *tensor, size_t element_size, size_t *bytes)
{
    size_t total = element_size;
    int32_t axis;
    for (axis = 0; axis < tensor->rank; ++axis) {
        if (tensor->dims[axis] == 0) {
            *bytes = 0u;
            return 1;
        }
    }
    for (axis = 0; axis < tensor->rank; ++axis) {
        size_t extent = (size_t)tensor->dims[axis];
        if (total > ((size_t)-1) / extent) {
            return 0;
        }
        total *= extent;
    }
    *bytes = total;
    return 1;
}

static helia_status check_pair(const helia_tensor_desc *in, const helia_tensor_desc *out)
{
    size_t element_size = helia_stream_split_element_size(in->dtype);
    size_t expected = 0u;
    helia_status status;
    if (element_size == 0u || helia_stream_split_element_size(out->dtype) == 0u) {
        return HELIA_STATUS_UNSUPPORTED_DTYPE;
    }
    if (in->dtype != out->dtype) {
        return HELIA_STATUS_DTYPE_MISMATCH;
    }
    status = check_shape(in);
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    status = check_shape(out);
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    if (!same_shape(in, out)) {
        return HELIA_STATUS_SHAPE_MISMATCH;
    }
    if (!byte_count(in, element_size, &expected)) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if (in->byte_length != expected || out->byte_length != expected) {
        return HELIA_STATUS_BYTE_LENGTH_MISMATCH;
    }
    if (expected > 0u && (in->data == NULL || out->data == NULL)) {
        return HELIA_STATUS_NULL_POINTER;
    }
    return HELIA_STATUS_OK;
}

/* Whether the byte ranges of two tensors share a byte; empty ranges share none.
 * Addresses are compared as integers: the ranges need not lie in one object. */
static int overlaps(const helia_tensor_desc *a, const helia_tensor_desc *b)
{
    uintptr_t a_start = (uintptr_t)a->data;
    uintptr_t b_start = (uintptr_t)b->data;
    if (a->byte_length == 0u || b->byte_length == 0u) {
        return 0;
    }
    return a_start < b_start + b->byte_length && b_start < a_start + a->byte_length;
}

static int is_alias(const helia_tensor_desc *in, const helia_tensor_desc *out)
{
    return in->data == out->data;
}

helia_status helia_stream_split_prepare(const helia_tensor_desc *inputs, size_t input_count,
                                        const helia_tensor_desc *outputs, size_t output_count,
                                        size_t *failing_pair)
{
    size_t i;
    size_t j;
    helia_status status;
    if (failing_pair != NULL) {
        *failing_pair = HELIA_NO_PAIR;
    }
    if (input_count != output_count || input_count == 0u) {
        return HELIA_STATUS_PAIR_COUNT;
    }
    if (inputs == NULL || outputs == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    for (i = 0u; i < input_count; ++i) {
        status = check_pair(&inputs[i], &outputs[i]);
        if (status != HELIA_STATUS_OK) {
            if (failing_pair != NULL) {
                *failing_pair = i;
            }
            return status;
        }
    }
    for (i = 0u; i < input_count; ++i) {
        status = HELIA_STATUS_OK;
        if (!is_alias(&inputs[i], &outputs[i]) && overlaps(&inputs[i], &outputs[i])) {
            status = HELIA_STATUS_PARTIAL_OVERLAP;
        }
        for (j = 0u; j < input_count && status == HELIA_STATUS_OK; ++j) {
            if (j != i && (overlaps(&outputs[i], &inputs[j]) || overlaps(&outputs[i], &outputs[j]))) {
                status = HELIA_STATUS_CROSS_PAIR_OVERLAP;
            }
        }
        if (status != HELIA_STATUS_OK) {
            if (failing_pair != NULL) {
                *failing_pair = i;
            }
            return status;
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_stream_split_copy(const helia_tensor_desc *inputs, size_t input_count,
                                     const helia_tensor_desc *outputs, size_t output_count,
                                     size_t *failing_pair)
{
    const helia_status status =
        helia_stream_split_prepare(inputs, input_count, outputs, output_count, failing_pair);
    return status != HELIA_STATUS_OK ? status
                                     : helia_stream_split_run(inputs, input_count, outputs, output_count, failing_pair);
}

helia_status helia_stream_split_run(const helia_tensor_desc *inputs, size_t input_count,
                                    const helia_tensor_desc *outputs, size_t output_count,
                                    size_t *failing_pair)
{
    size_t i;
    (void)output_count; /* equal to input_count: prepare passed */
    if (failing_pair != NULL) {
        *failing_pair = HELIA_NO_PAIR;
    }
    for (i = 0u; i < input_count; ++i) {
        if (inputs[i].byte_length > 0u && !is_alias(&inputs[i], &outputs[i])) {
            memcpy(outputs[i].data, inputs[i].data, inputs[i].byte_length);
        }
    }
    return HELIA_STATUS_OK;
}

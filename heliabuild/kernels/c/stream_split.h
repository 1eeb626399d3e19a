/*
 * stream_split.h - the ETHOS_U_STREAM_SPLIT identity copy (contract version 1).
 *
 * The fence copies N (input, output) pairs. Each pair has the same dtype,
 * shape and byte length on both sides, with byte length = flat size x element
 * size of the dtype; pairs may differ from each other. Supported dtypes are
 * exactly version 1's: int8, uint8, int16, int32, int64, float16, float32 and
 * bool (codes are TFLite TensorType values); anything else is refused.
 *
 * Aliasing: an exact alias within a pair (output data == input data) is a
 * no-op. A pair whose input and output overlap partially, or an output that
 * overlaps another pair's input or output, is refused before any byte moves.
 * Tensors with zero bytes occupy no memory and overlap nothing. Inputs may
 * share bytes with each other (they are only read).
 *
 * Validation order (the first broken rule is reported, with its pair):
 *   1. counts: input_count == output_count >= 1, descriptor arrays non-NULL;
 *   2. for each pair in index order: input dtype supported, output dtype
 *      supported, dtypes equal, input shape valid, output shape valid, shapes
 *      equal, flat size x element size fits size_t, input byte length, output
 *      byte length, non-NULL data where bytes > 0;
 *   3. for each pair i in index order: partial overlap of i's own input and
 *      output, then i's output against every other pair j's input and output.
 *
 * No heap, no floating point, no global state; the kernel is reentrant. Cost
 * of validation is O(N^2) in the number of pairs (no scratch memory is used to
 * sort), plus the bytes copied.
 */
#ifndef HELIA_STREAM_SPLIT_H
#define HELIA_STREAM_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "helia_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TFLite TensorType codes of the dtypes contract version 1 carries. */
#define HELIA_DTYPE_FLOAT32 0
#define HELIA_DTYPE_FLOAT16 1
#define HELIA_DTYPE_INT32 2
#define HELIA_DTYPE_UINT8 3
#define HELIA_DTYPE_INT64 4
#define HELIA_DTYPE_BOOL 6
#define HELIA_DTYPE_INT16 7
#define HELIA_DTYPE_INT8 9

/* Written to *failing_pair when an error concerns no single pair, and on success. */
#define HELIA_NO_PAIR ((size_t)-1)

/* One side of a pair: where its bytes are and the tensor metadata they must match. */
typedef struct helia_tensor_desc {
    void *data;            /* first byte; may be NULL only when byte_length is 0 */
    size_t byte_length;    /* bytes at data */
    const int32_t *dims;   /* rank extents, outermost first; may be NULL when rank is 0 */
    int32_t rank;          /* number of extents; 0 is a scalar */
    int32_t dtype;         /* a HELIA_DTYPE_* (TFLite TensorType) code */
} helia_tensor_desc;

/* Bytes of one element of `dtype`, or 0 when version 1 does not carry it. */
size_t helia_stream_split_element_size(int32_t dtype);

/*
 * Validate the pairs (inputs[i], outputs[i]) for i < count without touching
 * any data. Returns HELIA_STATUS_OK or the first broken rule (see the order
 * above); when failing_pair is not NULL it receives the index of the pair
 * concerned, or HELIA_NO_PAIR.
 */
helia_status helia_stream_split_prepare(const helia_tensor_desc *inputs, size_t input_count,
                                        const helia_tensor_desc *outputs, size_t output_count,
                                        size_t *failing_pair);

/*
 * Validate exactly as helia_stream_split_prepare does, then copy every pair
 * whose output is not its input. On any error no output byte is written.
 */
helia_status helia_stream_split_copy(const helia_tensor_desc *inputs, size_t input_count,
                                     const helia_tensor_desc *outputs, size_t output_count,
                                     size_t *failing_pair);

/*
 * The copy only, trusting that helia_stream_split_prepare accepted these very
 * descriptors (the generated module prepares once at init, where its buffers
 * are fixed, and runs this on every invoke); *failing_pair, when not NULL,
 * receives HELIA_NO_PAIR. Always HELIA_STATUS_OK.
 */
helia_status helia_stream_split_run(const helia_tensor_desc *inputs, size_t input_count,
                                    const helia_tensor_desc *outputs, size_t output_count,
                                    size_t *failing_pair);

#ifdef __cplusplus
}
#endif

#endif /* HELIA_STREAM_SPLIT_H */

/*
 * helia_status.h - status codes returned by heliabuild's portable C kernels.
 *
 * Every kernel entry point returns a helia_status: HELIA_STATUS_OK (zero) on
 * success, otherwise the first rule the request breaks. A kernel that returns
 * an error has not written any output byte. The values are part of the C API
 * and mirror heliabuild.kernels.native.Status; new codes are only appended.
 *
 * C99, no heap, no dependency beyond the standard headers.
 */
#ifndef HELIA_STATUS_H
#define HELIA_STATUS_H

typedef enum helia_status {
    /* Success. */
    HELIA_STATUS_OK = 0,
    /* A required pointer is NULL: a descriptor array, the extents of a
     * tensor of rank above zero, or the data of a tensor with bytes. */
    HELIA_STATUS_NULL_POINTER = 1,
    /* The input and output lists differ in length, or are empty. */
    HELIA_STATUS_PAIR_COUNT = 2,
    /* A dtype outside the kernel's supported list. */
    HELIA_STATUS_UNSUPPORTED_DTYPE = 3,
    /* The two sides of a pair have different dtypes. */
    HELIA_STATUS_DTYPE_MISMATCH = 4,
    /* A negative rank or a negative (unknown) extent. */
    HELIA_STATUS_BAD_SHAPE = 5,
    /* The two sides of a pair have different ranks or extents. */
    HELIA_STATUS_SHAPE_MISMATCH = 6,
    /* flat size x element size does not fit size_t. */
    HELIA_STATUS_SIZE_OVERFLOW = 7,
    /* A byte length other than flat size x element size. */
    HELIA_STATUS_BYTE_LENGTH_MISMATCH = 8,
    /* A pair whose input and output overlap without being the same bytes. */
    HELIA_STATUS_PARTIAL_OVERLAP = 9,
    /* A destination that overlaps another pair's input or output. */
    HELIA_STATUS_CROSS_PAIR_OVERLAP = 10,
    /* A buffer the caller cannot hand to a kernel (bindings only: a
     * non-contiguous or read-only buffer); C kernels never return it. */
    HELIA_STATUS_INVALID_BUFFER = 11,
    /* An operator parameter out of its range: a stride, dilation, padding,
     * zero point, activation bound, multiplier or shift, or float scale. */
    HELIA_STATUS_BAD_PARAMETER = 12
} helia_status;

#endif /* HELIA_STATUS_H */

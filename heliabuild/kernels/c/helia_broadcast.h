/*
 * helia_broadcast.h - walking an output of NumPy-broadcast binary operands in order, for the broadcasting
 * kernels of ops_arith.c and ops_int16.c. Not part of the C API.
 *
 * C99, no heap.
 */
#ifndef HELIA_BROADCAST_H
#define HELIA_BROADCAST_H

#include <stdint.h>

#include "helia_ops.h"
#include "helia_ops_internal.h"

/* counts[0..2] = the element counts of both operands and the output, once the rank is 1..HELIA_OPS_MAX_RANK,
 * every extent >= 1 and each operand axis 1 or the output's (BAD_SHAPE, SIZE_OVERFLOW, SHAPE_MISMATCH). */
static inline helia_status helia_broadcast_check(int32_t rank, const int32_t *dims1, const int32_t *dims2,
                                                 const int32_t *output_dims, int32_t *counts)
{
    int32_t axis;
    helia_status status;
    if (rank < 1 || rank > HELIA_OPS_MAX_RANK) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    status = helia_ops_count(dims1, rank, &counts[0]);
    if (status == HELIA_STATUS_OK) {
        status = helia_ops_count(dims2, rank, &counts[1]);
    }
    if (status == HELIA_STATUS_OK) {
        status = helia_ops_count(output_dims, rank, &counts[2]);
    }
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    for (axis = 0; axis < rank; ++axis) {
        const int32_t a = dims1[axis];
        const int32_t b = dims2[axis];
        const int32_t o = output_dims[axis];
        if ((a != o && a != 1) || (b != o && b != 1) || o != (a > b ? a : b)) {
            return HELIA_STATUS_SHAPE_MISMATCH;
        }
    }
    return HELIA_STATUS_OK;
}

/* The element offsets of both operands at the current output position, advanced like an odometer. */
typedef struct helia_broadcast_walk {
    int32_t rank;
    const int32_t *output_dims;
    int32_t stride1[HELIA_OPS_MAX_RANK];
    int32_t stride2[HELIA_OPS_MAX_RANK];
    int32_t position[HELIA_OPS_MAX_RANK];
    int32_t at1;
    int32_t at2;
    int32_t total;
} helia_broadcast_walk;

/* The walk of extents lists already checked to broadcast (each operand axis 1 or the output's). */
static inline helia_broadcast_walk helia_broadcast_begin(int32_t rank, const int32_t *dims1, const int32_t *dims2,
                                                        const int32_t *output_dims)
{
    helia_broadcast_walk walk;
    int32_t extent1 = 1;
    int32_t extent2 = 1;
    int32_t axis;
    walk.rank = rank;
    walk.output_dims = output_dims;
    walk.at1 = 0;
    walk.at2 = 0;
    walk.total = 1;
    for (axis = rank - 1; axis >= 0; --axis) {
        walk.stride1[axis] = dims1[axis] == 1 ? 0 : extent1; /* 0 where the operand broadcasts */
        walk.stride2[axis] = dims2[axis] == 1 ? 0 : extent2;
        extent1 *= dims1[axis];
        extent2 *= dims2[axis];
        walk.total *= output_dims[axis];
        walk.position[axis] = 0;
    }
    return walk;
}

/* Advances the odometer from `innermost` outwards (rank - 1: the next element; rank - 2: the next innermost row). */
static inline void helia_broadcast_advance(helia_broadcast_walk *walk, int32_t innermost)
{
    int32_t axis;
    for (axis = innermost; axis >= 0; --axis) {
        walk->at1 += walk->stride1[axis];
        walk->at2 += walk->stride2[axis];
        if (++walk->position[axis] < walk->output_dims[axis]) {
            return;
        }
        walk->at1 -= walk->stride1[axis] * walk->position[axis];
        walk->at2 -= walk->stride2[axis] * walk->position[axis];
        walk->position[axis] = 0;
    }
}

static inline void helia_broadcast_next(helia_broadcast_walk *walk)
{
    helia_broadcast_advance(walk, walk->rank - 1);
}

#endif /* HELIA_BROADCAST_H */

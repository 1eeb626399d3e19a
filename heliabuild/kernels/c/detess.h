/*
 * detess.h - Detess: MLA tiled -> contiguous or strided layout conversion.
 *
 * A layout operation, not a cast: every logical INT8 or BF16 scalar of a
 * tiled tensor is written, bit for bit, at its place in a linear (contiguous
 * or strided) view. heliabuild implements the MLA-facing Detess contract;
 * docs/detess.md describes the rules, docs/detess-bf16-layout.md the BF16
 * byte layout of a tile.
 *
 * Two steps, as in the contract:
 *   helia_detess_check_inference(request, &plan)  validates metadata and fills
 *       a plan (owned, immutable metadata; no pointer into the request is kept);
 *   helia_detess_execute(&plan, inputs, 1, outputs, 1)  validates the actual
 *       bindings before any write, then converts synchronously.
 * Both return HELIA_DETESS_OK (0) or the first rule broken; on error nothing is
 * written. The codes equal heliabuild.kernels.detess.ErrorCode and the checks
 * run in the same order as the numpy reference's.
 *
 * Tiled layout (per logical outer slice; unmapped logical axes are outer axes,
 * row-major in logical order): tiles in C/D/H/W order (W fastest), each with
 * its actual (boundary) extents; pixels inside a tile in D/H/W order; a pixel
 * holds pc channels, pc = actual channels (Compact) or that rounded up to 16
 * (PadTo16, per tile). INT8 channel c is byte c of the pixel; BF16 channel c
 * has its low byte at c and its high byte at pc + c (pixel = 2*pc bytes).
 * Each tile's span is rounded up to 16 bytes. The linear side stores a BF16
 * word little-endian (low byte first).
 *
 * Memory: no heap, no tensor-sized intermediate, no threads, no floating
 * point (the caller's FP environment is never touched), no global state:
 * reentrant, and a plan may be shared by concurrent executions on distinct
 * buffers. Every access stays inside [data, data + required bytes).
 *
 * C99; sizes are checked against INT64_MAX and SIZE_MAX.
 */
#ifndef HELIA_DETESS_H
#define HELIA_DETESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HELIA_DETESS_MAX_RANK 6
#define HELIA_DETESS_AXIS_UNMAPPED (-1)
#define HELIA_DETESS_TILE_ALIGNMENT 16

/* Outcomes. Values equal heliabuild.kernels.detess.ErrorCode; new codes are only appended. */
typedef enum helia_detess_status {
    HELIA_DETESS_OK = 0,
    HELIA_DETESS_PORT_COUNT = 1,       /* not one input spec and one output spec */
    HELIA_DETESS_PARAMS = 2,           /* params not empty */
    HELIA_DETESS_DIRECTION = 3,        /* input not MLA tiled, or output not contiguous/strided */
    HELIA_DETESS_DTYPE = 4,            /* a dtype other than INT8 or BF16 */
    HELIA_DETESS_DTYPE_MISMATCH = 5,   /* input and output dtypes differ */
    HELIA_DETESS_RANK = 6,             /* rank outside 1..6 */
    HELIA_DETESS_EXTENT = 7,           /* a negative extent */
    HELIA_DETESS_SHAPE_MISMATCH = 8,   /* logical shapes differ */
    HELIA_DETESS_PADDING = 9,          /* padding other than Compact/PadTo16 (MlaCBlocked included) */
    HELIA_DETESS_AXES = 10,            /* an axis out of range or mapped twice */
    HELIA_DETESS_CHANNEL_AXIS = 11,    /* C unmapped */
    HELIA_DETESS_TILE_SHAPE = 12,      /* tile extent < 1, or != 1 on an unmapped spatial axis */
    HELIA_DETESS_STRIDE_COUNT = 13,    /* (bindings only: strides per rank; never from C) */
    HELIA_DETESS_STRIDE_NEGATIVE = 14, /* a negative stride */
    HELIA_DETESS_STRIDE_ALIGNMENT = 15, /* a stride not a multiple of the scalar width */
    HELIA_DETESS_STRIDE_ZERO = 16,     /* zero stride on an axis of extent > 1 */
    HELIA_DETESS_STRIDE_OVERLAP = 17,  /* the sorted-span proof fails */
    HELIA_DETESS_OVERFLOW = 18,        /* a byte size beyond INT64_MAX or SIZE_MAX */
    HELIA_DETESS_BINDING_COUNT = 19,   /* not one input and one output binding */
    HELIA_DETESS_PLAN = 20,            /* a plan not filled by helia_detess_check_inference */
    HELIA_DETESS_BINDING = 21,         /* a NULL binding array, or NULL data where bytes are needed */
    HELIA_DETESS_CAPACITY = 22,        /* a binding smaller than the plan requires */
    HELIA_DETESS_ALIGNMENT = 23,       /* tiled data not 16-byte aligned, or linear data not scalar aligned */
    HELIA_DETESS_OVERLAP = 24          /* intersecting accessed bounding spans */
} helia_detess_status;

/* Scalar types (values equal heliabuild.kernels.detess.DType). Only INT8 and BF16 are admitted. */
#define HELIA_DETESS_DTYPE_INT8 1
#define HELIA_DETESS_DTYPE_BF16 2
#define HELIA_DETESS_DTYPE_UINT8 3
#define HELIA_DETESS_DTYPE_INT16 4
#define HELIA_DETESS_DTYPE_INT32 5
#define HELIA_DETESS_DTYPE_INT64 6
#define HELIA_DETESS_DTYPE_FP16 7
#define HELIA_DETESS_DTYPE_FP32 8

/* Storage kinds of a tensor spec. */
#define HELIA_DETESS_LAYOUT_CONTIGUOUS 0 /* row-major, dense */
#define HELIA_DETESS_LAYOUT_STRIDED 1    /* explicit byte strides */
#define HELIA_DETESS_LAYOUT_MLA_TILED 2  /* axes, tile_shape, padding */

/* Padding modes of an MLA tiled tensor (values equal heliabuild.kernels.detess.Padding). */
#define HELIA_DETESS_PAD_COMPACT 0
#define HELIA_DETESS_PAD_TO_16 1
#define HELIA_DETESS_PAD_MLA_C_BLOCKED 2 /* rejected */

/* Row paths a plan selects (helia_detess_plan_row_path). */
#define HELIA_DETESS_ROW_CONTIGUOUS_CHANNEL 0
#define HELIA_DETESS_ROW_SCATTERED_CHANNEL 1

/* One port's explicit metadata. */
typedef struct helia_detess_tensor_spec {
    int32_t rank;                              /* 1..HELIA_DETESS_MAX_RANK */
    int32_t dtype;                             /* HELIA_DETESS_DTYPE_* */
    int32_t layout;                            /* HELIA_DETESS_LAYOUT_* */
    int32_t padding;                           /* MLA tiled: HELIA_DETESS_PAD_* */
    int32_t axes[4];                           /* MLA tiled: logical axis of D, H, W, C, or -1 */
    int64_t shape[HELIA_DETESS_MAX_RANK];      /* logical extents, outermost first; rank entries used */
    int64_t tile_shape[4];                     /* MLA tiled: tile extents of D, H, W, C */
    int64_t strides[HELIA_DETESS_MAX_RANK];    /* strided: byte stride of each logical axis */
} helia_detess_tensor_spec;

/* A request: specs in port order and the parameter count (which must be zero). */
typedef struct helia_detess_request {
    const helia_detess_tensor_spec *inputs;
    size_t input_count;
    const helia_detess_tensor_spec *outputs;
    size_t output_count;
    size_t param_count;
} helia_detess_request;

/*
 * A checked plan. Fill it with helia_detess_check_inference only; read it
 * through the accessors. The fields are public so that callers can place a
 * plan anywhere (stack, static storage) without allocation.
 */
typedef struct helia_detess_plan {
    uint32_t magic;
    int32_t dtype;
    int32_t padding;
    int32_t row_path;
    int32_t channel_only;          /* D, H and W all unmapped */
    int32_t outer_rank;
    uint64_t input_bytes;          /* required tiled capacity */
    uint64_t output_bytes;         /* required linear capacity (strided span) */
    uint64_t element_count;
    size_t width;                  /* bytes per scalar */
    size_t outer_extent[HELIA_DETESS_MAX_RANK];
    size_t outer_stride[HELIA_DETESS_MAX_RANK]; /* output byte stride of each outer axis */
    size_t slice_bytes;
    size_t extent[4], tile[4], count[4], full[4], last[4]; /* D, H, W, C */
    size_t out_stride[4];          /* output byte stride of D, H, W, C (0 when unmapped) */
    size_t phys[2];                /* physical channels of a full / the last channel tile */
    size_t f[16], row[8], slab[4], group[2]; /* tile span sums, see detess.c */
} helia_detess_plan;

/* A caller-supplied binding: real accessible storage of `capacity` bytes at `data`. */
typedef struct helia_detess_const_buffer {
    const void *data;
    size_t capacity;
} helia_detess_const_buffer;

typedef struct helia_detess_buffer {
    void *data;
    size_t capacity;
} helia_detess_buffer;

/* Validate `request`'s metadata; on HELIA_DETESS_OK, *plan holds the checked plan. */
helia_detess_status helia_detess_check_inference(const helia_detess_request *request, helia_detess_plan *plan);

/*
 * Convert inputs[0] (tiled) into outputs[0] (linear). Validates, before any
 * write: one binding per port, a checked plan, non-NULL data where bytes are
 * needed, capacities >= the plan's, 16-byte alignment of the tiled data and
 * scalar alignment of the linear data, and disjoint accessed spans
 * [data, data + required). Writes only logical scalars; never writes input.
 */
helia_detess_status helia_detess_execute(const helia_detess_plan *plan, const helia_detess_const_buffer *inputs,
                                         size_t input_count, const helia_detess_buffer *outputs, size_t output_count);

/* Plan accessors (for bindings that treat the plan as opaque storage). */
size_t helia_detess_plan_size(void);
uint64_t helia_detess_plan_input_bytes(const helia_detess_plan *plan);
uint64_t helia_detess_plan_output_bytes(const helia_detess_plan *plan);
size_t helia_detess_plan_input_alignment(const helia_detess_plan *plan);
size_t helia_detess_plan_output_alignment(const helia_detess_plan *plan);
int32_t helia_detess_plan_row_path(const helia_detess_plan *plan);
size_t helia_detess_tensor_spec_size(void);

#ifdef __cplusplus
}
#endif

#endif /* HELIA_DETESS_H */

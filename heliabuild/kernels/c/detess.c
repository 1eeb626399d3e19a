/*
 * detess.c - Detess: MLA tiled -> contiguous or strided (see detess.h and docs/detess.md).
 *
 * Admission mirrors heliabuild/kernels/detess/admission.py rule for rule and
 * in the same order. Execution walks each logical outer slice by spatial
 * tile (D/H/W) and, inside, by channel tile, so the input is read as a few
 * interleaved forward streams and each output pixel is completed while it
 * is in cache. A tile's offset comes from closed-form span sums (only the
 * last tile on an axis can be short), so no per-tile table and no
 * tensor-sized intermediate exist. Channel-only inputs (D, H, W unmapped)
 * skip the spatial loops. Whole-pixel tiles (one channel tile, pixels back
 * to back in the output: C3 images, Compact BF16 C1) are swept by output
 * row across the W tiles instead, one bounded copy per tile row segment.
 * Otherwise the copy routine is chosen once per execution (INT8 or BF16),
 * and per tile between
 *   - contiguous runs: INT8 with unit channel stride, and Compact BF16 C1
 *     whose pixel is already the little-endian word; pixels, rows and slabs
 *     that are back to back on both sides merge into one run; runs are moved
 *     with fixed-size (inlined) 2-32 byte copies, overlapping 16-byte blocks
 *     up to 64 bytes, and the library memcpy beyond 256 bytes;
 *   - BF16 byte join: low and high channel bytes zipped into words, 16 and 8
 *     channels per step (fixed-count loops the compiler vectorizes), C2/C3
 *     pixels by integer shifts or byte moves, then a scalar tail;
 *   - scattered channels: per-scalar byte stores at the channel stride.
 * Every read lies inside the tile's actual pixels and channels, every write at
 * a logical scalar's bytes; padding and strided gaps are never touched.
 */
#include "detess.h"

#include <string.h>

#define PLAN_MAGIC 0x44657453u /* "DetS" */
#define LIMIT ((uint64_t)INT64_MAX)

enum { AXIS_D = 0, AXIS_H = 1, AXIS_W = 2, AXIS_C = 3 };

/* ---- checked arithmetic: every size must stay <= INT64_MAX -------------------------------------- */

static int mul_checked(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > LIMIT / a) {
        return 0;
    }
    *out = a * b;
    return 1;
}

static int add_checked(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a > LIMIT || b > LIMIT - a) {
        return 0;
    }
    *out = a + b;
    return 1;
}

static int round16_checked(uint64_t a, uint64_t *out)
{
    if (a > LIMIT - 15) {
        return 0;
    }
    *out = (a + 15) & ~(uint64_t)15;
    return 1;
}

/* (n - 1) * full + last, checked: the span of a run of n sibling units whose last one may be short. */
static int run_span(uint64_t n, uint64_t full, uint64_t last, uint64_t *out)
{
    uint64_t body;
    return mul_checked(n - 1, full, &body) && add_checked(body, last, out);
}

static int dtype_admitted(int32_t dtype)
{
    return dtype == HELIA_DETESS_DTYPE_INT8 || dtype == HELIA_DETESS_DTYPE_BF16;
}

/* ---- admission ----------------------------------------------------------------------------------- */

static helia_detess_status check_strides(const helia_detess_tensor_spec *spec, uint64_t width, uint64_t *span)
{
    int32_t order[HELIA_DETESS_MAX_RANK];
    int32_t n = 0;
    int32_t i;
    for (i = 0; i < spec->rank; ++i) {
        int64_t stride = spec->strides[i];
        if (stride < 0) {
            return HELIA_DETESS_STRIDE_NEGATIVE;
        }
        if ((uint64_t)stride % width != 0) {
            return HELIA_DETESS_STRIDE_ALIGNMENT;
        }
        if (stride == 0 && spec->shape[i] > 1) {
            return HELIA_DETESS_STRIDE_ZERO;
        }
    }
    /* Sorted-span proof: axes of extent > 1 by (stride, axis); each stride >= the span of those before. */
    for (i = 0; i < spec->rank; ++i) {
        if (spec->shape[i] > 1) {
            int32_t j = n++;
            while (j > 0 && spec->strides[order[j - 1]] > spec->strides[i]) {
                order[j] = order[j - 1];
                --j;
            }
            order[j] = i;
        }
    }
    *span = width;
    for (i = 0; i < n; ++i) {
        uint64_t stride = (uint64_t)spec->strides[order[i]];
        uint64_t reach;
        if (stride < *span) {
            return HELIA_DETESS_STRIDE_OVERLAP;
        }
        if (!mul_checked(stride, (uint64_t)spec->shape[order[i]] - 1, &reach) || !add_checked(*span, reach, span)) {
            return HELIA_DETESS_OVERFLOW;
        }
    }
    return HELIA_DETESS_OK;
}

static uint64_t physical_channels(int32_t padding, uint64_t channels, int *ok)
{
    uint64_t rounded = channels;
    if (padding == HELIA_DETESS_PAD_TO_16 && !round16_checked(channels, &rounded)) {
        *ok = 0;
    }
    return rounded;
}

/* Tile span sums of one slice (see geometry.py): f, row, slab, group and the slice size. */
static helia_detess_status fill_geometry(helia_detess_plan *plan, const uint64_t full[4], const uint64_t last[4],
                                         const uint64_t count[4], uint64_t *slice_bytes)
{
    uint64_t f[16], row[8], slab[4], group[2], phys[2];
    int ok = 1;
    int i;
    phys[0] = physical_channels(plan->padding, full[AXIS_C], &ok);
    phys[1] = physical_channels(plan->padding, last[AXIS_C], &ok);
    for (i = 0; ok && i < 16; ++i) {
        uint64_t lc = (uint64_t)(i >> 3) & 1, ld = (uint64_t)(i >> 2) & 1;
        uint64_t lh = (uint64_t)(i >> 1) & 1, lw = (uint64_t)i & 1;
        uint64_t bytes = ld ? last[AXIS_D] : full[AXIS_D];
        ok = mul_checked(bytes, lh ? last[AXIS_H] : full[AXIS_H], &bytes) &&
             mul_checked(bytes, lw ? last[AXIS_W] : full[AXIS_W], &bytes) &&
             mul_checked(bytes, phys[lc], &bytes) && mul_checked(bytes, plan->width, &bytes) &&
             round16_checked(bytes, &f[i]);
    }
    for (i = 0; ok && i < 8; ++i) {
        ok = run_span(count[AXIS_W], f[2 * i], f[2 * i + 1], &row[i]);
    }
    for (i = 0; ok && i < 4; ++i) {
        ok = run_span(count[AXIS_H], row[2 * i], row[2 * i + 1], &slab[i]);
    }
    for (i = 0; ok && i < 2; ++i) {
        ok = run_span(count[AXIS_D], slab[2 * i], slab[2 * i + 1], &group[i]);
    }
    ok = ok && run_span(count[AXIS_C], group[0], group[1], slice_bytes);
    if (!ok) {
        return HELIA_DETESS_OVERFLOW;
    }
    /* Stored as size_t: each is at most the slice size, which the caller bounds by SIZE_MAX when used. */
    for (i = 0; i < 16; ++i) {
        plan->f[i] = (size_t)f[i];
    }
    for (i = 0; i < 8; ++i) {
        plan->row[i] = (size_t)row[i];
    }
    for (i = 0; i < 4; ++i) {
        plan->slab[i] = (size_t)slab[i];
    }
    plan->group[0] = (size_t)group[0];
    plan->group[1] = (size_t)group[1];
    plan->phys[0] = (size_t)phys[0];
    plan->phys[1] = (size_t)phys[1];
    return HELIA_DETESS_OK;
}

helia_detess_status helia_detess_check_inference(const helia_detess_request *request, helia_detess_plan *plan)
{
    const helia_detess_tensor_spec *in, *out;
    helia_detess_plan p;
    uint64_t width, full[4], last[4], count[4], slice_bytes = 0, input_bytes, output_bytes, elements = 1;
    uint64_t strides[HELIA_DETESS_MAX_RANK];
    int32_t i, a;
    int empty = 0;
    helia_detess_status status;

    if (plan == NULL) {
        return HELIA_DETESS_PLAN;
    }
    if (request == NULL || request->input_count != 1 || request->output_count != 1 || request->inputs == NULL ||
        request->outputs == NULL) {
        return HELIA_DETESS_PORT_COUNT;
    }
    if (request->param_count != 0) {
        return HELIA_DETESS_PARAMS;
    }
    in = &request->inputs[0];
    out = &request->outputs[0];
    if (in->layout != HELIA_DETESS_LAYOUT_MLA_TILED) {
        return HELIA_DETESS_DIRECTION;
    }
    if (out->layout != HELIA_DETESS_LAYOUT_CONTIGUOUS && out->layout != HELIA_DETESS_LAYOUT_STRIDED) {
        return HELIA_DETESS_DIRECTION;
    }
    if (!dtype_admitted(in->dtype) || !dtype_admitted(out->dtype)) {
        return HELIA_DETESS_DTYPE;
    }
    if (in->dtype != out->dtype) {
        return HELIA_DETESS_DTYPE_MISMATCH;
    }
    if (in->rank < 1 || in->rank > HELIA_DETESS_MAX_RANK || out->rank < 1 || out->rank > HELIA_DETESS_MAX_RANK) {
        return HELIA_DETESS_RANK;
    }
    for (i = 0; i < in->rank; ++i) {
        if (in->shape[i] < 0) {
            return HELIA_DETESS_EXTENT;
        }
    }
    for (i = 0; i < out->rank; ++i) {
        if (out->shape[i] < 0) {
            return HELIA_DETESS_EXTENT;
        }
    }
    if (in->rank != out->rank) {
        return HELIA_DETESS_SHAPE_MISMATCH;
    }
    for (i = 0; i < in->rank; ++i) {
        if (in->shape[i] != out->shape[i]) {
            return HELIA_DETESS_SHAPE_MISMATCH;
        }
        empty |= in->shape[i] == 0;
    }
    if (in->padding != HELIA_DETESS_PAD_COMPACT && in->padding != HELIA_DETESS_PAD_TO_16) {
        return HELIA_DETESS_PADDING;
    }
    for (a = 0; a < 4; ++a) {
        if (in->axes[a] < HELIA_DETESS_AXIS_UNMAPPED || in->axes[a] >= in->rank) {
            return HELIA_DETESS_AXES;
        }
    }
    for (a = 0; a < 4; ++a) {
        int32_t b;
        for (b = a + 1; b < 4; ++b) {
            if (in->axes[a] != HELIA_DETESS_AXIS_UNMAPPED && in->axes[a] == in->axes[b]) {
                return HELIA_DETESS_AXES;
            }
        }
    }
    if (in->axes[AXIS_C] == HELIA_DETESS_AXIS_UNMAPPED) {
        return HELIA_DETESS_CHANNEL_AXIS;
    }
    for (a = 0; a < 4; ++a) {
        if (in->tile_shape[a] < 1 || (in->axes[a] == HELIA_DETESS_AXIS_UNMAPPED && in->tile_shape[a] != 1)) {
            return HELIA_DETESS_TILE_SHAPE;
        }
    }

    memset(&p, 0, sizeof p);
    p.dtype = in->dtype;
    p.padding = in->padding;
    width = in->dtype == HELIA_DETESS_DTYPE_BF16 ? 2u : 1u;
    p.width = (size_t)width;

    if (out->layout == HELIA_DETESS_LAYOUT_STRIDED) {
        uint64_t span;
        status = check_strides(out, width, &span);
        if (status != HELIA_DETESS_OK) {
            return status;
        }
        for (i = 0; i < out->rank; ++i) {
            strides[i] = (uint64_t)out->strides[i];
        }
        output_bytes = empty ? 0 : span;
    } else {
        /* Row-major over max(extent, 1), saturating: only an empty tensor can saturate (a nonempty one's
         * count x width is checked below), and then only the row path reads the strides. */
        uint64_t step = width;
        for (i = out->rank; i-- > 0;) {
            uint64_t extent = out->shape[i] > 1 ? (uint64_t)out->shape[i] : 1u;
            strides[i] = step;
            step = step > UINT64_MAX / extent ? UINT64_MAX : step * extent;
        }
        output_bytes = 0; /* computed after the tiled capacity, as the reference does */
    }

    /* Tile geometry. */
    for (a = 0; a < 4; ++a) {
        int32_t axis = in->axes[a];
        uint64_t extent = axis == HELIA_DETESS_AXIS_UNMAPPED ? 1u : (uint64_t)in->shape[axis];
        uint64_t tile = (uint64_t)in->tile_shape[a];
        count[a] = extent == 0 ? 0 : (extent - 1) / tile + 1;
        last[a] = count[a] == 0 ? 0 : extent - (count[a] - 1) * tile;
        full[a] = tile < extent ? tile : extent;
    }
    if (count[0] && count[1] && count[2] && count[3]) {
        status = fill_geometry(&p, full, last, count, &slice_bytes);
        if (status != HELIA_DETESS_OK) {
            return status;
        }
    }
    input_bytes = 0;
    if (!empty && slice_bytes != 0) {
        input_bytes = slice_bytes;
        for (i = 0; i < in->rank; ++i) {
            int outer = 1;
            for (a = 0; a < 4; ++a) {
                outer &= in->axes[a] != i;
            }
            if (outer && !mul_checked(input_bytes, (uint64_t)in->shape[i], &input_bytes)) {
                return HELIA_DETESS_OVERFLOW;
            }
        }
    }
    if (!empty) {
        for (i = 0; i < in->rank; ++i) {
            if (!mul_checked(elements, (uint64_t)in->shape[i], &elements)) {
                return HELIA_DETESS_OVERFLOW;
            }
        }
        if (out->layout == HELIA_DETESS_LAYOUT_CONTIGUOUS && !mul_checked(elements, width, &output_bytes)) {
            return HELIA_DETESS_OVERFLOW;
        }
    } else {
        elements = 0;
    }
#if SIZE_MAX < UINT64_MAX
    /* A 32-bit target: every byte offset used at run time must also fit size_t (slice <= capacity). */
    if (input_bytes > (uint64_t)SIZE_MAX || output_bytes > (uint64_t)SIZE_MAX) {
        return HELIA_DETESS_OVERFLOW;
    }
#endif

    /* Runtime metadata (only used when the tensor is nonempty, where every value is below SIZE_MAX). */
    p.input_bytes = input_bytes;
    p.output_bytes = output_bytes;
    p.element_count = elements;
    p.slice_bytes = (size_t)slice_bytes;
    p.channel_only = 1;
    for (a = 0; a < 4; ++a) {
        int32_t axis = in->axes[a];
        p.extent[a] = axis == HELIA_DETESS_AXIS_UNMAPPED ? 1u : (size_t)in->shape[axis];
        p.count[a] = (size_t)count[a];
        p.full[a] = (size_t)full[a];
        p.last[a] = (size_t)last[a];
        p.out_stride[a] = axis == HELIA_DETESS_AXIS_UNMAPPED || in->shape[axis] <= 1 ? 0u : (size_t)strides[axis];
        if (a != AXIS_C && axis != HELIA_DETESS_AXIS_UNMAPPED) {
            p.channel_only = 0;
        }
    }
    p.row_path = strides[in->axes[AXIS_C]] == width ? HELIA_DETESS_ROW_CONTIGUOUS_CHANNEL
                                                      : HELIA_DETESS_ROW_SCATTERED_CHANNEL;
    p.outer_rank = 0;
    for (i = 0; i < in->rank; ++i) {
        int outer = 1;
        for (a = 0; a < 4; ++a) {
            outer &= in->axes[a] != i;
        }
        if (outer) {
            p.outer_extent[p.outer_rank] = (size_t)in->shape[i];
            p.outer_stride[p.outer_rank] = in->shape[i] <= 1 ? 0u : (size_t)strides[i];
            ++p.outer_rank;
        }
    }
    p.magic = PLAN_MAGIC;
    *plan = p;
    return HELIA_DETESS_OK;
}

/* ---- execution ------------------------------------------------------------------------------------ */

/* One tile's actual extents (pixels d/h/w, channels c) and physical channel count. */
typedef struct tile_dims {
    size_t d, h, w, c, pc;
} tile_dims;

typedef void (*tile_copy)(const uint8_t *src, uint8_t *dst, const helia_detess_plan *p, const tile_dims *t);

/*
 * Copy n bytes with fixed-size (inlined) moves: 16-byte blocks and an overlapping last block, or two
 * overlapping 8-/4-byte moves, or single bytes. An overlapping move rewrites bytes of the same run with the
 * same values, so only the run's own bytes are read and written. Long runs go to the library memcpy.
 */
static void copy_bytes(uint8_t *restrict dst, const uint8_t *restrict src, size_t n)
{
    if (n > 256) {
        memcpy(dst, src, n);
    } else if (n >= 16) {
        size_t i;
        for (i = 0; i + 16 <= n; i += 16) {
            memcpy(dst + i, src + i, 16);
        }
        if (i < n) {
            memcpy(dst + n - 16, src + n - 16, 16);
        }
    } else if (n >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        size_t i;
        for (i = 0; i < n; ++i) {
            dst[i] = src[i];
        }
    }
}

/* `rows` runs of `run` bytes: the bounded copies of the contiguous paths (common sizes unrolled). */
static void copy_rows(uint8_t *dst, size_t dst_step, const uint8_t *src, size_t src_step, size_t rows, size_t run)
{
    size_t r;
    switch (run) {
    case 2:
        for (r = 0; r < rows; ++r, dst += dst_step, src += src_step) {
            memcpy(dst, src, 2);
        }
        break;
    case 4:
        for (r = 0; r < rows; ++r, dst += dst_step, src += src_step) {
            memcpy(dst, src, 4);
        }
        break;
    case 8:
        for (r = 0; r < rows; ++r, dst += dst_step, src += src_step) {
            memcpy(dst, src, 8);
        }
        break;
    case 16:
        for (r = 0; r < rows; ++r, dst += dst_step, src += src_step) {
            memcpy(dst, src, 16);
        }
        break;
    case 32:
        for (r = 0; r < rows; ++r, dst += dst_step, src += src_step) {
            memcpy(dst, src, 32);
        }
        break;
    default:
        if (run > 16 && run <= 64) {
            /* 16-byte blocks, the last one ending at the run's end (overlapping the previous one). */
            const size_t tail = run - 16;
            for (r = 0; r < rows; ++r, dst += dst_step, src += src_step) {
                memcpy(dst, src, 16);
                if (run > 32) {
                    memcpy(dst + 16, src + 16, 16);
                }
                if (run > 48) {
                    memcpy(dst + 32, src + 32, 16);
                }
                memcpy(dst + tail, src + tail, 16);
            }
        } else {
            for (r = 0; r < rows; ++r, dst += dst_step, src += src_step) {
                copy_bytes(dst, src, run);
            }
        }
        break;
    }
}

/*
 * A tile whose pixels are contiguous runs of `run` bytes on both sides (pixel stride `pixel` bytes in the
 * tile): merge W, then H, then D into the run while the pixels are back to back in the tile and in the
 * output; the first axis that does not merge becomes the rows of copy_rows, the ones above it loops.
 */
static void copy_tile_runs(const uint8_t *src, uint8_t *dst, const helia_detess_plan *p, const tile_dims *t,
                           size_t run, size_t pixel)
{
    size_t n[3], dst_step[3], src_step[3], k = 0, i, j;
    n[0] = t->w;
    n[1] = t->h;
    n[2] = t->d;
    dst_step[0] = p->out_stride[AXIS_W];
    dst_step[1] = p->out_stride[AXIS_H];
    dst_step[2] = p->out_stride[AXIS_D];
    src_step[0] = pixel;
    src_step[1] = t->w * pixel;
    src_step[2] = t->h * src_step[1];
    while (k < 3 && (n[k] == 1 || (src_step[k] == run && dst_step[k] == run))) {
        run *= n[k];
        ++k;
    }
    if (k == 3) {
        copy_rows(dst, 0, src, 0, 1, run);
    } else if (k == 2) {
        copy_rows(dst, dst_step[2], src, src_step[2], n[2], run);
    } else if (k == 1) {
        for (i = 0; i < n[2]; ++i) {
            copy_rows(dst + i * dst_step[2], dst_step[1], src + i * src_step[2], src_step[1], n[1], run);
        }
    } else {
        for (i = 0; i < n[2]; ++i) {
            for (j = 0; j < n[1]; ++j) {
                copy_rows(dst + i * dst_step[2] + j * dst_step[1], dst_step[0],
                          src + i * src_step[2] + j * src_step[1], src_step[0], n[0], run);
            }
        }
    }
}

static void int8_scattered_row(const uint8_t *src, uint8_t *dst, size_t channels, size_t stride)
{
    size_t c;
    for (c = 0; c < channels; ++c) {
        dst[c * stride] = src[c];
    }
}

/*
 * Scattered channels whose stride exceeds the innermost pixel stride (e.g. a CHW view of HWC tiles):
 * channel-major within the tile, so consecutive stores follow the pixel stride instead of jumping by the
 * channel stride each time. Reads stay inside the tile (which is in cache).
 */
static int channel_major(const helia_detess_plan *p, const tile_dims *t)
{
    size_t inner = t->w > 1 ? p->out_stride[AXIS_W] : t->h > 1 ? p->out_stride[AXIS_H] : p->out_stride[AXIS_D];
    return p->out_stride[AXIS_C] > inner;
}

static void int8_tile(const uint8_t *src, uint8_t *dst, const helia_detess_plan *p, const tile_dims *t)
{
    size_t sc = p->out_stride[AXIS_C], sw = p->out_stride[AXIS_W], sh = p->out_stride[AXIS_H];
    size_t sd = p->out_stride[AXIS_D], d, h, w, c;
    if (sc == 1 || t->c == 1) {
        copy_tile_runs(src, dst, p, t, t->c, t->pc);
    } else if (channel_major(p, t)) {
        for (c = 0; c < t->c; ++c) {
            const uint8_t *from = src + c;
            for (d = 0; d < t->d; ++d) {
                for (h = 0; h < t->h; ++h) {
                    uint8_t *row = dst + c * sc + d * sd + h * sh;
                    for (w = 0; w < t->w; ++w, from += t->pc) {
                        row[w * sw] = *from;
                    }
                }
            }
        }
    } else {
        for (d = 0; d < t->d; ++d) {
            for (h = 0; h < t->h; ++h) {
                uint8_t *row = dst + d * sd + h * sh;
                for (w = 0; w < t->w; ++w, src += t->pc) {
                    int8_scattered_row(src, row + w * sw, t->c, sc);
                }
            }
        }
    }
}

#if defined(__ARM_FEATURE_MVE) && !defined(__ARM_BIG_ENDIAN)
/*
 * Cortex-M55 (MVE): GCC 12 vectorizes the portable loops below into vst20/vst21 with a register
 * post-increment, which MVE does not encode (the assembler rejects it). These targets join with 64-bit
 * integer shifts instead: byte i of x moves to byte 2i of spread(x), four channels per half.
 */
static uint64_t spread_bytes(uint32_t x)
{
    uint64_t v = x;
    v = (v | (v << 16)) & UINT64_C(0x0000FFFF0000FFFF);
    v = (v | (v << 8)) & UINT64_C(0x00FF00FF00FF00FF);
    return v;
}

static void bf16_join8(uint8_t *restrict dst, const uint8_t *restrict lo, const uint8_t *restrict hi)
{
    uint64_t l, h, w0, w1;
    memcpy(&l, lo, 8);
    memcpy(&h, hi, 8);
    w0 = spread_bytes((uint32_t)l) | (spread_bytes((uint32_t)h) << 8);
    w1 = spread_bytes((uint32_t)(l >> 32)) | (spread_bytes((uint32_t)(h >> 32)) << 8);
    memcpy(dst, &w0, 8);
    memcpy(dst + 8, &w1, 8);
}

static void bf16_join16(uint8_t *restrict dst, const uint8_t *restrict lo, const uint8_t *restrict hi)
{
    bf16_join8(dst, lo, hi);
    bf16_join8(dst + 16, lo + 8, hi + 8);
}
#else
/* 16 and 8 channels: fixed trip counts over restrict pointers, which compilers turn into byte zips. */
static void bf16_join16(uint8_t *restrict dst, const uint8_t *restrict lo, const uint8_t *restrict hi)
{
    size_t c;
    for (c = 0; c < 16; ++c) {
        dst[2 * c] = lo[c];
        dst[2 * c + 1] = hi[c];
    }
}

static void bf16_join8(uint8_t *restrict dst, const uint8_t *restrict lo, const uint8_t *restrict hi)
{
    size_t c;
    for (c = 0; c < 8; ++c) {
        dst[2 * c] = lo[c];
        dst[2 * c + 1] = hi[c];
    }
}
#endif

/* Join `channels` low bytes at lo[] and high bytes at hi[] into little-endian words at dst (contiguous). */
static void bf16_join_row(uint8_t *restrict dst, const uint8_t *lo, const uint8_t *hi, size_t channels)
{
    size_t c = 0;
    for (; c + 16 <= channels; c += 16) {
        bf16_join16(dst + 2 * c, lo + c, hi + c);
    }
    if (c + 8 <= channels) {
        bf16_join8(dst + 2 * c, lo + c, hi + c);
        c += 8;
    }
    for (; c < channels; ++c) {
        dst[2 * c] = lo[c];
        dst[2 * c + 1] = hi[c];
    }
}

/*
 * C2 and C3 pixels ([l0 l1 h0 h1], [l0 l1 l2 h0 h1 h2]) are too short for a vector: C2 is joined with
 * shifts and masks in one 32-bit integer (byte order fixed by explicit shifts, not by the host), C3 with
 * six byte moves (measured faster on the host than a 64-bit shift-and-mask join).
 */
static void bf16_join_c2(uint8_t *dst, const uint8_t *src)
{
    uint32_t x = (uint32_t)src[0] | (uint32_t)src[1] << 8 | (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
    uint32_t y = (x & UINT32_C(0xFF0000FF)) | ((x >> 8) & UINT32_C(0x0000FF00)) | ((x << 8) & UINT32_C(0x00FF0000));
    dst[0] = (uint8_t)y;
    dst[1] = (uint8_t)(y >> 8);
    dst[2] = (uint8_t)(y >> 16);
    dst[3] = (uint8_t)(y >> 24);
}

static void bf16_join_c3(uint8_t *dst, const uint8_t *src)
{
    dst[0] = src[0];
    dst[1] = src[3];
    dst[2] = src[1];
    dst[3] = src[4];
    dst[4] = src[2];
    dst[5] = src[5];
}

static void bf16_scattered_row(uint8_t *dst, const uint8_t *lo, const uint8_t *hi, size_t channels, size_t stride)
{
    size_t c;
    for (c = 0; c < channels; ++c) {
        dst[c * stride] = lo[c];
        dst[c * stride + 1] = hi[c];
    }
}

static void bf16_tile(const uint8_t *src, uint8_t *dst, const helia_detess_plan *p, const tile_dims *t)
{
    size_t sc = p->out_stride[AXIS_C], sw = p->out_stride[AXIS_W], sh = p->out_stride[AXIS_H];
    size_t sd = p->out_stride[AXIS_D], pixel = 2 * t->pc, d, h, w;
    if (t->pc == 1) {
        /* Compact C1: the pixel [low, high] is the little-endian word itself; copy directly. */
        copy_tile_runs(src, dst, p, t, 2, 2);
        return;
    }
    if (sc != 2 && t->c > 1 && channel_major(p, t)) {
        size_t c;
        for (c = 0; c < t->c; ++c) {
            const uint8_t *from = src + c;
            for (d = 0; d < t->d; ++d) {
                for (h = 0; h < t->h; ++h) {
                    uint8_t *row = dst + c * sc + d * sd + h * sh;
                    for (w = 0; w < t->w; ++w, from += pixel) {
                        row[w * sw] = from[0];
                        row[w * sw + 1] = from[t->pc];
                    }
                }
            }
        }
        return;
    }
    for (d = 0; d < t->d; ++d) {
        for (h = 0; h < t->h; ++h) {
            uint8_t *row = dst + d * sd + h * sh;
            if (sc == 2 || t->c == 1) {
                if (t->pc == 2 && t->c == 2) {
                    for (w = 0; w < t->w; ++w, src += pixel) {
                        bf16_join_c2(row + w * sw, src);
                    }
                } else if (t->pc == 3 && t->c == 3) {
                    for (w = 0; w < t->w; ++w, src += pixel) {
                        bf16_join_c3(row + w * sw, src);
                    }
                } else if (t->c == 16) {
                    for (w = 0; w < t->w; ++w, src += pixel) {
                        bf16_join16(row + w * sw, src, src + t->pc);
                    }
                } else {
                    for (w = 0; w < t->w; ++w, src += pixel) {
                        bf16_join_row(row + w * sw, src, src + t->pc, t->c);
                    }
                }
            } else {
                for (w = 0; w < t->w; ++w, src += pixel) {
                    bf16_scattered_row(row + w * sw, src, src + t->pc, t->c, sc);
                }
            }
        }
    }
}

/*
 * Whole-pixel rows: one channel tile holding every channel, each pixel a contiguous run of `pixel` bytes
 * in the tile and in the output, and pixels back to back in the output (W stride == pixel). Then a tile's
 * pixel row is one run and the runs of consecutive W tiles are evenly spaced on both sides. Holds for INT8
 * with unit (or irrelevant) channel stride and no channel padding, and for Compact BF16 C1.
 */
static size_t sweep_pixel_bytes(const helia_detess_plan *p)
{
    size_t pixel;
    if (p->count[AXIS_C] != 1 || p->channel_only) {
        return 0;
    }
    if (p->dtype == HELIA_DETESS_DTYPE_BF16) {
        if (p->phys[1] != 1) {
            return 0;
        }
        pixel = 2;
    } else {
        if (p->phys[1] != p->last[AXIS_C] || (p->out_stride[AXIS_C] != 1 && p->last[AXIS_C] != 1)) {
            return 0;
        }
        pixel = p->last[AXIS_C];
    }
    return p->out_stride[AXIS_W] == pixel ? pixel : 0;
}

/*
 * One outer slice of whole-pixel rows, swept in output order: for each output row of a tile row, the row
 * segments of all its W tiles, so the output is written front to back (one store stream) while the
 * tile row's input (a few hundred KB at most for realistic tiles) is revisited from cache.
 */
static void sweep_slice(const uint8_t *src, uint8_t *dst, const helia_detess_plan *p, size_t pixel)
{
    const size_t nd = p->count[AXIS_D], nh = p->count[AXIS_H], nw = p->count[AXIS_W];
    const size_t sd = p->out_stride[AXIS_D], sh = p->out_stride[AXIS_H];
    const size_t run = p->full[AXIS_W] * pixel, last_run = p->last[AXIS_W] * pixel;
    const size_t dst_step = p->full[AXIS_W] * p->out_stride[AXIS_W];
    size_t kd, kh, id, ih;
    for (kd = 0; kd < nd; ++kd) {
        const size_t ld = kd + 1 == nd, ad = ld ? p->last[AXIS_D] : p->full[AXIS_D];
        for (kh = 0; kh < nh; ++kh) {
            const size_t lh = kh + 1 == nh, ah = lh ? p->last[AXIS_H] : p->full[AXIS_H];
            const size_t index = ((2 + ld) * 2 + lh) * 2; /* lc = 1: the only channel tile is the last */
            const uint8_t *tiles = src + kd * p->slab[2] + kh * p->row[(2 + ld) * 2];
            uint8_t *rows = dst + kd * p->full[AXIS_D] * sd + kh * p->full[AXIS_H] * sh;
            for (id = 0; id < ad; ++id) {
                for (ih = 0; ih < ah; ++ih) {
                    const size_t pixel_row = id * ah + ih;
                    uint8_t *out = rows + id * sd + ih * sh;
                    copy_rows(out, dst_step, tiles + pixel_row * run, p->f[index], nw - 1, run);
                    copy_bytes(out + (nw - 1) * dst_step, tiles + (nw - 1) * p->f[index] + pixel_row * last_run,
                               last_run);
                }
            }
        }
    }
}

/*
 * One outer slice. Channel-only inputs walk the channel tiles (one pixel each). Otherwise the spatial
 * tiles are visited in D/H/W order and, for each, its channel tiles: the input is read as nc interleaved
 * forward streams, and each output pixel's channels are completed while its lines are still in cache.
 */
static void run_slice(const uint8_t *src, uint8_t *dst, const helia_detess_plan *p, tile_copy copy)
{
    const size_t nc = p->count[AXIS_C], nd = p->count[AXIS_D], nh = p->count[AXIS_H], nw = p->count[AXIS_W];
    const size_t step_c = p->full[AXIS_C] * p->out_stride[AXIS_C], step_d = p->full[AXIS_D] * p->out_stride[AXIS_D];
    const size_t step_h = p->full[AXIS_H] * p->out_stride[AXIS_H], step_w = p->full[AXIS_W] * p->out_stride[AXIS_W];
    size_t kc, kd, kh, kw;
    tile_dims t;
    if (p->channel_only) {
        t.d = t.h = t.w = 1;
        for (kc = 0; kc < nc; ++kc) {
            const size_t lc = kc + 1 == nc;
            t.c = lc ? p->last[AXIS_C] : p->full[AXIS_C];
            t.pc = p->phys[lc];
            copy(src + kc * p->group[0], dst + kc * step_c, p, &t);
        }
        return;
    }
    for (kd = 0; kd < nd; ++kd) {
        const size_t ld = kd + 1 == nd;
        t.d = ld ? p->last[AXIS_D] : p->full[AXIS_D];
        for (kh = 0; kh < nh; ++kh) {
            const size_t lh = kh + 1 == nh;
            t.h = lh ? p->last[AXIS_H] : p->full[AXIS_H];
            for (kw = 0; kw < nw; ++kw) {
                uint8_t *dst_t = dst + kd * step_d + kh * step_h + kw * step_w;
                t.w = kw + 1 == nw ? p->last[AXIS_W] : p->full[AXIS_W];
                for (kc = 0; kc < nc; ++kc) {
                    const size_t lc = kc + 1 == nc;
                    const size_t offset = kc * p->group[0] + kd * p->slab[lc * 2] + kh * p->row[(lc * 2 + ld) * 2] +
                                          kw * p->f[((lc * 2 + ld) * 2 + lh) * 2];
                    t.c = lc ? p->last[AXIS_C] : p->full[AXIS_C];
                    t.pc = p->phys[lc];
                    copy(src + offset, dst_t + kc * step_c, p, &t);
                }
            }
        }
    }
}

helia_detess_status helia_detess_execute(const helia_detess_plan *plan, const helia_detess_const_buffer *inputs,
                                         size_t input_count, const helia_detess_buffer *outputs, size_t output_count)
{
    const uint8_t *src;
    uint8_t *dst;
    size_t index[HELIA_DETESS_MAX_RANK] = {0};
    size_t slices = 1, s, offset = 0, sweep;
    int32_t k;
    uintptr_t in_start, out_start;
    tile_copy copy;

    if (input_count != 1 || output_count != 1) {
        return HELIA_DETESS_BINDING_COUNT;
    }
    if (plan == NULL || plan->magic != PLAN_MAGIC) {
        return HELIA_DETESS_PLAN;
    }
    if (inputs == NULL || outputs == NULL || (plan->input_bytes != 0 && inputs[0].data == NULL) ||
        (plan->output_bytes != 0 && outputs[0].data == NULL)) {
        return HELIA_DETESS_BINDING;
    }
    if ((uint64_t)inputs[0].capacity < plan->input_bytes || (uint64_t)outputs[0].capacity < plan->output_bytes) {
        return HELIA_DETESS_CAPACITY;
    }
    in_start = (uintptr_t)inputs[0].data;
    out_start = (uintptr_t)outputs[0].data;
    if ((plan->input_bytes != 0 && in_start % HELIA_DETESS_TILE_ALIGNMENT != 0) ||
        (plan->output_bytes != 0 && out_start % plan->width != 0)) {
        return HELIA_DETESS_ALIGNMENT;
    }
    if (plan->input_bytes != 0 && plan->output_bytes != 0 && in_start < out_start + (size_t)plan->output_bytes &&
        out_start < in_start + (size_t)plan->input_bytes) {
        return HELIA_DETESS_OVERLAP;
    }
    if (plan->element_count == 0) {
        return HELIA_DETESS_OK;
    }

    src = (const uint8_t *)inputs[0].data;
    dst = (uint8_t *)outputs[0].data;
    copy = plan->dtype == HELIA_DETESS_DTYPE_BF16 ? bf16_tile : int8_tile;
    sweep = sweep_pixel_bytes(plan);
    for (k = 0; k < plan->outer_rank; ++k) {
        slices *= plan->outer_extent[k];
    }
    for (s = 0; s < slices; ++s) {
        if (sweep) {
            sweep_slice(src + s * plan->slice_bytes, dst + offset, plan, sweep);
        } else {
            run_slice(src + s * plan->slice_bytes, dst + offset, plan, copy);
        }
        for (k = plan->outer_rank; k-- > 0;) {
            offset += plan->outer_stride[k];
            if (++index[k] < plan->outer_extent[k]) {
                break;
            }
            offset -= plan->outer_stride[k] * plan->outer_extent[k];
            index[k] = 0;
        }
    }
    return HELIA_DETESS_OK;
}

/* ---- accessors ------------------------------------------------------------------------------------ */

size_t helia_detess_plan_size(void)
{
    return sizeof(helia_detess_plan);
}

size_t helia_detess_tensor_spec_size(void)
{
    return sizeof(helia_detess_tensor_spec);
}

uint64_t helia_detess_plan_input_bytes(const helia_detess_plan *plan)
{
    return plan->input_bytes;
}

uint64_t helia_detess_plan_output_bytes(const helia_detess_plan *plan)
{
    return plan->output_bytes;
}

size_t helia_detess_plan_input_alignment(const helia_detess_plan *plan)
{
    (void)plan;
    return HELIA_DETESS_TILE_ALIGNMENT;
}

size_t helia_detess_plan_output_alignment(const helia_detess_plan *plan)
{
    return plan->width;
}

int32_t helia_detess_plan_row_path(const helia_detess_plan *plan)
{
    return plan->row_path;
}

/*
 * helia_module.h - the tensor descriptor of an exported heliabuild module
 * (docs/module.md, "The API"). Every module's public header includes it, so
 * one translation unit can include the headers of several modules.
 *
 * C99, no heap.
 */
#ifndef HELIA_MODULE_H
#define HELIA_MODULE_H

#include <stdint.h>

/* TFLite TensorType codes (the dtype field). */
#define HELIA_MODULE_DTYPE_FLOAT32 0
#define HELIA_MODULE_DTYPE_FLOAT16 1
#define HELIA_MODULE_DTYPE_INT32 2
#define HELIA_MODULE_DTYPE_UINT8 3
#define HELIA_MODULE_DTYPE_INT64 4
#define HELIA_MODULE_DTYPE_BOOL 6
#define HELIA_MODULE_DTYPE_INT16 7
#define HELIA_MODULE_DTYPE_INT8 9

/* One input or output of a model: where its bytes are (in the arena) and
 * what they mean. real = scale * (q - zero_point); a tensor without
 * quantization has scale 0 and zero point 0. */
typedef struct helia_tensor_info {
    const char *name;       /* the model's tensor name */
    uint8_t *data;          /* its first byte, inside the arena */
    uint32_t bytes;         /* element count x element size */
    int32_t dtype;          /* a HELIA_MODULE_DTYPE_* code */
    uint32_t rank;
    const int32_t *shape;   /* rank extents, outermost first */
    float scale;
    int32_t zero_point;
} helia_tensor_info;

#endif /* HELIA_MODULE_H */

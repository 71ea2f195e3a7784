// A test kernel for expand-macros and row-loop: out[r, c] = x[r, c] * scale[r] + bias[c], four rows per
// work-group of 128, the four rows walked as one flattened range; the body is a macro (one body, two
// element types), as production files write several dtypes' kernels.
#define SCALE_ROWS(LOAD, STORE)                                             \
    const int first = get_group_id(0) * 4;                                 \
    for (int i = get_local_id(0); i < 4 * cols; i += get_local_size(0)) {  \
        const int k = i / cols;                                            \
        const int c = i - k * cols;                                        \
        const int r = first + k;                                           \
        if (r < rows) {                                                    \
            const float v = (LOAD) * scale[r] + bias[c];                   \
            STORE;                                                         \
        }                                                                  \
    }

__kernel void scale_rows(__global float* out, __global const float* x, __global const float* scale,
                         __global const float* bias, const int rows, const int cols)
{
    SCALE_ROWS(x[(long)r * cols + c], out[(long)r * cols + c] = v)
}

__kernel void scale_rows_half(__global half* out, __global const half* x, __global const float* scale,
                              __global const float* bias, const int rows, const int cols)
{
    SCALE_ROWS(vload_half((long)r * cols + c, x), vstore_half(v, (long)r * cols + c, out))
}

// A test kernel for expand-macros and row-loop (the CUDA twin of scale_rows.cl): out[r, c] =
// x[r, c] * scale[r] + bias[c], four rows per block of 128 walked as one flattened range, the body a macro
// (one body, two kernels).
#define SCALE_ROWS(LOAD, STORE)                                             \
    const int first = blockIdx.x * 4;                                      \
    for (int i = threadIdx.x; i < 4 * cols; i += blockDim.x) {             \
        const int k = i / cols;                                            \
        const int c = i - k * cols;                                        \
        const int r = first + k;                                           \
        if (r < rows) {                                                    \
            const float v = (LOAD) * scale[r] + bias[c];                   \
            STORE;                                                         \
        }                                                                  \
    }

extern "C" __global__ void scale_rows(float* out, const float* x, const float* scale, const float* bias, int rows,
                                      int cols)
{
    SCALE_ROWS(x[(long long)r * cols + c], out[(long long)r * cols + c] = v)
}

extern "C" __global__ void scale_rows_twice(float* out, const float* x, const float* scale, const float* bias,
                                            int rows, int cols)
{
    SCALE_ROWS(x[(long long)r * cols + c], out[(long long)r * cols + c] = 2.0f * v)
}

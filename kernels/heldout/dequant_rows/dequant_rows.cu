// Dequantize an int8 matrix with one fp32 scale per row: out[r][c] = q[r][c] * scale[r].
// 2-D launch: x walks the columns, y the rows; one thread per element.
extern "C" __global__ void dequant_rows(float* out,
                                        const signed char* q,
                                        const float* scale,
                                        int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        out[r * cols + c] = (float)q[r * cols + c] * scale[r];
    }
}

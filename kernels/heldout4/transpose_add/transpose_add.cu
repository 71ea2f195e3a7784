// out = a + transpose(b): out[i][j] = a[i][j] + b[j][i], a and out rows x cols, b cols x rows
// (symmetrising a matrix is transpose_add(a, a) then a halving).
// One thread per output element, 2-D launch: x is the column j, y the row i.
extern "C" __global__ void transpose_add(float* out, const float* a, const float* b, int rows, int cols)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= rows || j >= cols)
        return;
    out[i * cols + j] = a[i * cols + j] + b[j * rows + i];
}

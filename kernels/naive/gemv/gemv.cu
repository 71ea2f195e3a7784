// Matrix-vector product, naive: one thread per row of A (row-major), a dot product over the row.
//   y[r] = sum_c A[r, c] * x[c]
extern "C" __global__ void gemv(float* y, const float* A, const float* x, const int rows, const int cols)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c)
        acc += A[r * cols + c] * x[c];
    y[r] = acc;
}

// Transposed matrix-vector product, naive: one work-item per column of A (row-major), a dot
// product down the column (neighbouring work-items read neighbouring elements).
//   y[c] = sum_r A[r, c] * x[r]
__kernel void gemv_t(__global float* y, __global const float* A, __global const float* x, const int rows,
                     const int cols)
{
    const int c = get_global_id(0);
    if (c >= cols) return;
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r)
        acc += A[r * cols + c] * x[r];
    y[c] = acc;
}

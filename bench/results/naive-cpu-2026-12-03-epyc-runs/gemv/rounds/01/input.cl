// Matrix-vector product, naive: one work-item per row of A (row-major), a dot product over the row.
//   y[r] = sum_c A[r, c] * x[c]
__kernel void gemv(__global float* y, __global const float* A, __global const float* x, const int rows,
                   const int cols)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c)
        acc += A[r * cols + c] * x[c];
    y[r] = acc;
}

// y = A x for a row-major m x k matrix: one work-item per row, summing its k terms in order.
__kernel void gemv(__global float *y, __global const float *A, __global const float *x,
                   const int m, const int k) {
    int row = get_global_id(0);
    if (row >= m) return;
    float acc = 0.0f;
    for (int j = 0; j < k; ++j)
        acc += A[(size_t)row * k + j] * x[j];
    y[row] = acc;
}

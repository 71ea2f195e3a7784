// kerntune: shape 64k-4perrow: the original kernel is the fastest
// launch: grid ['ceil_div(rows, 256)'], block [256], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// y = A x, A in CSR form, fp32. Naive (CSR-scalar): one work-item per row walks
// its row serially. Neighbouring work-items read different rows, so the reads of
// vals and col_idx are scattered, and long rows hold up their neighbours.
__kernel void spmv_csr(__global float* restrict y, __global const int* restrict row_ptr,
                       __global const int* restrict col_idx, __global const float* restrict vals,
                       __global const float* restrict x, const int rows)
{
    const int row = get_group_id(0) * get_local_size(0) + get_local_id(0);
    if (row >= rows)
        return;
    const int end = row_ptr[row + 1];
    float sum = 0.0f;
    for (int k = row_ptr[row]; k < end; ++k)
        sum += vals[k] * x[col_idx[k]];
    y[row] = sum;
}

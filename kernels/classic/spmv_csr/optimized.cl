// y = A x, A in CSR form, fp32. Optimized (CSR-vector): a group of GROUP = 8
// consecutive work-items shares a row; lane l sums entries l, l+8, ... so the
// group reads the row's vals and col_idx in contiguous runs, then the partial sums
// are combined by a tree in local memory. The launch is the naive kernel's (one
// work-item per row, work-groups of 256), so the grid holds rows / 8 groups and
// every group covers 8 rows in turn. The loop bound is uniform across the
// work-group, so every work-item reaches every barrier.
#define GROUP 8
#define BLOCK 256

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
void spmv_csr(__global float* restrict y, __global const int* restrict row_ptr,
              __global const int* restrict col_idx, __global const float* restrict vals,
              __global const float* restrict x, const int rows)
{
    __local float partial[BLOCK];
    const int lid = get_local_id(0);
    const int lane = lid % GROUP;
    const int groups_per_block = BLOCK / GROUP;
    const int group = lid / GROUP;
    const int total_groups = get_num_groups(0) * groups_per_block;
    for (int first = get_group_id(0) * groups_per_block; first < rows; first += total_groups) {
        const int row = first + group;
        float sum = 0.0f;
        if (row < rows) {
            const int end = row_ptr[row + 1];
            for (int k = row_ptr[row] + lane; k < end; k += GROUP)
                sum += vals[k] * x[col_idx[k]];
        }
        partial[lid] = sum;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int off = GROUP / 2; off > 0; off >>= 1) {
            if (lane < off)
                partial[lid] += partial[lid + off];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        // each work-item rewrites only its own slot next time round, after the
        // last barrier above: no other work-item reads partial until then
        if (lane == 0 && row < rows)
            y[row] = partial[lid];
    }
}

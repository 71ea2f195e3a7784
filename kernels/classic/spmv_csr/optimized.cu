// y = A x, A in CSR form, fp32. Optimized (CSR-vector): a group of GROUP = 8
// consecutive threads shares a row; lane l sums entries l, l+8, ... so the group
// reads the row's vals and col_idx in contiguous runs, then the partial sums are
// combined with warp shuffles (the group is a segment of one warp). The launch is
// the naive kernel's (one thread per row), so the grid holds rows / 8 groups and
// every group covers 8 rows in turn. The loop bound is uniform across the block,
// so every lane of a warp reaches every shuffle.
#define GROUP 8

extern "C" __global__ void spmv_csr(float* __restrict__ y, const int* __restrict__ row_ptr,
                                    const int* __restrict__ col_idx, const float* __restrict__ vals,
                                    const float* __restrict__ x, int rows)
{
    const int lane = threadIdx.x % GROUP;
    const int groups_per_block = blockDim.x / GROUP;
    const int group = threadIdx.x / GROUP;
    const int total_groups = gridDim.x * groups_per_block;
    for (int first = blockIdx.x * groups_per_block; first < rows; first += total_groups) {
        const int row = first + group;
        float sum = 0.0f;
        if (row < rows) {
            const int end = row_ptr[row + 1];
            for (int k = row_ptr[row] + lane; k < end; k += GROUP)
                sum += vals[k] * x[col_idx[k]];
        }
#pragma unroll
        for (int off = GROUP / 2; off > 0; off >>= 1)
            sum += __shfl_down_sync(0xffffffffu, sum, off, GROUP);
        if (lane == 0 && row < rows)
            y[row] = sum;
    }
}

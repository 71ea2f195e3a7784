// Mean squared difference of each row of two [rows, cols] matrices:
//   out[r] = (1 / cols) * sum_c (a[r][c] - b[r][c])^2
// One work-group of BLOCK work-items per row: each work-item sums a strided slice of the row,
// then the partial sums are added in local memory by a tree reduction.
#define BLOCK 256

__kernel void sq_dist_rows(__global float* out,
                           __global const float* a,
                           __global const float* b,
                           int rows, int cols)
{
    __local float partial[BLOCK];

    int row = get_group_id(0);
    int tid = get_local_id(0);

    float acc = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        float d = a[row * cols + c] - b[row * cols + c];
        acc += d * d;
    }
    partial[tid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (tid < stride)
            partial[tid] += partial[tid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (tid == 0)
        out[row] = partial[0] / cols;
}

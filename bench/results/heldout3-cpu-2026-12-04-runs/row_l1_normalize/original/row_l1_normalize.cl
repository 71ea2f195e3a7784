// out[r, c] = x[r, c] / max(sum_c |x[r, c]|, eps): each row scaled to unit L1 norm.
// One work-group of 128 work-items per row: each sums |x| over a strided slice of the row,
// the group adds the partial sums in local memory, then every work-item writes its slice.
#define BLOCK 128

__kernel void row_l1_normalize(__global float* out, __global const float* x,
                               const int rows, const int cols, const float eps)
{
    __local float partial[BLOCK];
    int row = get_group_id(0);
    int tid = get_local_id(0);

    float acc = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        acc += fabs(x[row * cols + c]);
    }
    partial[tid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            partial[tid] += partial[tid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    float norm = fmax(partial[0], eps);
    for (int c = tid; c < cols; c += BLOCK) {
        out[row * cols + c] = x[row * cols + c] / norm;
    }
}

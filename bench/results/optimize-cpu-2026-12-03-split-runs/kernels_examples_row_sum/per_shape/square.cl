// kerntune: shape square: the original kernel is the fastest
// launch: grid ['rows'], block [256], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// out[r] = sum_c x[r, c]. One work-group of 256 work-items per row: each sums a
// strided slice of the row, then the group reduces in local memory.
__kernel void row_sum(__global float* out, __global const float* x, const int rows, const int cols)
{
    __local float partial[256];
    const int r = get_group_id(0);
    const int t = get_local_id(0);
    const int threads = get_local_size(0);
    __global const float* row = x + (long)r * cols;
    float acc = 0.0f;
    for (int c = t; c < cols; c += threads)
        acc += row[c];
    partial[t] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = threads / 2; stride > 0; stride /= 2) {
        if (t < stride)
            partial[t] += partial[t + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
        out[r] = partial[0];
}

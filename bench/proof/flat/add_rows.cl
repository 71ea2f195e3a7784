// y[r, c] = x[r, c] + bias[c]: a broadcast add over a 2-D grid
__kernel void add_rows(__global float* y, __global const float* x, __global const float* bias,
                       const int rows, const int cols)
{
    const int c = (int)(get_group_id(0) * get_local_size(0)) + (int)get_local_id(0);
    const int r = (int)(get_group_id(1) * get_local_size(1)) + (int)get_local_id(1);
    if (c < cols && r < rows)
        y[(long)r * cols + c] = x[(long)r * cols + c] + bias[c];
}

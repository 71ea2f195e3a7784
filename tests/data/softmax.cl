// A naive row softmax written for tests (the library does not ship it): one work-group of 128
// work-items per row; a local-memory tree for the maximum, another for the sum of exponentials.
//   out[r, c] = exp(x[r, c] - max_r) / sum_c' exp(x[r, c'] - max_r)
__kernel void softmax(__global float* out, __global const float* x, const int rows, const int cols)
{
    __local float red[128];
    const int r = get_group_id(0);
    const int t = get_local_id(0);
    __global const float* row = x + (long)r * cols;
    float m = -INFINITY;
    for (int c = t; c < cols; c += get_local_size(0))
        m = fmax(m, row[c]);
    red[t] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (t < s)
            red[t] = fmax(red[t], red[t + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float mx = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    float sum = 0.0f;
    for (int c = t; c < cols; c += get_local_size(0))
        sum += exp(row[c] - mx);
    red[t] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (t < s)
            red[t] += red[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float inv = 1.0f / red[0];
    for (int c = t; c < cols; c += get_local_size(0))
        out[(long)r * cols + c] = exp(row[c] - mx) * inv;
}

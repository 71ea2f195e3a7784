// out[r] = sum_c x[r, c]: a work-group of 64 work-items per row. Each work-item sums its
// strided slice of the row twice, forwards and backwards, and keeps the mean of the two (a
// redundant pass); then work-item 0 adds the 64 partial sums one by one.
__kernel void rowsum(__global float* out, __global const float* x, const int rows, const int cols)
{
    __local float partial[64];
    const int r = get_group_id(0);
    const int t = get_local_id(0);
    __global const float* row = x + (long)r * cols;
    float forward = 0.0f, backward = 0.0f;
    for (int c = t; c < cols; c += 64)
        forward += row[c];
    if (t < cols) {      // a row shorter than the work-group: the work-items past its end add nothing
        const int last = t + (cols - 1 - t) / 64 * 64;
        for (int c = last; c >= t; c -= 64)
            backward += row[c];
    }
    partial[t] = 0.5f * (forward + backward);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0) {
        float total = 0.0f;
        for (int k = 0; k < 64; ++k)
            total += partial[k];
        out[r] = total;
    }
}

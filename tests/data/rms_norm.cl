// A naive RMS norm written for tests (the library does not ship it): one work-group of 256
// work-items per row, a strided sum of squares, a local-memory tree, then a strided scale.
//   out[r, c] = x[r, c] * rsqrt(mean(x[r, :]^2) + eps) * w[c]
__kernel void rms_norm(__global float* out, __global const float* x, __global const float* w,
                       const float eps, const int rows, const int cols)
{
    __local float sq[256];
    const int r = get_group_id(0);
    const int t = get_local_id(0);
    float acc = 0.0f;
    for (int c = t; c < cols; c += get_local_size(0))
        acc += x[(long)r * cols + c] * x[(long)r * cols + c];
    sq[t] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (t < s)
            sq[t] += sq[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float scale = rsqrt(sq[0] / (float)cols + eps);
    for (int c = t; c < cols; c += get_local_size(0))
        out[(long)r * cols + c] = x[(long)r * cols + c] * scale * w[c];
}

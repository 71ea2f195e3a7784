// RMS norm, naive: one work-item per row, two passes over the row (the sum of squares, then the
// scaled write).
//   out[r, c] = x[r, c] * rsqrt(mean(x[r, :]^2) + eps) * w[c]
__kernel void rms_norm(__global float* out, __global const float* x, __global const float* w,
                       const float eps, const int rows, const int cols)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    float ss = 0.0f;
    for (int c = 0; c < cols; ++c)
        ss += x[r * cols + c] * x[r * cols + c];
    const float inv = rsqrt(ss / cols + eps);
    for (int c = 0; c < cols; ++c)
        out[r * cols + c] = x[r * cols + c] * inv * w[c];
}

// Fused residual add + RMS norm, naive and in place: one work-item per row.
//   residual[r, :] = x[r, :] + residual[r, :];  x[r, :] = residual[r, :] * rsqrt(mean(residual[r, :]^2) + eps) * w
__kernel void fused_add_rms_norm(__global float* x, __global float* residual, __global const float* w,
                                 const float eps, const int rows, const int cols)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    float ss = 0.0f;
    for (int c = 0; c < cols; ++c) {
        const float v = x[r * cols + c] + residual[r * cols + c];
        residual[r * cols + c] = v;
        ss += v * v;
    }
    const float inv = rsqrt(ss / cols + eps);
    for (int c = 0; c < cols; ++c)
        x[r * cols + c] = residual[r * cols + c] * inv * w[c];
}

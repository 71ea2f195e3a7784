// RMS norm, naive: one thread per row, two passes over the row (the sum of squares, then the
// scaled write).
//   out[r, c] = x[r, c] * rsqrt(mean(x[r, :]^2) + eps) * w[c]
extern "C" __global__ void rms_norm(float* out, const float* x, const float* w, const float eps, const int rows,
                                    const int cols)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float ss = 0.0f;
    for (int c = 0; c < cols; ++c)
        ss += x[r * cols + c] * x[r * cols + c];
    const float inv = rsqrtf(ss / cols + eps);
    for (int c = 0; c < cols; ++c)
        out[r * cols + c] = x[r * cols + c] * inv * w[c];
}

// Layer norm, naive: one work-item per row, three passes over the row (mean, variance about the
// mean, the normalized write).
//   out[r, c] = (x[r, c] - mean_r) / sqrt(var_r + eps) * gamma[c] + beta[c]
__kernel void layer_norm(__global float* out, __global const float* x, __global const float* gamma,
                         __global const float* beta, const float eps, const int rows, const int cols)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    float sum = 0.0f;
    for (int c = 0; c < cols; ++c)
        sum += x[r * cols + c];
    const float mean = sum / cols;
    float sq = 0.0f;
    for (int c = 0; c < cols; ++c) {
        const float d = x[r * cols + c] - mean;
        sq += d * d;
    }
    const float inv = 1.0f / sqrt(sq / cols + eps);
    for (int c = 0; c < cols; ++c)
        out[r * cols + c] = (x[r * cols + c] - mean) * inv * gamma[c] + beta[c];
}

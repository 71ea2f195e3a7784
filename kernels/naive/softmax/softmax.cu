// Row softmax, naive and numerically stable: one thread per row, three passes (the maximum, the
// sum of exponentials, the normalized write).
//   out[r, c] = exp(x[r, c] - max_r) / sum_c' exp(x[r, c'] - max_r)
extern "C" __global__ void softmax(float* out, const float* x, const int rows, const int cols)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c)
        m = fmaxf(m, x[r * cols + c]);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c)
        s += expf(x[r * cols + c] - m);
    for (int c = 0; c < cols; ++c)
        out[r * cols + c] = expf(x[r * cols + c] - m) / s;
}

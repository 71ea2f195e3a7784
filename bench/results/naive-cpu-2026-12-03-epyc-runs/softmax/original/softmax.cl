// Row softmax, naive and numerically stable: one work-item per row, three passes (the maximum,
// the sum of exponentials, the normalized write).
//   out[r, c] = exp(x[r, c] - max_r) / sum_c' exp(x[r, c'] - max_r)
__kernel void softmax(__global float* out, __global const float* x, const int rows, const int cols)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c)
        m = fmax(m, x[r * cols + c]);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c)
        s += exp(x[r * cols + c] - m);
    for (int c = 0; c < cols; ++c)
        out[r * cols + c] = exp(x[r * cols + c] - m) / s;
}

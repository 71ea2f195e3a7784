// Cross-entropy loss per row, naive: one work-item per row, two passes over the logits.
//   loss[r] = log(sum_c exp(logits[r, c] - max_r)) + max_r - logits[r, target[r]]
__kernel void cross_entropy(__global float* loss, __global const float* logits, __global const int* target,
                            const int rows, const int cols)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c)
        m = fmax(m, logits[r * cols + c]);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c)
        s += exp(logits[r * cols + c] - m);
    loss[r] = log(s) + m - logits[r * cols + target[r]];
}

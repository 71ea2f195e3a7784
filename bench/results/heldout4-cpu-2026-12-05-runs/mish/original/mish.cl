// Mish activation, out[i] = x[i] * tanh(softplus(x[i])), softplus(x) = log(1 + exp(x)).
// Above 20, softplus(x) is x to fp32 precision (and exp would grow towards overflow), so the
// helper returns x there, as PyTorch's softplus does with its default threshold.
// One work-item per element.
float softplus(float v)
{
    if (v > 20.0f)
        return v;
    return log1p(exp(v));
}

__kernel void mish(__global float* out, __global const float* x, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        float v = x[i];
        out[i] = v * tanh(softplus(v));
    }
}

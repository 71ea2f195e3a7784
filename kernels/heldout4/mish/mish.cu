// Mish activation, out[i] = x[i] * tanh(softplus(x[i])), softplus(x) = log(1 + exp(x)).
// Above 20, softplus(x) is x to fp32 precision (and exp would grow towards overflow), so the
// helper returns x there, as PyTorch's softplus does with its default threshold.
// One thread per element.
__device__ float softplus(float v)
{
    if (v > 20.0f)
        return v;
    return log1pf(expf(v));
}

extern "C" __global__ void mish(float* out, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = v * tanhf(softplus(v));
    }
}

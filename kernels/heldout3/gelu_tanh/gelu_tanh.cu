// out[i] = gelu(x[i]) with the tanh approximation:
//   gelu(x) = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// One thread per element.

__device__ float gelu(float x)
{
    const float k = 0.7978845608f;     // sqrt(2 / pi)
    float inner = k * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
}

extern "C" __global__ void gelu_tanh(float* out, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = gelu(x[i]);
    }
}

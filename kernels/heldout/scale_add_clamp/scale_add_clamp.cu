// out[i] = clamp(alpha * x[i] + beta * y[i], lo, hi) over a flat array. One thread per element.

__device__ float clampf(float v, float lo, float hi)
{
    return fminf(fmaxf(v, lo), hi);
}

extern "C" __global__ void scale_add_clamp(float* out,
                                           const float* x,
                                           const float* y,
                                           float alpha, float beta, float lo, float hi,
                                           int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = alpha * x[i] + beta * y[i];
        out[i] = clampf(v, lo, hi);
    }
}

// CUDA twin of rms_norm.cl (a test kernel): one block of 256 threads per row, a strided sum of
// squares, a shared-memory tree, then a strided scale.
extern "C" __global__ void rms_norm(float* out, const float* x, const float* w, float eps, int rows, int cols)
{
    __shared__ float sq[256];
    const int r = blockIdx.x;
    const int t = threadIdx.x;
    float acc = 0.0f;
    for (int c = t; c < cols; c += blockDim.x)
        acc += x[(long long)r * cols + c] * x[(long long)r * cols + c];
    sq[t] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s)
            sq[t] += sq[t + s];
        __syncthreads();
    }
    const float scale = rsqrtf(sq[0] / (float)cols + eps);
    for (int c = t; c < cols; c += blockDim.x)
        out[(long long)r * cols + c] = x[(long long)r * cols + c] * scale * w[c];
}

// CUDA twin of softmax.cl (a test kernel): one block of 128 threads per row; a shared-memory tree
// for the maximum, another for the sum of exponentials.
extern "C" __global__ void softmax(float* out, const float* x, int rows, int cols)
{
    __shared__ float red[128];
    const int r = blockIdx.x;
    const int t = threadIdx.x;
    const float* row = x + (long long)r * cols;
    float m = -INFINITY;
    for (int c = t; c < cols; c += blockDim.x)
        m = fmaxf(m, row[c]);
    red[t] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s)
            red[t] = fmaxf(red[t], red[t + s]);
        __syncthreads();
    }
    const float mx = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = t; c < cols; c += blockDim.x)
        sum += expf(row[c] - mx);
    red[t] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s)
            red[t] += red[t + s];
        __syncthreads();
    }
    const float inv = 1.0f / red[0];
    for (int c = t; c < cols; c += blockDim.x)
        out[(long long)r * cols + c] = expf(row[c] - mx) * inv;
}

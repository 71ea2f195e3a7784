// out[r] = sum_c x[r, c]. One block of 256 threads per row: each thread sums a
// strided slice of the row, then the block reduces in shared memory.
extern "C" __global__ void row_sum(float* out, const float* x, int rows, int cols)
{
    __shared__ float partial[256];
    const int r = blockIdx.x;
    const float* row = x + (long long)r * cols;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        acc += row[c];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[r] = partial[0];
}

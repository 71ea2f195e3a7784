// out[r, c] = x[r, c] / max(sum_c |x[r, c]|, eps): each row scaled to unit L1 norm.
// One block of 128 threads per row: each sums |x| over a strided slice of the row,
// the block adds the partial sums in shared memory, then every thread writes its slice.
#define BLOCK 128

extern "C" __global__ void row_l1_normalize(float* out, const float* x,
                                            int rows, int cols, float eps)
{
    __shared__ float partial[BLOCK];
    int row = blockIdx.x;
    int tid = threadIdx.x;

    float acc = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        acc += fabsf(x[row * cols + c]);
    }
    partial[tid] = acc;
    __syncthreads();

    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            partial[tid] += partial[tid + s];
        }
        __syncthreads();
    }

    float norm = fmaxf(partial[0], eps);
    for (int c = tid; c < cols; c += BLOCK) {
        out[row * cols + c] = x[row * cols + c] / norm;
    }
}

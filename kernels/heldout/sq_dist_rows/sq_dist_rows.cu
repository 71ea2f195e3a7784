// Mean squared difference of each row of two [rows, cols] matrices:
//   out[r] = (1 / cols) * sum_c (a[r][c] - b[r][c])^2
// One block of BLOCK threads per row: each thread sums a strided slice of the row,
// then the partial sums are added in shared memory by a tree reduction.
#define BLOCK 256

extern "C" __global__ void sq_dist_rows(float* out,
                                        const float* a,
                                        const float* b,
                                        int rows, int cols)
{
    __shared__ float partial[BLOCK];

    int row = blockIdx.x;
    int tid = threadIdx.x;

    float acc = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        float d = a[row * cols + c] - b[row * cols + c];
        acc += d * d;
    }
    partial[tid] = acc;
    __syncthreads();

    for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (tid < stride)
            partial[tid] += partial[tid + stride];
        __syncthreads();
    }

    if (tid == 0)
        out[row] = partial[0] / cols;
}

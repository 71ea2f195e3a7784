// Shannon entropy (in nats) of each row of positive weights, normalised to a distribution:
//   p[c] = x[r][c] / s,  s = sum_c x[r][c],  out[r] = -sum_c p[c] log p[c] = log(s) - t / s,
//   t = sum_c x[r][c] log x[r][c].
// One block of 256 per row: each thread sums a strided slice of the row into s and t, then
// both sums are combined by a tree reduction in shared memory; thread 0 writes the result.
#define BLOCK 256

extern "C" __global__ void row_entropy(float* out, const float* x, int rows, int cols)
{
    __shared__ float s_sum[BLOCK];
    __shared__ float t_sum[BLOCK];
    int r = blockIdx.x;
    int tid = threadIdx.x;

    float s = 0.0f;
    float t = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        float v = x[r * cols + c];
        s += v;
        t += v * logf(v);
    }
    s_sum[tid] = s;
    t_sum[tid] = t;
    __syncthreads();

    for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (tid < stride) {
            s_sum[tid] += s_sum[tid + stride];
            t_sum[tid] += t_sum[tid + stride];
        }
        __syncthreads();
    }

    if (tid == 0)
        out[r] = logf(s_sum[0]) - t_sum[0] / s_sum[0];
}

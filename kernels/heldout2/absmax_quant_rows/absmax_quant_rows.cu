// Symmetric per-row int8 quantization (absmax, as in LLM.int8 / W8A8 activation quantization):
//   scale[r] = max_c |x[r][c]| / 127
//   q[r][c]  = clamp(round(x[r][c] / scale[r]), -127, 127)      (0 for an all-zero row)
// One block of 256 per row: a strided pass finds each thread's max, a tree in shared
// memory combines them, then the same threads write the codes.

#define BLOCK 256

extern "C" __global__ void absmax_quant_rows(signed char* q,
                                             float* scale,
                                             const float* x,
                                             int rows, int cols)
{
    __shared__ float red[BLOCK];

    int row = blockIdx.x;
    int tid = threadIdx.x;

    float m = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        m = fmaxf(m, fabsf(x[row * cols + c]));
    }
    red[tid] = m;
    __syncthreads();

    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (tid < s)
            red[tid] = fmaxf(red[tid], red[tid + s]);
        __syncthreads();
    }

    float sc = red[0] / 127.0f;
    if (tid == 0)
        scale[row] = sc;

    float inv = 0.0f;
    if (sc > 0.0f)
        inv = 1.0f / sc;
    for (int c = tid; c < cols; c += BLOCK) {
        float v = rintf(x[row * cols + c] * inv);
        v = fminf(fmaxf(v, -127.0f), 127.0f);
        q[row * cols + c] = (signed char)v;
    }
}

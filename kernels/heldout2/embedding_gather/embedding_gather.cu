// Token embedding lookup with the output scale some models apply (Gemma: sqrt(hidden)):
//   out[t][d] = table[ids[t]][d] * scale
// 2-D launch: x walks the hidden dimension, y the tokens.
extern "C" __global__ void embedding_gather(float* out,
                                            const int* ids,
                                            const float* table,
                                            float scale,
                                            int tokens, int dim)
{
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    int t = blockIdx.y * blockDim.y + threadIdx.y;
    if (d >= dim || t >= tokens)
        return;

    int row = ids[t];
    out[t * dim + d] = table[row * dim + d] * scale;
}

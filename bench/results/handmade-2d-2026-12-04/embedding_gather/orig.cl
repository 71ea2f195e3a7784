// Token embedding lookup with the output scale some models apply (Gemma: sqrt(hidden)):
//   out[t][d] = table[ids[t]][d] * scale
// 2-D launch: dimension 0 walks the hidden dimension, dimension 1 the tokens.
__kernel void embedding_gather(__global float* out,
                               __global const int* ids,
                               __global const float* table,
                               float scale,
                               int tokens, int dim)
{
    int d = get_global_id(0);
    int t = get_global_id(1);
    if (d >= dim || t >= tokens)
        return;

    int row = ids[t];
    out[t * dim + d] = table[row * dim + d] * scale;
}

// Bias add + GELU(tanh), naive: one work-item per element; the bias is indexed by the column of a
// flat index.
//   out[t, i] = gelu_tanh(x[t, i] + b[i])
__kernel void bias_gelu(__global float* out, __global const float* x, __global const float* b, const int T,
                        const int d)
{
    const int gid = get_global_id(0);
    if (gid >= T * d) return;
    const float v = x[gid] + b[gid % d];
    out[gid] = 0.5f * v * (1.0f + tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

// Depthwise causal 1-D convolution followed by SiLU (as in Mamba's conv1d):
//   y[c][t] = bias[c] + sum_k w[c][k] * x[c][t - (width - 1) + k]   (x is zero before t = 0)
//   out[c][t] = silu(y[c][t])
// One work-item per output element.

float silu(float v)
{
    return v / (1.0f + exp(-v));
}

__kernel void causal_conv1d(__global float* out,
                            __global const float* x,
                            __global const float* w,
                            __global const float* bias,
                            int channels, int seqlen, int width)
{
    int idx = get_global_id(0);
    if (idx >= channels * seqlen)
        return;

    int c = idx / seqlen;
    int t = idx % seqlen;

    float acc = bias[c];
    for (int k = 0; k < width; k++) {
        int src = t - (width - 1) + k;
        if (src >= 0)
            acc += w[c * width + k] * x[c * seqlen + src];
    }
    out[idx] = silu(acc);
}

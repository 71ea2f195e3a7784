// Depthwise causal 1-D convolution followed by SiLU (as in Mamba's conv1d):
//   y[c][t] = bias[c] + sum_k w[c][k] * x[c][t - (width - 1) + k]   (x is zero before t = 0)
//   out[c][t] = silu(y[c][t])
// One thread per output element.

__device__ float silu(float v)
{
    return v / (1.0f + expf(-v));
}

extern "C" __global__ void causal_conv1d(float* out,
                                         const float* x,
                                         const float* w,
                                         const float* bias,
                                         int channels, int seqlen, int width)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
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

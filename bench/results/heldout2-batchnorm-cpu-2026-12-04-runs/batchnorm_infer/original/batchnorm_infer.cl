// Batch normalization in inference mode (torch.nn.BatchNorm2d in eval()) over NCHW data
// x[batch][channels][hw], with the running statistics:
//   out = (x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c]
// One work-item per element, flat 1-D index; the channel is recovered with / and %.
__kernel void batchnorm_infer(__global float* out,
                              __global const float* x,
                              __global const float* mean,
                              __global const float* var,
                              __global const float* gamma,
                              __global const float* beta,
                              int batch, int channels, int hw,
                              float eps)
{
    int i = get_global_id(0);
    int n = batch * channels * hw;
    if (i >= n)
        return;

    int c = (i / hw) % channels;
    float inv_std = 1.0f / sqrt(var[c] + eps);
    out[i] = (x[i] - mean[c]) * inv_std * gamma[c] + beta[c];
}

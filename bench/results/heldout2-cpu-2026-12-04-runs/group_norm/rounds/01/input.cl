// Group normalization (torch.nn.GroupNorm, affine) of x[batch][channels][hw]:
// the channels are split into `groups` groups of channels/groups consecutive channels; each
// (sample, group) is normalized with its own mean and biased variance, then scaled and shifted
// per channel:  out = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c].
// One work-item per (sample, group), looping over the group's elements: a pass for the mean,
// a pass for the variance, a pass to write the output.
__kernel void group_norm(__global float* out,
                         __global const float* x,
                         __global const float* gamma,
                         __global const float* beta,
                         int batch, int channels, int hw, int groups,
                         float eps)
{
    int bg = get_global_id(0);
    if (bg >= batch * groups)
        return;

    int b = bg / groups;
    int g = bg % groups;
    int cpg = channels / groups;
    int count = cpg * hw;
    int base = (b * channels + g * cpg) * hw;    // a group's elements are contiguous

    float sum = 0.0f;
    for (int i = 0; i < count; i++)
        sum += x[base + i];
    float mean = sum / count;

    float sq = 0.0f;
    for (int i = 0; i < count; i++) {
        float d = x[base + i] - mean;
        sq += d * d;
    }
    float rstd = 1.0f / sqrt(sq / count + eps);

    for (int c = 0; c < cpg; c++) {
        int ch = g * cpg + c;
        float ga = gamma[ch];
        float be = beta[ch];
        for (int j = 0; j < hw; j++) {
            int idx = base + c * hw + j;
            out[idx] = (x[idx] - mean) * rstd * ga + be;
        }
    }
}

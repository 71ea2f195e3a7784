// Mean of each sequence's unmasked token vectors:
//   out[b, d] = sum_t mask[b, t] * x[b, t, d] / max(sum_t mask[b, t], 1)
// x is [batch, seq, dim], mask is [batch, seq] of 0/1 (1 = real token, 0 = padding).
// One work-item per output element; the flat index is split into (b, d).
__kernel void masked_mean_pool(__global float* out, __global const float* x,
                               __global const int* mask,
                               const int batch, const int seq, const int dim)
{
    int idx = get_global_id(0);
    if (idx < batch * dim) {
        int b = idx / dim;
        int d = idx % dim;

        float sum = 0.0f;
        int count = 0;
        for (int t = 0; t < seq; t++) {
            int m = mask[b * seq + t];
            sum += (float)m * x[((size_t)b * seq + t) * dim + d];
            count += m;
        }
        out[idx] = sum / (float)max(count, 1);
    }
}

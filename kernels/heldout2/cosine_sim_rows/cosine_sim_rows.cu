// Cosine similarity of matching rows of a and b (torch.nn.functional.cosine_similarity, dim=1):
//   out[r] = dot(a[r], b[r]) / max(|a[r]| * |b[r]|, eps)
// One block of 128 per row: each thread accumulates the three sums over a strided slice of
// the row, then three trees in shared memory combine them.

#define WG 128

extern "C" __global__ void cosine_sim_rows(float* out,
                                           const float* a,
                                           const float* b,
                                           int rows, int cols, float eps)
{
    __shared__ float s_ab[WG];
    __shared__ float s_aa[WG];
    __shared__ float s_bb[WG];

    int r = blockIdx.x;
    int lid = threadIdx.x;

    float ab = 0.0f, aa = 0.0f, bb = 0.0f;
    for (int c = lid; c < cols; c += WG) {
        float x = a[r * cols + c];
        float y = b[r * cols + c];
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    s_ab[lid] = ab;
    s_aa[lid] = aa;
    s_bb[lid] = bb;
    __syncthreads();

    for (int stride = WG / 2; stride > 0; stride >>= 1) {
        if (lid < stride) {
            s_ab[lid] += s_ab[lid + stride];
            s_aa[lid] += s_aa[lid + stride];
            s_bb[lid] += s_bb[lid + stride];
        }
        __syncthreads();
    }

    if (lid == 0) {
        float denom = sqrtf(s_aa[0]) * sqrtf(s_bb[0]);
        out[r] = s_ab[0] / fmaxf(denom, eps);
    }
}

// SiLU-and-mul (a gated activation), naive: one thread per output element, the token and the
// column recovered from the flat index by division.
//   out[t, i] = silu(x[t, i]) * x[t, d + i],  silu(a) = a / (1 + exp(-a)),  x is [T, 2d]
extern "C" __global__ void silu_and_mul(float* out, const float* x, const int T, const int d)
{
    const int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= T * d) return;
    const int t = gid / d;
    const int i = gid % d;
    const float a = x[t * 2 * d + i];
    const float b = x[t * 2 * d + d + i];
    out[t * d + i] = a / (1.0f + expf(-a)) * b;
}

// SiLU-and-mul (a gated activation), naive: one work-item per output element, the token and the
// column recovered from the flat index by division.
//   out[t, i] = silu(x[t, i]) * x[t, d + i],  silu(a) = a / (1 + exp(-a)),  x is [T, 2d]
__kernel void silu_and_mul(__global float* out, __global const float* x, const int T, const int d)
{
    const int gid = get_global_id(0);
    if (gid >= T * d) return;
    const int t = gid / d;
    const int i = gid % d;
    const float a = x[t * 2 * d + i];
    const float b = x[t * 2 * d + d + i];
    out[t * d + i] = a / (1.0f + exp(-a)) * b;
}

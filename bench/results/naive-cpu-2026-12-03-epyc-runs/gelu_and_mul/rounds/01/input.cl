// GELU-and-mul (exact, erf form), naive: one work-item per output element; the column is the flat
// index minus the token's start.
//   out[t, i] = gelu(x[t, i]) * x[t, d + i],  gelu(a) = a / 2 * (1 + erf(a / sqrt(2))),  x is [T, 2d]
__kernel void gelu_and_mul(__global float* out, __global const float* x, const int T, const int d)
{
    const int gid = get_global_id(0);
    if (gid < T * d) {
        const int t = gid / d;
        const int i = gid - t * d;
        const float a = x[t * (2 * d) + i];
        out[gid] = 0.5f * a * (1.0f + erf(a * 0.70710678118654752f)) * x[t * (2 * d) + d + i];
    }
}

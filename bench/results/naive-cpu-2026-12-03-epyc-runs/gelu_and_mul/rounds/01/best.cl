// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   row-column-grid: gelu_and_mul: gid split into row t and column i by a 2-D grid (rows T, columns d)
//   unroll: unroll pragmas on 1 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// GELU-and-mul (exact, erf form), naive: one work-item per output element; the column is the flat
// index minus the token's start.
//   out[t, i] = gelu(x[t, i]) * x[t, d + i],  gelu(a) = a / 2 * (1 + erf(a / sqrt(2))),  x is [T, 2d]
__kernel void gelu_and_mul(__global float*  out, __global const float*  x, const int T, const int d)
{
    const int i = (int)get_global_id(0);
    if (i < d) {
#pragma unroll 4
        for (int t = (int)get_global_id(1); t < T; t += (int)get_global_size(1)) {
            const float a = x[t * (2 * d) + i];
            out[(t * d + i)] = 0.5f * a * (1.0f + erf(a * 0.70710678118654752f)) * x[t * (2 * d) + d + i];
        }
    }

}

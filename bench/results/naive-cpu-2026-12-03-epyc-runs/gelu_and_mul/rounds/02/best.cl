// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 1024x1 -> parameters BLOCK
//   elements-per-thread: gelu_and_mul: EPT elements per thread, grid divided by EPT
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   row-column-grid: gelu_and_mul: gid split into row t and column i by a 2-D grid (rows T, columns d)
//   unroll: unroll pragmas on 1 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// GELU-and-mul (exact, erf form), naive: one work-item per output element; the column is the flat
// index minus the token's start.
//   out[t, i] = gelu(x[t, i]) * x[t, d + i],  gelu(a) = a / 2 * (1 + erf(a / sqrt(2))),  x is [T, 2d]
__kernel void gelu_and_mul(__global float*   out, __global const float*   x, const int T, const int d)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 1 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 1; ++kt_e) {
        const int i = kt_first + (int)kt_e * (int)get_local_size(0);
        if (i < d) {
#pragma unroll 4
        for (int t = (int)get_global_id(1); t < T; t += (int)get_global_size(1)) {
            const float a = x[t * (2 * d) + i];
            out[(t * d + i)] = 0.5f * a * (1.0f + erf(a * 0.70710678118654752f)) * x[t * (2 * d) + d + i];
        }
    }
    }

}

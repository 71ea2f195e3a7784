// kerntune: shape T64-d2048: BLOCK=1024,VW=1,RESTRICT=False,FAST_MATH=False,FAST_FLAGS=False from round 2, 3.475x
// launch: grid ['ceil_div(d, 1024 * 1)', 'T'], block [1024, 1], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 512x1 -> parameters BLOCK
//   vector-columns: silu_and_mul: VW consecutive values of i per work-item as a vector (2 load(s), 1 store(s), 2 vector variable(s))
//   restrict: restrict on 2 pointer parameter(s)
//   fast-math: 3 call(s) of exp may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   row-column-grid: silu_and_mul: gid split into row t and column i by a 2-D grid (rows T, columns d)
//   unroll: unroll pragmas on 1 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   fast-math: 2 call(s) of exp may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// SiLU-and-mul (a gated activation), naive: one work-item per output element, the token and the
// column recovered from the flat index by division.
//   out[t, i] = silu(x[t, i]) * x[t, d + i],  silu(a) = a / (1 + exp(-a)),  x is [T, 2d]
__kernel void silu_and_mul(__global float*   out, __global const float*   x, const int T, const int d)
{
    
    const int i = (int)get_global_id(0);
    if (i < d) {
#pragma unroll 8
        for (int t = (int)get_global_id(1); t < T; t += (int)get_global_size(1)) {
            const float a = x[t * 2 * d + i];
            const float b = x[t * 2 * d + d + i];
            out[t * d + i] = a / (1.0f + exp(-a)) * b;
        }
    }

    

}

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   row-column-grid: bias_gelu: gid split into row kt_row and column kt_col by a 2-D grid (rows T, columns d)
//   hoist-invariants: 1 loop-invariant load(s), 0 index offset(s) hoisted out of 1 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Bias add + GELU(tanh), naive: one work-item per element; the bias is indexed by the column of a
// flat index.
//   out[t, i] = gelu_tanh(x[t, i] + b[i])
__kernel void bias_gelu(__global float*  out, __global const float*  x, __global const float*  b, const int T,
                        const int d)
{
    const int kt_col = (int)get_global_id(0);
    if (kt_col < d) {
#pragma unroll 8
        for (int kt_row = (int)get_global_id(1); kt_row < T; kt_row += (int)get_global_size(1)) {
            const float v = x[(kt_row * d + kt_col)] + b[kt_col];
            out[(kt_row * d + kt_col)] = 0.5f * v * (1.0f + tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
        }

    }

}

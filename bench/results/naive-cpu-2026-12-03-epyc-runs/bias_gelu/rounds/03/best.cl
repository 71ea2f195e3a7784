// Rewritten by kerntune's rule catalog (round 3). Applied rules:
//   launch-config: block 64x1 -> parameters BLOCK
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 512x1 -> parameters BLOCK
//   vector-columns: bias_gelu: VW consecutive values of kt_col per work-item as a vector (2 load(s), 1 store(s), 1 vector variable(s))
//   hoist-invariants: 2 loop-invariant load(s), 0 index offset(s) hoisted out of 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

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
__kernel void bias_gelu(__global float*    out, __global const float*    x, __global const float*    b, const int T,
                        const int d)
{
    
    const int kt_c0 = (int)get_global_id(0) * 16;
    if (kt_c0 >= d) return;
    if (kt_c0 + 16 <= d) {
        #pragma unroll 8
        for (int kt_row = (int)get_global_id(1); kt_row < T; kt_row += (int)get_global_size(1)) {
            const float16 v = vload16(0, x + (kt_row * d) + kt_c0) + vload16(0, b + kt_c0);
            vstore16((float16)(0.5f * v * (1.0f + tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)))), 0, out + (kt_row * d) + kt_c0);
        }
    } else {
        /*kt:generated*/
        for (int kt_col = kt_c0; kt_col < d; ++kt_col) {
        const float kt_h0 = ((int)get_global_id(1) < T) ? b[kt_col] : (float)0;
            #pragma unroll 8
        for (int kt_row = (int)get_global_id(1); kt_row < T; kt_row += (int)get_global_size(1)) {
            const float v = x[(kt_row * d + kt_col)] + kt_h0;
            out[(kt_row * d + kt_col)] = 0.5f * v * (1.0f + tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
        }

        }
    }

    

}

// kerntune: shape T9-d11008: BLOCK=128,VW=16,HOIST=False,RESTRICT=False,FAST_FLAGS=False from round 2, 3.625x
// launch: grid ['ceil_div(d, 128 * 16)', 'T'], block [128, 1], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
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
__kernel void bias_gelu(__global float*   out, __global const float*   x, __global const float*   b, const int T,
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
            #pragma unroll 8
        for (int kt_row = (int)get_global_id(1); kt_row < T; kt_row += (int)get_global_size(1)) {
            const float v = x[(kt_row * d + kt_col)] + b[kt_col];
            out[(kt_row * d + kt_col)] = 0.5f * v * (1.0f + tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
        }

        }
    }

    

}

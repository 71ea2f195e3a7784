// kerntune: shape T64-d2048: BLOCK=1024,UNROLL_0=8,UNROLL_1=0,RESTRICT=True,FAST_FLAGS=True from round 2, 3.289x
// launch: grid ['T'], block [1024], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 512 -> parameters BLOCK
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 0 loop-invariant load(s), 6 index offset(s) hoisted out of 4 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// GELU(tanh)-and-mul, one work-group per token: the group's work-items take the token's columns
// in turn, one element at a time (scalar loads at an offset from the token's start).
//   out[t, i] = gelu_tanh(x[t, i]) * x[t, d + i],  x is [T, 2d]
//   gelu_tanh(a) = a / 2 * (1 + tanh(sqrt(2 / pi) * (a + 0.044715 a^3)))
__kernel void gelu_tanh_and_mul_rows(__global float* restrict  out, __global const float* restrict  x, const int d)
{
    const int t = get_group_id(0);
    
    for (int kt_i0 = (get_local_id(0)) * 4; kt_i0 < d; kt_i0 += (get_local_size(0)) * 4) {
        if (kt_i0 + 4 <= d) {
            float kt_v_x[4];
            float kt_v_out[4];
            float kt_v_x1[4];
            const int kt_o0 = (t * 2 * d) + (kt_i0);
#pragma unroll 2
            for (int kt_v = 0; kt_v < 4; ++kt_v) kt_v_x[kt_v] = x[kt_o0 + kt_v];

            const int kt_o1 = (t * 2 * d) + (d) + (kt_i0);
#pragma unroll 8
            for (int kt_v = 0; kt_v < 4; ++kt_v) kt_v_x1[kt_v] = x[kt_o1 + kt_v];

#pragma unroll
            for (int kt_v = 0; kt_v < 4; ++kt_v)
                {
        const float a = kt_v_x[kt_v];
        const float inner = 0.7978845608028654f * (a + 0.044715f * a * a * a);
        kt_v_out[kt_v] = 0.5f * a * (1.0f + tanh(inner)) * kt_v_x1[kt_v];
    }
            const int kt_o2 = (t * d) + (kt_i0);
            for (int kt_v = 0; kt_v < 4; ++kt_v) out[kt_o2 + kt_v] = kt_v_out[kt_v];

        } else {
            /*kt:generated*/
            for (int i = kt_i0; i < d; ++i)
                {
        const float a = x[t * 2 * d + i];
        const float inner = 0.7978845608028654f * (a + 0.044715f * a * a * a);
        out[t * d + i] = 0.5f * a * (1.0f + tanh(inner)) * x[t * 2 * d + d + i];
    }
        }
    }

    
}

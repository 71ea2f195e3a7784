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
__kernel void gelu_tanh_and_mul_rows(__global float*  out, __global const float*  x, const int d)
{
    const int t = get_group_id(0);
    
    const int kt_o3 = (t * 2 * d);
    const int kt_o4 = (t * d);
    const int kt_o5 = (t * 2 * d) + (d);
    for (int i = get_local_id(0); i < d; i += get_local_size(0)) {
        const float a = x[kt_o3 + i];
        const float inner = 0.7978845608028654f * (a + 0.044715f * a * a * a);
        out[kt_o4 + i] = 0.5f * a * (1.0f + tanh(inner)) * x[kt_o5 + i];
    }

    
}

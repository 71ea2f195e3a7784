// GELU(tanh)-and-mul, one work-group per token: the group's work-items take the token's columns
// in turn, one element at a time (scalar loads at an offset from the token's start).
//   out[t, i] = gelu_tanh(x[t, i]) * x[t, d + i],  x is [T, 2d]
//   gelu_tanh(a) = a / 2 * (1 + tanh(sqrt(2 / pi) * (a + 0.044715 a^3)))
__kernel void gelu_tanh_and_mul_rows(__global float* out, __global const float* x, const int d)
{
    const int t = get_group_id(0);
    for (int i = get_local_id(0); i < d; i += get_local_size(0)) {
        const float a = x[t * 2 * d + i];
        const float inner = 0.7978845608028654f * (a + 0.044715f * a * a * a);
        out[t * d + i] = 0.5f * a * (1.0f + tanh(inner)) * x[t * 2 * d + d + i];
    }
}

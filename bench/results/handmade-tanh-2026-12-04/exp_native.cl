// out[i] = gelu(x[i]) with the tanh approximation:
//   gelu(x) = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// One work-item per element.

float gelu(float x)
{
    const float k = 0.7978845608f;     // sqrt(2 / pi)
    float inner = k * (x + 0.044715f * x * x * x);
    float e = native_exp(-2.0f * fabs(inner));
    float t = copysign((1.0f - e) / (1.0f + e), inner);
    return 0.5f * x * (1.0f + t);
}

__kernel void gelu_tanh(__global float* out, __global const float* x, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        out[i] = gelu(x[i]);
    }
}

// kerntune: general configuration BLOCK=1024,EPT=1,RESTRICT=False,FAST_FLAGS=False from round 2, 4.406x geomean over the original
// launch: grid ['ceil_div(n, 1024 * 1)'], block [1024], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 512 -> parameters BLOCK
//   elements-per-thread: gelu_tanh: the 1 elements per thread of an earlier round as a parameter again
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   elements-per-thread: gelu_tanh: EPT elements per thread, grid divided by EPT
//   restrict: restrict on 2 pointer parameter(s)
//   tanh-exp: 1 call(s) of tanh may go through exp
//   compiler-flags: -cl-fast-relaxed-math as a parameter

#define KT_TANH(t) tanh(t)
// out[i] = gelu(x[i]) with the tanh approximation:
//   gelu(x) = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// One work-item per element.

float gelu(float x)
{
    const float k = 0.7978845608f;     // sqrt(2 / pi)
    float inner = k * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + KT_TANH(inner));
}

__kernel void gelu_tanh(__global float*   out, __global const float*   x, const int n)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 1 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 1; ++kt_e) {
        const int i = kt_first + (int)kt_e * (int)get_local_size(0);
        if (i < n) {
        out[i] = gelu(x[i]);
    }
    }
}

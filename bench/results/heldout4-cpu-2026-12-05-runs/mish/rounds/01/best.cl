// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   elements-per-thread: mish: EPT elements per thread, grid divided by EPT
//   restrict: restrict on 2 pointer parameter(s)
//   fast-math: 1 call(s) of exp may use intrinsics
//   tanh-exp: 1 call(s) of tanh may go through exp
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Mish activation, out[i] = x[i] * tanh(softplus(x[i])), softplus(x) = log(1 + exp(x)).
// Above 20, softplus(x) is x to fp32 precision (and exp would grow towards overflow), so the
// helper returns x there, as PyTorch's softplus does with its default threshold.
// One work-item per element.
float softplus(float v)
{
    if (v > 20.0f)
        return v;
    return log1p(exp(v));
}

__kernel void mish(__global float*  out, __global const float*  x, const int n)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 1 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 1; ++kt_e) {
        const int i = kt_first + (int)kt_e * (int)get_local_size(0);
        if (i < n) {
        float v = x[i];
        out[i] = v * tanh(softplus(v));
    }
    }
}

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   elements-per-thread: scale_add_clamp: EPT elements per thread, grid divided by EPT
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// out[i] = clamp(alpha * x[i] + beta * y[i], lo, hi) over a flat array. One work-item per element.
__kernel void scale_add_clamp(__global float* restrict out,
                              __global const float* restrict x,
                              __global const float* restrict y,
                              float alpha, float beta, float lo, float hi,
                              int n)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 8 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 8; ++kt_e) {
        const int i = kt_first + (int)kt_e * (int)get_local_size(0);
        if (i < n) {
        float v = alpha * x[i] + beta * y[i];
        out[i] = clamp(v, lo, hi);
    }
    }
}

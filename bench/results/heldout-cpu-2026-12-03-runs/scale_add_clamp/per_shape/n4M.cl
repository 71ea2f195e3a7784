// kerntune: shape n4M: BLOCK=32,EPT=1,RESTRICT=False,FAST_FLAGS=False from round 1, 3.259x
// launch: grid ['ceil_div(n, 32 * 1)'], block [32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   elements-per-thread: scale_add_clamp: EPT elements per thread, grid divided by EPT
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// out[i] = clamp(alpha * x[i] + beta * y[i], lo, hi) over a flat array. One work-item per element.
__kernel void scale_add_clamp(__global float*  out,
                              __global const float*  x,
                              __global const float*  y,
                              float alpha, float beta, float lo, float hi,
                              int n)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 1 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 1; ++kt_e) {
        const int i = kt_first + (int)kt_e * (int)get_local_size(0);
        if (i < n) {
        float v = alpha * x[i] + beta * y[i];
        out[i] = clamp(v, lo, hi);
    }
    }
}

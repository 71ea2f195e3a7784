// out[i] = clamp(alpha * x[i] + beta * y[i], lo, hi) over a flat array. One work-item per element.
__kernel void scale_add_clamp(__global float* out,
                              __global const float* x,
                              __global const float* y,
                              float alpha, float beta, float lo, float hi,
                              int n)
{
    int i = get_global_id(0);
    if (i < n) {
        float v = alpha * x[i] + beta * y[i];
        out[i] = clamp(v, lo, hi);
    }
}

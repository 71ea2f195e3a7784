// An element-wise polynomial written for tests: one work-item per element, a bounds check, Horner's
// rule over the coefficients (compute-bound, so a run does not stop at the memory roofline).
//   out[i] = c[0] + c[1] x[i] + ... + c[degree] x[i]^degree
__kernel void poly(__global float* out, __global const float* c, __global const float* x, const int n,
                   const int degree)
{
    const int i = get_global_id(0);
    if (i < n) {
        const float v = x[i];
        float acc = c[degree];
        for (int k = degree - 1; k >= 0; --k)
            acc = acc * v + c[k];
        out[i] = acc;
    }
}

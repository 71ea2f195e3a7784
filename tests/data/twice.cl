// out = 2 * x: each element read once, then written (right in place as apart)
__kernel void twice(__global float *out, __global const float *x, int n) {
    int i = get_global_id(0);
    if (i < n) out[i] = 2.0f * x[i];
}

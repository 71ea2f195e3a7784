// out = 2 * x apart, but 4 * x when out is x (in place): x is read again after out was written
// (apart: 2x + (2x - 2x); in place: x becomes 2x, then 2x + (2 * 2x - 2x))
__kernel void twice(__global float *out, __global const float *x, int n) {
    int i = get_global_id(0);
    if (i < n) {
        out[i] = 2.0f * x[i];
        out[i] += 2.0f * x[i] - out[i];
    }
}

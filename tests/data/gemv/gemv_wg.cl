// The same y = A x, rewritten: each work-group of 256 takes 256 rows, one after the other; for each
// row its work-items sum every 256th term (coalesced reads) and a tree in local memory adds the 256
// partial sums. Correct, but it adds the terms in another order than gemv.cl.
#define WG 256
__kernel void gemv(__global float *y, __global const float *A, __global const float *x,
                   const int m, const int k) {
    __local float part[WG];
    int lid = get_local_id(0);
    int first = get_group_id(0) * WG;
    for (int r = 0; r < WG && first + r < m; ++r) {
        int row = first + r;
        float acc = 0.0f;
        for (int j = lid; j < k; j += WG)
            acc += A[(size_t)row * k + j] * x[j];
        part[lid] = acc;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = WG / 2; s > 0; s >>= 1) {
            if (lid < s) part[lid] += part[lid + s];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0) y[row] = part[0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

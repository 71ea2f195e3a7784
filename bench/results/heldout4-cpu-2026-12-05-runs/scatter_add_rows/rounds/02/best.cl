// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 512 -> parameters BLOCK
//   elements-per-thread: scatter_add_rows: the 1 elements per thread of an earlier round as a parameter again
//   restrict: restrict on 4 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   elements-per-thread: scatter_add_rows: EPT elements per thread, grid divided by EPT
//   restrict: restrict on 4 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Scatter-add of rows (index_add / the backward of an embedding lookup):
//   out[idx[i]][d] += src[i][d]  for every i < n, d < dim,
// added to what out already holds. Several i may share an index, so the additions are atomic.
// OpenCL 1.2 has no atomic float add: it is a compare-and-swap loop on the value's bits.
// One work-item per (i, d), flat 1-D index split by / and %.
void atomic_add_float(volatile __global float*   p, float v)
{
    volatile __global unsigned int* bits = (volatile __global unsigned int*)p;
    unsigned int expected = atomic_or(bits, 0u);     // an atomic read of the current value
    while (1) {
        unsigned int desired = as_uint(as_float(expected) + v);
        unsigned int seen = atomic_cmpxchg(bits, expected, desired);
        if (seen == expected)
            break;
        expected = seen;
    }
}

__kernel void scatter_add_rows(__global float*   out, __global const float*   src, __global const int*   idx,
                               const int n, const int dim)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 2 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 2; ++kt_e) {
        const int g = kt_first + (int)kt_e * (int)get_local_size(0);
        if (g < n * dim) {
        int i = g / dim;
        int d = g % dim;
        atomic_add_float(&out[idx[i] * dim + d], src[i * dim + d]);
    }
    }
}

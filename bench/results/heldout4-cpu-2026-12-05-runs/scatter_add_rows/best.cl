// kerntune: no candidate beat the original; this is the original kernel
// launch: grid ['ceil_div(n * dim, 256)'], block [256], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Scatter-add of rows (index_add / the backward of an embedding lookup):
//   out[idx[i]][d] += src[i][d]  for every i < n, d < dim,
// added to what out already holds. Several i may share an index, so the additions are atomic.
// OpenCL 1.2 has no atomic float add: it is a compare-and-swap loop on the value's bits.
// One work-item per (i, d), flat 1-D index split by / and %.
void atomic_add_float(volatile __global float* p, float v)
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

__kernel void scatter_add_rows(__global float* out, __global const float* src, __global const int* idx,
                               const int n, const int dim)
{
    int g = get_global_id(0);
    if (g < n * dim) {
        int i = g / dim;
        int d = g % dim;
        atomic_add_float(&out[idx[i] * dim + d], src[i * dim + d]);
    }
}

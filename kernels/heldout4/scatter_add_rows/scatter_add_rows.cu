// Scatter-add of rows (index_add / the backward of an embedding lookup):
//   out[idx[i]][d] += src[i][d]  for every i < n, d < dim,
// added to what out already holds. Several i may share an index, so the additions are atomic.
// One thread per (i, d), flat 1-D index split by / and %.
extern "C" __global__ void scatter_add_rows(float* out, const float* src, const int* idx, int n, int dim)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n * dim) {
        int i = g / dim;
        int d = g % dim;
        atomicAdd(&out[idx[i] * dim + d], src[i * dim + d]);
    }
}

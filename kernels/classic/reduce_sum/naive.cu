// Naive sum reduction (Harris's first kernel): out[0] += sum of uint32 x[0..n), exact.
// Each tree loads one element per thread into shared memory and halves with interleaved addressing,
// the divergent `tid % (2*s) == 0` form; thread 0 adds the block's result to out with one atomicAdd.
// The launch (spec.yaml) is shared with optimized.cu: a block of 256 threads per 256 * 8 elements,
// so a block runs that tree 8 times, on the 256-element chunks blockIdx.x + c * gridDim.x (a grid-stride
// loop over chunks), and thread 0 adds up the 8 results. Same algorithm as
// templates/classic/reduce_sum.cu.j2 at its baseline.
extern "C" __global__ void reduce_sum(unsigned int* out, const unsigned int* x, int n)
{
    __shared__ unsigned int partial[256];
    const unsigned int tid = threadIdx.x;
    const unsigned int count = (unsigned int)n;
    unsigned int total = 0;                                     // thread 0: sum of this block's trees
    for (unsigned int vb = blockIdx.x; vb * 256u < count; vb += gridDim.x) {
        const unsigned int i = vb * 256u + tid;
        partial[tid] = i < count ? x[i] : 0u;
        __syncthreads();
        for (unsigned int s = 1; s < 256; s *= 2) {
            if (tid % (2 * s) == 0)
                partial[tid] += partial[tid + s];
            __syncthreads();
        }
        if (tid == 0)
            total += partial[0];
    }
    if (tid == 0)
        atomicAdd(out, total);
}

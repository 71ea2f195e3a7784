// Optimized sum reduction: out[0] += sum of uint32 x[0..n), exact.
// 1. Several elements per thread: each thread first adds 8 elements spaced one grid apart (coalesced,
//    the 8 loads unrolled and independent; an outer grid-stride loop keeps any grid size correct).
// 2. Sequential addressing in shared memory (tid < s, no divergence inside warps, no bank conflicts)
//    down to 64 partials.
// 3. The first warp finishes with register shuffles (__shfl_down_sync), no shared memory or barriers;
//    thread 0 adds the block's sum to out with one atomicAdd.
// Same algorithm as templates/classic/reduce_sum.cu.j2 with LOAD=stride, TREE=sequential, FINAL=shuffle,
// BLOCK=256, EPT=8.
#define BLOCK 256
#define EPT 8

extern "C" __global__ void __launch_bounds__(BLOCK) reduce_sum(unsigned int* out, const unsigned int* x, int n)
{
    __shared__ unsigned int partial[BLOCK];
    const unsigned int tid = threadIdx.x;
    const unsigned int count = (unsigned int)n;
    const unsigned int gsize = gridDim.x * BLOCK;
    unsigned int acc = 0;
    for (unsigned int base = blockIdx.x * BLOCK + tid; base < count; base += EPT * gsize) {
#pragma unroll
        for (unsigned int c = 0; c < EPT; ++c) {
            const unsigned int i = base + c * gsize;
            if (i < count)
                acc += x[i];
        }
    }
    partial[tid] = acc;
    __syncthreads();
#pragma unroll
    for (unsigned int s = BLOCK / 2; s > 32; s >>= 1) {
        if (tid < s)
            partial[tid] += partial[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        unsigned int v = partial[tid] + partial[tid + 32];
        v += __shfl_down_sync(0xffffffffu, v, 16);
        v += __shfl_down_sync(0xffffffffu, v, 8);
        v += __shfl_down_sync(0xffffffffu, v, 4);
        v += __shfl_down_sync(0xffffffffu, v, 2);
        v += __shfl_down_sync(0xffffffffu, v, 1);
        if (tid == 0)
            atomicAdd(out, v);
    }
}

// counts[b] += #{i : data[i] == b}, 256 bins over bytes. Optimized: each block
// builds a private histogram in shared memory (shared atomics, contended only
// within the block), reading 4 bytes per load, then adds each non-empty bin to the
// global histogram once: at most 256 global atomics per block instead of one per
// element. Same grid-stride launch as the naive kernel.
#define BINS 256

extern "C" __global__ void histogram(unsigned int* __restrict__ counts, const unsigned char* __restrict__ data, int n)
{
    __shared__ unsigned int hist[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        hist[b] = 0u;
    __syncthreads();

    const int stride = gridDim.x * blockDim.x;
    const int gid = blockIdx.x * blockDim.x + threadIdx.x;
    int vec_end = 0;                                       // elements [0, vec_end) are read 4 at a time
    if (((unsigned long long)data & 3ull) == 0ull) {      // uchar4 loads need 4-byte alignment
        const uchar4* data4 = (const uchar4*)data;
        const int n4 = n >> 2;
        for (int i = gid; i < n4; i += stride) {
            const uchar4 v = data4[i];
            atomicAdd(&hist[v.x], 1u);
            atomicAdd(&hist[v.y], 1u);
            atomicAdd(&hist[v.z], 1u);
            atomicAdd(&hist[v.w], 1u);
        }
        vec_end = n4 << 2;
    }
    for (int i = vec_end + gid; i < n; i += stride)        // the tail (or everything when unaligned)
        atomicAdd(&hist[data[i]], 1u);
    __syncthreads();

    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        const unsigned int c = hist[b];
        if (c)
            atomicAdd(&counts[b], c);
    }
}

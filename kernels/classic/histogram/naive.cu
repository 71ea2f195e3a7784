// counts[b] += #{i : data[i] == b}, 256 bins over bytes. Naive: a grid-stride loop
// in which every element is one atomic add on the global histogram, so every
// thread of the grid contends for the same 256 counters.
extern "C" __global__ void histogram(unsigned int* __restrict__ counts, const unsigned char* __restrict__ data, int n)
{
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&counts[data[i]], 1u);
}

// counts[b] += #{i : data[i] == b}, 256 bins over bytes. Optimized: each
// work-group builds a private histogram in local memory (local atomics, contended
// only within the group), reading 4 bytes per load (vload4 needs only byte
// alignment), then adds each non-empty bin to the global histogram once: at most
// 256 global atomics per group instead of one per element. Same grid-stride
// launch as the naive kernel.
#define BINS 256

__kernel void histogram(__global uint* restrict counts, __global const uchar* restrict data, const int n)
{
    __local uint hist[BINS];
    const int lid = get_local_id(0), threads = get_local_size(0);
    for (int b = lid; b < BINS; b += threads)
        hist[b] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);

    const int stride = get_num_groups(0) * threads;
    const int gid = get_group_id(0) * threads + lid;
    const int n4 = n >> 2;
    for (int i = gid; i < n4; i += stride) {
        const uchar4 v = vload4(i, data);
        atomic_inc(&hist[v.x]);
        atomic_inc(&hist[v.y]);
        atomic_inc(&hist[v.z]);
        atomic_inc(&hist[v.w]);
    }
    for (int i = (n4 << 2) + gid; i < n; i += stride)      // the tail: at most 3 elements
        atomic_inc(&hist[data[i]]);
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int b = lid; b < BINS; b += threads) {
        const uint c = hist[b];
        if (c)
            atomic_add(&counts[b], c);
    }
}

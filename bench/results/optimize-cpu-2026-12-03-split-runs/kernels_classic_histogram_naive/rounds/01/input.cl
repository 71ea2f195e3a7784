// counts[b] += #{i : data[i] == b}, 256 bins over bytes. Naive: a grid-stride loop
// in which every element is one atomic add on the global histogram, so every
// work-item of the grid contends for the same 256 counters.
__kernel void histogram(__global uint* restrict counts, __global const uchar* restrict data, const int n)
{
    const int stride = get_num_groups(0) * get_local_size(0);
    for (int i = get_group_id(0) * get_local_size(0) + get_local_id(0); i < n; i += stride)
        atomic_inc(&counts[data[i]]);
}

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   privatize-atomics: atomics on counts[256] privatized per block
//   unroll: unroll pragmas on 1 loop(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// counts[b] += #{i : data[i] == b}, 256 bins over bytes. Naive: a grid-stride loop
// in which every element is one atomic add on the global histogram, so every
// work-item of the grid contends for the same 256 counters.
__kernel void histogram(__global uint* restrict counts, __global const uchar* restrict data, const int n)
{
    __local uint kt_priv_counts[256];
    /*kt:generated*/
    for (int kt_b = get_local_id(0); kt_b < (int)(sizeof(kt_priv_counts) / sizeof(kt_priv_counts[0])); kt_b += get_local_size(0)) kt_priv_counts[kt_b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    const int stride = get_num_groups(0) * get_local_size(0);
#pragma unroll 8
    for (int i = get_group_id(0) * get_local_size(0) + get_local_id(0); i < n; i += stride)
        atomic_inc(&kt_priv_counts[data[i]]);
    barrier(CLK_LOCAL_MEM_FENCE);
    /*kt:generated*/
    for (int kt_b = get_local_id(0); kt_b < (int)(sizeof(kt_priv_counts) / sizeof(kt_priv_counts[0])); kt_b += get_local_size(0))
        if (kt_priv_counts[kt_b] != 0) atomic_add(&counts[kt_b], kt_priv_counts[kt_b]);

}

// Naive sum reduction: out[0] += sum of uint32 x[0..n), exact. Each tree loads one element per
// work-item into local memory and halves with interleaved addressing (the divergent
// `tid % (2*s) == 0` form); work-item 0 adds the group's result to out with one atomic_add.
// The launch (spec.yaml) is shared with optimized.cl: 256 work-items per 256 * 8 elements, so a
// group runs the tree 8 times, on the chunks get_group_id(0) + c * get_num_groups(0). Twin of naive.cu.
__kernel void reduce_sum(__global uint* out, __global const uint* x, const int n)
{
    __local uint partial[256];
    const uint tid = get_local_id(0);
    const uint count = (uint)n;
    uint total = 0;                                             // work-item 0: sum of this group's trees
    for (uint vb = get_group_id(0); vb * 256u < count; vb += get_num_groups(0)) {
        const uint i = vb * 256u + tid;
        partial[tid] = i < count ? x[i] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint s = 1; s < 256; s *= 2) {
            if (tid % (2 * s) == 0)
                partial[tid] += partial[tid + s];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (tid == 0)
            total += partial[0];
    }
    if (tid == 0)
        atomic_add(out, total);
}

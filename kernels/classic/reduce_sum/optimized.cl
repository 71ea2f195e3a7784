// Optimized sum reduction: out[0] += sum of uint32 x[0..n), exact. Twin of optimized.cu, in OpenCL C 1.2:
// 1. each work-item first adds 8 elements spaced one grid apart (unrolled, independent loads; an outer
//    grid-stride loop keeps any grid size correct);
// 2. sequential addressing in local memory (tid < s) down to 64 partials;
// 3. no warp shuffles in OpenCL C 1.2, and the CPU device runs no work-items in lockstep, so instead of
//    six more barrier steps work-item 0 adds the last 64 partials in one unrolled run (four independent
//    sums) and adds the group's sum to out with one atomic_add.
#define BLOCK 256
#define EPT 8

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
void reduce_sum(__global uint* out, __global const uint* x, const int n)
{
    __local uint partial[BLOCK];
    const uint tid = get_local_id(0);
    const uint count = (uint)n;
    const uint gsize = get_num_groups(0) * BLOCK;
    uint acc = 0;
    for (uint base = get_group_id(0) * BLOCK + tid; base < count; base += EPT * gsize) {
#pragma unroll
        for (uint c = 0; c < EPT; ++c) {
            const uint i = base + c * gsize;
            if (i < count)
                acc += x[i];
        }
    }
    partial[tid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (uint s = BLOCK / 2; s > 32; s >>= 1) {
        if (tid < s)
            partial[tid] += partial[tid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (tid == 0) {
        uint v0 = 0, v1 = 0, v2 = 0, v3 = 0;
#pragma unroll
        for (int t = 0; t < 64; t += 4) {
            v0 += partial[t];
            v1 += partial[t + 1];
            v2 += partial[t + 2];
            v3 += partial[t + 3];
        }
        atomic_add(out, (v0 + v1) + (v2 + v3));
    }
}

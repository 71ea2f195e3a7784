// kerntune: shape 64K: BLOCK=512,FAST_FLAGS=True from round 2, 4.413x
// launch: grid ['ceil_div(n, 2048)'], block [512], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 1024 -> parameters BLOCK; 3 literal(s) rewritten
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK; 4 literal(s) rewritten
//   shuffle-reduction: 1 shared-memory tree(s) may reduce with sub-group reductions
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

#ifndef KT_HAVE_REDUCE_SUM_UINT
#define KT_HAVE_REDUCE_SUM_UINT 1
inline void kt_block_reduce_sum_uint(__local uint* sh, uint tid)
{
    // each work-item's value is in sh[tid]; leaves the group's sum in sh[0] for every work-item
    uint v = sh[tid];
    barrier(CLK_LOCAL_MEM_FENCE);
    v = sub_group_reduce_add(v);
    if (get_sub_group_local_id() == 0) sh[get_sub_group_id()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid == 0) {
        uint t = sh[0];
        for (uint k = 1; k < get_num_sub_groups(); ++k) t = t + sh[k];
        sh[0] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#endif

// Naive sum reduction: out[0] += sum of uint32 x[0..n), exact. Each tree loads one element per
// work-item into local memory and halves with interleaved addressing (the divergent
// `tid % (2*s) == 0` form); work-item 0 adds the group's result to out with one atomic_add.
// The launch (spec.yaml) is shared with optimized.cl: 256 work-items per 256 * 8 elements, so a
// group runs the tree 8 times, on the chunks get_group_id(0) + c * get_num_groups(0). Twin of naive.cu.
__kernel void reduce_sum(__global uint* restrict out, __global const uint* restrict x, const int n)
{
    __local uint partial[512];
    const uint tid = get_local_id(0);
    const uint count = (uint)n;
    uint total = 0;                                             // work-item 0: sum of this group's trees
#pragma unroll 4
    for (uint vb = get_group_id(0); vb * 512 < count; vb += get_num_groups(0)) {
        const uint i = vb * 512 + tid;
        partial[tid] = i < count ? x[i] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        
        kt_block_reduce_sum_uint(partial, get_local_id(0));

        
        if (tid == 0)
            total += partial[0];
    }
    if (tid == 0)
        atomic_add(out, total);
}

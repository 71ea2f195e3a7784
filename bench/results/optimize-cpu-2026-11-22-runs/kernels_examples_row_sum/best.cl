// kerntune: general configuration BLOCK=512,REDUCE_0='tree',VEC=1,UNROLL_0=0,UNROLL_1=0,RESTRICT=False,FAST_FLAGS=True from round 1, 1.021x geomean over the original
// launch: grid ['rows'], block [512], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK; 1 literal(s) rewritten
//   shuffle-reduction: 1 shared-memory tree(s) may reduce with sub-group reductions
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

#ifndef KT_HAVE_REDUCE_SUM_FLOAT
#define KT_HAVE_REDUCE_SUM_FLOAT 1
inline void kt_block_reduce_sum_float(__local float* sh, uint tid)
{
    // each work-item's value is in sh[tid]; leaves the group's sum in sh[0] for every work-item
    float v = sh[tid];
    barrier(CLK_LOCAL_MEM_FENCE);
    v = sub_group_reduce_add(v);
    if (get_sub_group_local_id() == 0) sh[get_sub_group_id()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid == 0) {
        float t = sh[0];
        for (uint k = 1; k < get_num_sub_groups(); ++k) t = t + sh[k];
        sh[0] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#endif
// out[r] = sum_c x[r, c]. One work-group of 256 work-items per row: each sums a
// strided slice of the row, then the group reduces in local memory.
__kernel void row_sum(__global float*  out, __global const float*  x, const int rows, const int cols)
{
    __local float partial[512];
    const int r = get_group_id(0);
    const int t = get_local_id(0);
    const int threads = get_local_size(0);
    __global const float* row = x + (long)r * cols;
    float acc = 0.0f;
    
    for (int c = t; c < cols; c += threads)
        acc += row[c];

    
    partial[t] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    
    for (int stride = threads / 2; stride > 0; stride /= 2) {
        if (t < stride)
            partial[t] += partial[t + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    
    if (t == 0)
        out[r] = partial[0];
}

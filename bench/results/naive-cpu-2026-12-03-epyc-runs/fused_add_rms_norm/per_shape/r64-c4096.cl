// kerntune: shape r64-c4096: BLOCK=512,VEC=1,HOIST=False,UNROLL_0=8,UNROLL_1=0,RESTRICT=False,FAST_MATH=False,FAST_FLAGS=False from round 2, 19.426x
// launch: grid ['rows'], block [512], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 512 -> parameters BLOCK
//   vectorize: 2 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 0 loop-invariant load(s), 7 index offset(s) hoisted out of 7 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   fast-math: 1 call(s) of rsqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   cooperative-rows: fused_add_rms_norm: a row per a warp or block instead of per thread; 2 loop(s) over the row, 1 cooperative reduction(s)
//   hoist-invariants: 0 loop-invariant load(s), 6 index offset(s) hoisted out of 6 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   fast-math: 3 call(s) of rsqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

#ifndef KT_HAVE_ROWS_GROUP_SUM_FLOAT
#define KT_HAVE_ROWS_GROUP_SUM_FLOAT 1
inline float kt_rows_group_sum_float(float v, __local float* sh)
{
    // the sum over the work-group, in every work-item (sh: one slot per sub-group)
    v = sub_group_reduce_add(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_local_id() == 0) sh[get_sub_group_id()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_id() == 0) {
        float t = 0;
        for (uint k = get_sub_group_local_id(); k < get_num_sub_groups(); k += get_sub_group_size())
            t = t + sh[k];
        t = sub_group_reduce_add(t);
        sub_group_barrier(CLK_LOCAL_MEM_FENCE);
        if (get_sub_group_local_id() == 0) sh[0] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return sh[0];
}
#endif
// Fused residual add + RMS norm, naive and in place: one work-item per row.
//   residual[r, :] = x[r, :] + residual[r, :];  x[r, :] = residual[r, :] * rsqrt(mean(residual[r, :]^2) + eps) * w
__kernel void fused_add_rms_norm(__global float*   x, __global float*   residual, __global const float*   w,
                                 const float eps, const int rows, const int cols)
{
    __local float kt_rows_sh_float[1024];
    const int kt_lane = (int)get_local_id(0);
    const int kt_lanes = (int)get_local_size(0);
    for (int r = (int)get_group_id(0); r < rows; r += (int)get_num_groups(0)) {
        float ss = 0.0f;
        
        for (int c = kt_lane; c < cols; c += kt_lanes) {
            const float v = x[r * cols + c] + residual[r * cols + c];
            residual[r * cols + c] = v;
            ss += v * v;
        }

        

        ss = kt_rows_group_sum_float(ss, kt_rows_sh_float);
        const float inv = rsqrt(ss / cols + eps);
        
        for (int c = kt_lane; c < cols; c += kt_lanes)
            x[r * cols + c] = residual[r * cols + c] * inv * w[c];

        

    }

}

// kerntune: shape r64-c4096: BLOCK=512,VEC=1,HOIST=False,UNROLL_0=0,UNROLL_1=8,FAST_MATH=True,FAST_FLAGS=False from round 2, 9.779x
// launch: grid ['rows'], block [512], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 32 -> parameters BLOCK
//   vectorize: 3 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 0 loop-invariant load(s), 7 index offset(s) hoisted out of 7 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   fast-math: 1 call(s) of sqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   cooperative-rows: layer_norm: a row per a warp or block instead of per thread; 3 loop(s) over the row, 2 cooperative reduction(s)
//   vector-accumulators: 1 serial sum(s) over consecutive elements taken VACC at a time
//   hoist-invariants: 0 loop-invariant load(s), 9 index offset(s) hoisted out of 9 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 4 pointer parameter(s)
//   fast-math: 3 call(s) of sqrt may use intrinsics
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
#ifndef KT_HAVE_VACC_HSUM
#define KT_HAVE_VACC_HSUM 1
#define KT_VACC_HSUM4(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#define KT_VACC_HSUM8(v) (KT_VACC_HSUM4((v).lo) + KT_VACC_HSUM4((v).hi))
#define KT_VACC_HSUM16(v) (KT_VACC_HSUM8((v).lo) + KT_VACC_HSUM8((v).hi))
#define KT_VACC_HSUM(n, v) KT_VACC_HSUM_(n, v)
#define KT_VACC_HSUM_(n, v) KT_VACC_HSUM##n(v)
#endif
// Layer norm, naive: one work-item per row, three passes over the row (mean, variance about the
// mean, the normalized write).
//   out[r, c] = (x[r, c] - mean_r) / sqrt(var_r + eps) * gamma[c] + beta[c]
__kernel void layer_norm(__global float* restrict out, __global const float* restrict x, __global const float* restrict gamma,
                         __global const float* restrict beta, const float eps, const int rows, const int cols)
{
    __local float kt_rows_sh_float[1024];
    const int kt_lane = (int)get_local_id(0);
    const int kt_lanes = (int)get_local_size(0);
    for (int r = (int)get_group_id(0); r < rows; r += (int)get_num_groups(0)) {
        float sum = 0.0f;
        
        for (int c = kt_lane; c < cols; c += kt_lanes)
            sum += x[r * cols + c];

        

        sum = kt_rows_group_sum_float(sum, kt_rows_sh_float);
        const float mean = sum / cols;
        float sq = 0.0f;
        
        for (int c = kt_lane; c < cols; c += kt_lanes) {
            const float d = x[r * cols + c] - mean;
            sq += d * d;
        }

        

        sq = kt_rows_group_sum_float(sq, kt_rows_sh_float);
        const float inv = 1.0f / native_sqrt(sq / cols + eps);
        
        for (int c = kt_lane; c < cols; c += kt_lanes)
            out[r * cols + c] = (x[r * cols + c] - mean) * inv * gamma[c] + beta[c];

        

    }

}

// kerntune: shape r256-c1024: BLOCK=64,HOIST=False,UNROLL_0=8,UNROLL_1=2,FAST_MATH=False,FAST_FLAGS=False from round 2, 2.790x
// launch: grid ['ceil_div(rows, max(1, 64 // 16))'], block [64], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 64 -> parameters BLOCK
//   hoist-invariants: 0 loop-invariant load(s), 2 index offset(s) hoisted out of 2 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   fast-math: 6 call(s) of exp, log may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   online-softmax: 1 maximum-then-sum-of-exponentials pair(s) of passes may fuse into one online pass
//   cooperative-rows: log_softmax: a row per a warp or block instead of per thread; 4 loop(s) over the row, 3 cooperative reduction(s)
//   vector-accumulators: 1 serial sum(s) over consecutive elements taken VACC at a time
//   hoist-invariants: 0 loop-invariant load(s), 12 index offset(s) hoisted out of 12 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   fast-math: 25 call(s) of exp, log may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

#ifndef KT_HAVE_ROWS_GROUP_MAX_FLOAT
#define KT_HAVE_ROWS_GROUP_MAX_FLOAT 1
inline float kt_rows_group_max_float(float v, __local float* sh)
{
    // the max over the work-group, in every work-item (sh: one slot per sub-group)
    v = sub_group_reduce_max(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_local_id() == 0) sh[get_sub_group_id()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_id() == 0) {
        float t = sh[0];
        for (uint k = get_sub_group_local_id(); k < get_num_sub_groups(); k += get_sub_group_size())
            t = max(t, sh[k]);
        t = sub_group_reduce_max(t);
        sub_group_barrier(CLK_LOCAL_MEM_FENCE);
        if (get_sub_group_local_id() == 0) sh[0] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return sh[0];
}
#endif
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
// Row log-softmax, naive and numerically stable: one work-item per row, three passes.
//   out[r, c] = x[r, c] - max_r - log(sum_c' exp(x[r, c'] - max_r))
__kernel void log_softmax(__global float* restrict out, __global const float* restrict x, const int rows, const int cols)
{
    const int kt_lane = (int)get_sub_group_local_id();
    const int kt_lanes = (int)get_sub_group_size();
    for (int r = (int)(get_group_id(0) * get_num_sub_groups() + get_sub_group_id()); r < rows; r += (int)(get_num_groups(0) * get_num_sub_groups())) {
        float m = -INFINITY;
        float s = 0.0f;
        /*kt:online m s*/
#pragma unroll 2
        for (int c = kt_lane; c < cols; c += kt_lanes) {
            const float kt_x = x[r * cols + c];
            const float kt_m = fmax(m, kt_x);
            s = (m == kt_m ? s : s * exp(m - kt_m)) + exp(kt_x - kt_m);
            m = kt_m;
        }

        { const float kt_m = sub_group_reduce_max(m); s = sub_group_reduce_add(m == kt_m ? s : s * exp(m - kt_m)); m = kt_m; }

        const float lse = m + log(s);
        for (int c = kt_lane; c < cols; c += kt_lanes)
            out[r * cols + c] = x[r * cols + c] - lse;

    }

}

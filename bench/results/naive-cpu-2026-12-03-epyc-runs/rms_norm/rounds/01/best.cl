// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   cooperative-rows: rms_norm: a row per a warp or block instead of per thread; 2 loop(s) over the row, 1 cooperative reduction(s)
//   vector-accumulators: 1 serial sum(s) over consecutive elements taken VACC at a time
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
#ifndef KT_HAVE_VACC_HSUM
#define KT_HAVE_VACC_HSUM 1
#define KT_VACC_HSUM4(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#define KT_VACC_HSUM8(v) (KT_VACC_HSUM4((v).lo) + KT_VACC_HSUM4((v).hi))
#define KT_VACC_HSUM16(v) (KT_VACC_HSUM8((v).lo) + KT_VACC_HSUM8((v).hi))
#define KT_VACC_HSUM(n, v) KT_VACC_HSUM_(n, v)
#define KT_VACC_HSUM_(n, v) KT_VACC_HSUM##n(v)
#endif
// RMS norm, naive: one work-item per row, two passes over the row (the sum of squares, then the
// scaled write).
//   out[r, c] = x[r, c] * rsqrt(mean(x[r, :]^2) + eps) * w[c]
__kernel void rms_norm(__global float* restrict out, __global const float* restrict x, __global const float* restrict w,
                       const float eps, const int rows, const int cols)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    float ss = 0.0f;
    
    {
        int kt_c0 = 0;
        float16 kt_vacc0 = (float16)(0);
        /*kt:generated*/
        for (; kt_c0 + 16 <= (cols); kt_c0 += 16)
            kt_vacc0 += vload16(0, x + (r * cols) + kt_c0) * vload16(0, x + (r * cols) + kt_c0);
        ss += KT_VACC_HSUM(16, kt_vacc0);
        /*kt:generated*/
        for (int c = kt_c0; c < cols; ++c)
            ss += x[r * cols + c] * x[r * cols + c];
    }

    
    const float inv = rsqrt(ss / cols + eps);
    const int kt_o1 = (r * cols);
    for (int c = 0; c < cols; ++c)
        out[kt_o1 + c] = x[kt_o1 + c] * inv * w[c];

}

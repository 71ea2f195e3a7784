// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   cooperative-rows: l2_normalize: a row per a warp or block instead of per thread; 2 loop(s) over the row, 1 cooperative reduction(s)
//   vector-accumulators: 1 serial sum(s) over consecutive elements taken VACC at a time
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
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
// Row L2 normalization, naive: one work-item per row, through row pointers.
//   out[r, :] = x[r, :] / max(||x[r, :]||, eps)
__kernel void l2_normalize(__global float*  out, __global const float*  x, const float eps, const int rows,
                           const int cols)
{
    __local float kt_rows_sh_float[1024];
    const int kt_lane = (int)get_local_id(0);
    const int kt_lanes = (int)get_local_size(0);
    for (int r = (int)get_group_id(0); r < rows; r += (int)get_num_groups(0)) {
        __global const float* xr = x + (long)r * cols;
        __global float* yr = out + (long)r * cols;
        float ss = 0.0f;
        for (int c = kt_lane; c < cols; c += kt_lanes)
            ss += xr[c] * xr[c];
        ss = kt_rows_group_sum_float(ss, kt_rows_sh_float);
        const float inv = 1.0f / fmax(native_sqrt(ss), eps);
        for (int c = kt_lane; c < cols; c += kt_lanes)
            yr[c] = xr[c] * inv;
    }

}

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   cooperative-rows: row_argmax: a row per a warp or block instead of per thread; 1 loop(s) over the row, 1 cooperative reduction(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
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
#ifndef KT_HAVE_ROWS_GROUP_MIN_FLOAT
#define KT_HAVE_ROWS_GROUP_MIN_FLOAT 1
inline float kt_rows_group_min_float(float v, __local float* sh)
{
    // the min over the work-group, in every work-item (sh: one slot per sub-group)
    v = sub_group_reduce_min(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_local_id() == 0) sh[get_sub_group_id()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_id() == 0) {
        float t = sh[0];
        for (uint k = get_sub_group_local_id(); k < get_num_sub_groups(); k += get_sub_group_size())
            t = min(t, sh[k]);
        t = sub_group_reduce_min(t);
        sub_group_barrier(CLK_LOCAL_MEM_FENCE);
        if (get_sub_group_local_id() == 0) sh[0] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return sh[0];
}
#endif
#ifndef KT_HAVE_ROWS_GROUP_MAX_INT
#define KT_HAVE_ROWS_GROUP_MAX_INT 1
inline int kt_rows_group_max_int(int v, __local int* sh)
{
    // the max over the work-group, in every work-item (sh: one slot per sub-group)
    v = sub_group_reduce_max(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_local_id() == 0) sh[get_sub_group_id()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_id() == 0) {
        int t = sh[0];
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
#ifndef KT_HAVE_ROWS_GROUP_MIN_INT
#define KT_HAVE_ROWS_GROUP_MIN_INT 1
inline int kt_rows_group_min_int(int v, __local int* sh)
{
    // the min over the work-group, in every work-item (sh: one slot per sub-group)
    v = sub_group_reduce_min(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_local_id() == 0) sh[get_sub_group_id()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_id() == 0) {
        int t = sh[0];
        for (uint k = get_sub_group_local_id(); k < get_num_sub_groups(); k += get_sub_group_size())
            t = min(t, sh[k]);
        t = sub_group_reduce_min(t);
        sub_group_barrier(CLK_LOCAL_MEM_FENCE);
        if (get_sub_group_local_id() == 0) sh[0] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return sh[0];
}
#endif
// Index of the largest element of each row (the first one on ties). One work-item per row.
__kernel void row_argmax(__global int* restrict out,
                         __global const float* restrict x,
                         int rows, int cols)
{
    __local float kt_rows_sh_float[1024];
    __local int kt_rows_sh_int[1024];
    const int kt_lane = (int)get_local_id(0);
    const int kt_lanes = (int)get_local_size(0);
    for (int row = (int)get_group_id(0); row < rows; row += (int)get_num_groups(0)) {
        __global const float* p = x + row * cols;
        float best = p[0];
        int best_idx = 0;
        for (int c = (1) + kt_lane; c < cols; c += kt_lanes) {
            if (p[c] > best) {
                best = p[c];
                best_idx = c;
            }
        }
        { const float kt_m = kt_rows_group_max_float(best, kt_rows_sh_float); best_idx = kt_rows_group_min_int((best == kt_m || kt_m != kt_m) ? best_idx : (int)0x7fffffff, kt_rows_sh_int); best = kt_m; }
        if (kt_lane == 0) { out[row] = best_idx; }
    }

}

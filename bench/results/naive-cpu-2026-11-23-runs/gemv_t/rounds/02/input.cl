// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   cooperative-rows: gemv_t: a row per warp or block instead of per thread; 1 loop(s) over the row, 1 cooperative reduction(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
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
// Transposed matrix-vector product, naive: one work-item per column of A (row-major), a dot
// product down the column (neighbouring work-items read neighbouring elements).
//   y[c] = sum_r A[r, c] * x[r]
__kernel void gemv_t(__global float* restrict y, __global const float* restrict A, __global const float* restrict x, const int rows,
                     const int cols)
{
    const int c = get_global_id(0);
    if (c >= cols) return;
    float acc = 0.0f;
#pragma unroll 2
    for (int r = 0; r < rows; ++r)
        acc += A[r * cols + c] * x[r];
    y[c] = acc;

}

// kerntune: general configuration BLOCK=1024,UNROLL_0=4,UNROLL_1=0,FAST_FLAGS=True from round 2, 1.296x geomean over the original
// launch: grid ['ceil_div(rows, max(1, 1024 // 16))'], block [1024], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 512 -> parameters BLOCK
//   unroll: unroll pragmas on 2 loop(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   cooperative-rows: spmv_csr: a row per a warp or block instead of per thread; 1 loop(s) over the row, 1 cooperative reduction(s)
//   unroll: unroll pragmas on 2 loop(s)
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
// y = A x, A in CSR form, fp32. Naive (CSR-scalar): one work-item per row walks
// its row serially. Neighbouring work-items read different rows, so the reads of
// vals and col_idx are scattered, and long rows hold up their neighbours.
__kernel void spmv_csr(__global float* restrict y, __global const int* restrict row_ptr,
                       __global const int* restrict col_idx, __global const float* restrict vals,
                       __global const float* restrict x, const int rows)
{
    const int kt_lane = (int)get_sub_group_local_id();
    const int kt_lanes = (int)get_sub_group_size();
#pragma unroll 4
    for (int row = (int)(get_group_id(0) * get_num_sub_groups() + get_sub_group_id()); row < rows; row += (int)(get_num_groups(0) * get_num_sub_groups())) {
        const int end = row_ptr[row + 1];
        float sum = 0.0f;
        for (int k = (row_ptr[row]) + kt_lane; k < end; k += kt_lanes)
            sum += vals[k] * x[col_idx[k]];
        sum = sub_group_reduce_add(sum);
        if (kt_lane == 0) { y[row] = sum; }
    }

}

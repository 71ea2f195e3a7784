// kerntune: shape 16k-16perrow: BLOCK=128,ROWS='thread',UNROLL_0=8,UNROLL_1=4,FAST_FLAGS=False from round 1, 1.105x
// launch: grid ['ceil_div(rows, 128)'], block [128], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
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
    const int row = get_group_id(0) * get_local_size(0) + get_local_id(0);
    if (row >= rows)
        return;
    const int end = row_ptr[row + 1];
    float sum = 0.0f;
#pragma unroll 8
    for (int k = row_ptr[row]; k < end; ++k)
        sum += vals[k] * x[col_idx[k]];
    y[row] = sum;

}

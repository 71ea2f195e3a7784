// kerntune: shape r256-c4096: BLOCK=32,EPT=1,RESTRICT=False,FAST_FLAGS=False from round 2, 4.354x
// launch: grid ['ceil_div(rows, 32 * 1)'], block [32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 64 -> parameters BLOCK
//   elements-per-thread: gemv: EPT elements per thread, grid divided by EPT
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   cooperative-rows: gemv: a row per a warp or block instead of per thread; 1 loop(s) over the row, 1 cooperative reduction(s)
//   vector-accumulators: 1 serial sum(s) over consecutive elements taken VACC at a time
//   hoist-invariants: 0 loop-invariant load(s), 3 index offset(s) hoisted out of 3 loop(s)
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
#ifndef KT_HAVE_VACC_HSUM
#define KT_HAVE_VACC_HSUM 1
#define KT_VACC_HSUM4(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#define KT_VACC_HSUM8(v) (KT_VACC_HSUM4((v).lo) + KT_VACC_HSUM4((v).hi))
#define KT_VACC_HSUM16(v) (KT_VACC_HSUM8((v).lo) + KT_VACC_HSUM8((v).hi))
#define KT_VACC_HSUM(n, v) KT_VACC_HSUM_(n, v)
#define KT_VACC_HSUM_(n, v) KT_VACC_HSUM##n(v)
#endif
// Matrix-vector product, naive: one work-item per row of A (row-major), a dot product over the row.
//   y[r] = sum_c A[r, c] * x[c]
__kernel void gemv(__global float*   y, __global const float*   A, __global const float*   x, const int rows,
                   const int cols)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 1 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 1; ++kt_e) {
        const int r = kt_first + (int)kt_e * (int)get_local_size(0);
        if (r < rows) {
        float acc = 0.0f;
        {
        int kt_c0 = 0;
        float8 kt_vacc0 = (float8)(0);
        /*kt:generated*/
        for (; kt_c0 + 8 <= (cols); kt_c0 += 8)
            kt_vacc0 += vload8(0, A + (r * cols) + kt_c0) * vload8(0, x + kt_c0);
        acc += KT_VACC_HSUM(8, kt_vacc0);
        /*kt:generated*/
        for (int c = kt_c0; c < cols; ++c)
            acc += A[r * cols + c] * x[c];
    }
        y[r] = acc;
        }
    }

}

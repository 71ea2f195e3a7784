// kerntune: general configuration BLOCK=32,VEC=1,UNROLL_0=2,UNROLL_1=2,RESTRICT=True,FAST_FLAGS=True from round 2, 1.371x geomean over the original
// launch: grid ['rows'], block [32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 1024 -> parameters BLOCK
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   cooperative-rows: row_dot: a row per warp or block instead of per thread; 1 loop(s) over the row, 1 cooperative reduction(s)
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
// Row-wise dot products of two matrices, naive: one work-item per row, through row pointers.
//   out[r] = sum_c a[r, c] * b[r, c]
__kernel void row_dot(__global float* restrict  out, __global const float* restrict  a, __global const float* restrict  b, const int rows,
                      const int cols)
{
    __local float kt_rows_sh_float[1024];
    const int kt_lane = (int)get_local_id(0);
    const int kt_lanes = (int)get_local_size(0);
    for (int r = (int)get_group_id(0); r < rows; r += (int)get_num_groups(0)) {
        __global const float* ar = a + (long)r * cols;
        __global const float* br = b + (long)r * cols;
        float acc = 0.0f;
        
        for (int c = kt_lane; c < cols; c += kt_lanes)
            acc += ar[c] * br[c];

        
        acc = kt_rows_group_sum_float(acc, kt_rows_sh_float);
        if (kt_lane == 0) { out[r] = acc; }
    }

}

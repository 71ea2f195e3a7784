// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 32 -> parameters BLOCK
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 0 loop-invariant load(s), 2 index offset(s) hoisted out of 2 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 64 -> parameters BLOCK
//   cooperative-rows: kl_div_rows: a row per a warp or block instead of per thread; 1 loop(s) over the row, 1 cooperative reduction(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   fast-math: 1 call(s) of log may use intrinsics
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
// Per-row KL divergence KL(p || q) with q given as log-probabilities, as in
// torch.nn.functional.kl_div(log_q, p, reduction="none").sum(dim=1):
//   out[r] = sum_c p[r][c] * (log p[r][c] - log_q[r][c])      (a term with p = 0 counts 0)
// One work-item per row, a serial loop over the columns.

float kl_term(float p, float log_q)
{
    if (p > 0.0f)
        return p * (native_log(p) - log_q);
    return 0.0f;
}

__kernel void kl_div_rows(__global float* restrict out,
                          __global const float* restrict p,
                          __global const float* restrict log_q,
                          int rows, int cols)
{
    __local float kt_rows_sh_float[1024];
    const int kt_lane = (int)get_local_id(0);
    const int kt_lanes = (int)get_local_size(0);
    for (int r = (int)get_group_id(0); r < rows; r += (int)get_num_groups(0)) {
        float acc = 0.0f;
        
        for (int c = kt_lane; c < cols; c += kt_lanes) {
            int i = r * cols + c;
            acc += kl_term(p[i], log_q[i]);
        }

        
        acc = kt_rows_group_sum_float(acc, kt_rows_sh_float);
        if (kt_lane == 0) { out[r] = acc; }
    }

}

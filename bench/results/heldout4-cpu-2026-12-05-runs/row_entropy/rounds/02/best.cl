// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 128 -> parameters BLOCK; 1 literal(s) rewritten
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 0 loop-invariant load(s), 2 index offset(s) hoisted out of 2 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   fast-math: 5 call(s) of log may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK; 1 literal(s) rewritten
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 0 loop-invariant load(s), 2 index offset(s) hoisted out of 2 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   fast-math: 5 call(s) of log may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Shannon entropy (in nats) of each row of positive weights, normalised to a distribution:
//   p[c] = x[r][c] / s,  s = sum_c x[r][c],  out[r] = -sum_c p[c] log p[c] = log(s) - t / s,
//   t = sum_c x[r][c] log x[r][c].
// One work-group of 256 per row: each work-item sums a strided slice of the row into s and t,
// then both sums are combined by a tree reduction in local memory; work-item 0 writes the result.
#define BLOCK   32

__kernel void row_entropy(__global float* restrict out, __global const float* restrict x, const int rows, const int cols)
{
    __local float s_sum[BLOCK];
    __local float t_sum[BLOCK];
    int r = get_group_id(0);
    int tid = get_local_id(0);

    float s = 0.0f;
    float t = 0.0f;
    
    
    const int kt_o1 = (r * cols);
    for (int c = tid; c < cols; c += BLOCK) {
        float v = x[kt_o1 + c];
        s += v;
        t += v * native_log(v);
    }

    

    
    s_sum[tid] = s;
    t_sum[tid] = t;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (tid < stride) {
            s_sum[tid] += s_sum[tid + stride];
            t_sum[tid] += t_sum[tid + stride];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (tid == 0)
        out[r] = native_log(s_sum[0]) - t_sum[0] / s_sum[0];
}

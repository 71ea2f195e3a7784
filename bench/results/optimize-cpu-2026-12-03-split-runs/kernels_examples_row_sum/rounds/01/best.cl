// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK; 1 literal(s) rewritten
//   shuffle-reduction: 1 shared-memory tree(s) may reduce with sub-group reductions
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// out[r] = sum_c x[r, c]. One work-group of 256 work-items per row: each sums a
// strided slice of the row, then the group reduces in local memory.
__kernel void row_sum(__global float* restrict out, __global const float* restrict x, const int rows, const int cols)
{
    __local float partial[256];
    const int r = get_group_id(0);
    const int t = get_local_id(0);
    const int threads = get_local_size(0);
    __global const float* row = x + (long)r * cols;
    float acc = 0.0f;
    
    for (int c = t; c < cols; c += threads)
        acc += row[c];

    
    partial[t] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    
    for (int stride = threads / 2; stride > 0; stride /= 2) {
        if (t < stride)
            partial[t] += partial[t + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    
    if (t == 0)
        out[r] = partial[0];
}

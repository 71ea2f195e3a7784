// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 64 -> parameters BLOCK
//   elements-per-thread: row_prefix_sum: EPT elements per thread, grid divided by EPT
//   hoist-invariants: 0 loop-invariant load(s), 1 index offset(s) hoisted out of 1 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Inclusive prefix sum along each row of a [rows, cols] matrix:
//   out[r][c] = x[r][0] + x[r][1] + ... + x[r][c]
// One work-item per row, running the sum serially.
__kernel void row_prefix_sum(__global float*  out,
                             __global const float*  x,
                             int rows, int cols)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 1 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 1; ++kt_e) {
        const int row = kt_first + (int)kt_e * (int)get_local_size(0);
        if (row < rows) {
        float running = 0.0f;
#pragma unroll 2
        for (int c = 0; c < cols; c++) {
        running += x[row * cols + c];
        out[row * cols + c] = running;
    }

        }
    }
}

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 64 -> parameters BLOCK
//   elements-per-thread: cummax_rows: EPT elements per thread, grid divided by EPT
//   hoist-invariants: 0 loop-invariant load(s), 1 index offset(s) hoisted out of 1 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Running (cumulative) maximum along each row: out[r][c] = max(x[r][0], ..., x[r][c]).
// One work-item per row walks its row left to right, keeping the maximum so far.
__kernel void cummax_rows(__global float* restrict out, __global const float* restrict x,
                          const int rows, const int cols)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 8 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 8; ++kt_e) {
        const int r = kt_first + (int)kt_e * (int)get_local_size(0);
        if (r < rows) {
        float best = x[r * cols];
#pragma unroll 2
        for (int c = 0; c < cols; c++) {
        float v = x[r * cols + c];
        if (v > best)
            best = v;
        out[r * cols + c] = best;
    }

        }
    }
}

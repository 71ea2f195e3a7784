// kerntune: general configuration BLOCK=128,UNROLL_0=4,UNROLL_1=8,FAST_FLAGS=False from round 2, 1.439x geomean over the original
// launch: grid ['ceil_div(rows, max(1, 128 // 16))'], block [128], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 512 -> parameters BLOCK
//   unroll: unroll pragmas on 2 loop(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 64 -> parameters BLOCK
//   cooperative-rows: row_prefix_sum: a row per a warp (a running sum: scanned across it) instead of per thread; 1 loop(s) over the row, 1 cooperative reduction(s)
//   hoist-invariants: 0 loop-invariant load(s), 1 index offset(s) hoisted out of 1 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Inclusive prefix sum along each row of a [rows, cols] matrix:
//   out[r][c] = x[r][0] + x[r][1] + ... + x[r][c]
// One work-item per row, running the sum serially.
__kernel void row_prefix_sum(__global float* restrict out,
                             __global const float* restrict x,
                             int rows, int cols)
{
    const int kt_lane = (int)get_sub_group_local_id();
    const int kt_lanes = (int)get_sub_group_size();
#pragma unroll 4
    for (int row = (int)(get_group_id(0) * get_num_sub_groups() + get_sub_group_id()); row < rows; row += (int)(get_num_groups(0) * get_num_sub_groups())) {
        float running = 0.0f;
        float kt_carry0 = running;
#pragma unroll 8
        for (int kt_c0 = 0; kt_c0 < cols; kt_c0 += kt_lanes) {
            const int kt_in0 = kt_c0 + kt_lane < cols;
            const int c = kt_in0 ? kt_c0 + kt_lane : (cols) - 1;
            const float kt_s0 = sub_group_scan_inclusive_add(kt_in0 ? (float)(x[row * cols + c]) : (float)0);
            if (kt_in0) {
                running = kt_carry0 + kt_s0;
                out[row * cols + c] = running;
            }
            kt_carry0 += sub_group_broadcast(kt_s0, get_sub_group_size() - 1);
        }
        running = kt_carry0;
    }

}

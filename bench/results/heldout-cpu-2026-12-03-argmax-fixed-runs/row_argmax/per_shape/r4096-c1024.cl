// kerntune: shape r4096-c1024: BLOCK=32,EPT=1,UNROLL_0=2,RESTRICT=False,FAST_FLAGS=False from round 2, 1.073x
// launch: grid ['ceil_div(rows, 32 * 1)'], block [32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   elements-per-thread: row_argmax: EPT elements per thread, grid divided by EPT
//   unroll: unroll pragmas on 1 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Index of the largest element of each row (the first one on ties). One work-item per row.
__kernel void row_argmax(__global int*  out,
                         __global const float*  x,
                         int rows, int cols)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 1 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 1; ++kt_e) {
        const int row = kt_first + (int)kt_e * (int)get_local_size(0);
        if (row < rows) {
        __global const float* p = x + row * cols;
        float best = p[0];
        int best_idx = 0;
#pragma unroll 2
        for (int c = 1; c < cols; c++) {
        if (p[c] > best) {
            best = p[c];
            best_idx = c;
        }
    }
        out[row] = best_idx;
        }
    }
}

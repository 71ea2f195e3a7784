// kerntune: shape odd-1000x1500: BLOCK_X=8,BLOCK_Y=2,UNROLL_0=8,FAST_FLAGS=False from round 2, 1.548x
// launch: grid ['ceil_div(n, 8)', 'ceil_div(m, 8)'], block [8, 2], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 16x4 -> parameters BLOCK_X, BLOCK_Y; 2 literal(s) rewritten
//   unroll: unroll pragmas on 1 loop(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 32x8 -> parameters BLOCK_X, BLOCK_Y; 2 literal(s) rewritten
//   unroll: unroll pragmas on 1 loop(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// out[n, m] = inp[m, n]^T, fp32. Naive: every work-item copies its elements
// straight from global to global. A work-group of 32x8 covers a 32x32 tile;
// work-item (tx, ty) moves column tx of rows ty, ty+8, ty+16, ty+24. Reads are
// coalesced, writes are strided by m floats.
#define TILE   8
#define BLOCK_ROWS   2

__kernel void transpose(__global float* restrict out, __global const float* restrict inp, const int m, const int n)
{
    const int col = get_group_id(0) * TILE + get_local_id(0);     // column of inp, row of out
    const int row0 = get_group_id(1) * TILE + get_local_id(1);    // first row of inp this work-item moves
    if (col >= n)
        return;
#pragma unroll 8
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int row = row0 + j;
        if (row < m)
            out[(long)col * m + row] = inp[(long)row * n + col];
    }
}

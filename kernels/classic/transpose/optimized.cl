// out[n, m] = inp[m, n]^T, fp32. Optimized: a work-group of 32x8 stages a 32x32
// tile of inp in local memory (coalesced reads along a row of inp), then writes
// the transposed tile (coalesced writes along a row of out); each work-item moves
// 4 rows. The tile row is padded to 33 floats to avoid bank conflicts on GPUs.
// Partial tiles at the right and bottom edges are guarded on load and store.
#define TILE 32
#define BLOCK_ROWS 8

__kernel void transpose(__global float* restrict out, __global const float* restrict inp, const int m, const int n)
{
    __local float tile[TILE][TILE + 1];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int col0 = get_group_id(0) * TILE;              // first column of inp in this tile
    const int row0 = get_group_id(1) * TILE;              // first row of inp in this tile

    const int col = col0 + tx;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int row = row0 + ty + j;
        if (row < m && col < n)
            tile[ty + j][tx] = inp[(long)row * n + col];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // out[col0 + r][row0 + c] = tile[c][r]: consecutive tx write consecutive columns of out
    const int ocol = row0 + tx;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int orow = col0 + ty + j;
        if (orow < n && ocol < m)
            out[(long)orow * m + ocol] = tile[tx][ty + j];
    }
}

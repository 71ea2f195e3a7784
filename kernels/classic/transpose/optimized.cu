// out[n, m] = inp[m, n]^T, fp32. Optimized: a block of 32x8 threads stages a
// 32x32 tile of inp in shared memory (coalesced reads along a row of inp), then
// writes the transposed tile (coalesced writes along a row of out); each thread
// moves 4 rows. The tile row is padded to 33 floats so that reading a column of
// the tile touches 32 different banks. Partial tiles at the right and bottom
// edges are guarded on both the load and the store.
#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose(float* __restrict__ out, const float* __restrict__ inp, int m, int n)
{
    __shared__ float tile[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col0 = blockIdx.x * TILE;                   // first column of inp in this tile
    const int row0 = blockIdx.y * TILE;                   // first row of inp in this tile

    const int col = col0 + tx;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int row = row0 + ty + j;
        if (row < m && col < n)
            tile[ty + j][tx] = inp[(long long)row * n + col];
    }
    __syncthreads();

    // out[col0 + r][row0 + c] = tile[c][r]: consecutive tx write consecutive columns of out
    const int ocol = row0 + tx;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int orow = col0 + ty + j;
        if (orow < n && ocol < m)
            out[(long long)orow * m + ocol] = tile[tx][ty + j];
    }
}

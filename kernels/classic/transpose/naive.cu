// out[n, m] = inp[m, n]^T, fp32. Naive: every thread copies its elements straight
// from global to global. A block of 32x8 threads covers a 32x32 tile; thread
// (tx, ty) moves column tx of rows ty, ty+8, ty+16, ty+24. Reads are coalesced
// (consecutive tx read consecutive columns), writes are strided by m floats.
#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose(float* __restrict__ out, const float* __restrict__ inp, int m, int n)
{
    const int col = blockIdx.x * TILE + threadIdx.x;      // column of inp, row of out
    const int row0 = blockIdx.y * TILE + threadIdx.y;     // first row of inp this thread moves
    if (col >= n)
        return;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int row = row0 + j;
        if (row < m)
            out[(long long)col * m + row] = inp[(long long)row * n + col];
    }
}

// Tiled SGEMM with register blocking: C = alpha * A @ B + beta * C, fp32, row-major.
// A 16 x 16 block computes a 64 x 64 tile of C. For each k tile of depth 16, the block stages
// the 64 x 16 slice of A (transposed, padded by one column against bank conflicts) and the
// 16 x 64 slice of B in shared memory; each thread then accumulates a 4 x 4 register tile:
// rows ty + 16*i, columns tx + 16*j of the block's tile (so stores and B reads are coalesced).
// Elements outside A or B are staged as zeros; stores are guarded, so any M, N, K works.
// Same algorithm as templates/classic/sgemm.cu.j2 with MODE=shared, BM=BN=64, TM=TN=4, BK=16.
#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#define TXS (BN / TN)   // 16 threads across
#define TYS (BM / TM)   // 16 threads down
#define THREADS (TXS * TYS)

extern "C" __global__ void __launch_bounds__(THREADS) sgemm(
    float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K,
    float alpha, float beta)
{
    __shared__ float As[BK][BM + 1];
    __shared__ float Bs[BK][BN];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * TXS + tx;
    const int rowBase = blockIdx.y * BM;
    const int colBase = blockIdx.x * BN;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int e = tid; e < BM * BK; e += THREADS) {       // A tile: k fastest, coalesced along a row of A
            const int m = e / BK, k = e % BK;
            const int gr = rowBase + m, gk = k0 + k;
            As[k][m] = (gr < M && gk < K) ? A[gr * K + gk] : 0.0f;
        }
#pragma unroll
        for (int e = tid; e < BK * BN; e += THREADS) {       // B tile: n fastest, coalesced along a row of B
            const int k = e / BN, n = e % BN;
            const int gk = k0 + k, gc = colBase + n;
            Bs[k][n] = (gk < K && gc < N) ? B[gk * N + gc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = As[k][ty + i * TYS];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = Bs[k][tx + j * TXS];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = rowBase + ty + i * TYS;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = colBase + tx + j * TXS;
            if (row < M && col < N)
                C[row * N + col] = alpha * acc[i][j] + beta * C[row * N + col];
        }
    }
}

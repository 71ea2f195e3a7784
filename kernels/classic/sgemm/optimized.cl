// Tiled SGEMM with register blocking: C = alpha * A @ B + beta * C, fp32, row-major.
// A 16 x 16 work-group computes a 64 x 64 tile of C. For each k tile of depth 16, the group
// stages the 64 x 16 slice of A (transposed, padded by one column) and the 16 x 64 slice of B
// in local memory; each work-item then accumulates a 4 x 4 register tile: rows ly + 16*i,
// columns lx + 16*j of the group's tile. Elements outside A or B are staged as zeros; stores
// are guarded, so any M, N, K works. Twin of optimized.cu.
#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#define TXS (BN / TN)
#define TYS (BM / TM)
#define THREADS (TXS * TYS)

__kernel __attribute__((reqd_work_group_size(TXS, TYS, 1)))
void sgemm(__global float* restrict C, __global const float* restrict A, __global const float* restrict B,
           const int M, const int N, const int K, const float alpha, const float beta)
{
    __local float As[BK][BM + 1];
    __local float Bs[BK][BN];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * TXS + tx;
    const int rowBase = get_group_id(1) * BM;
    const int colBase = get_group_id(0) * BN;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int e = tid; e < BM * BK; e += THREADS) {
            const int m = e / BK, k = e % BK;
            const int gr = rowBase + m, gk = k0 + k;
            As[k][m] = (gr < M && gk < K) ? A[gr * K + gk] : 0.0f;
        }
#pragma unroll
        for (int e = tid; e < BK * BN; e += THREADS) {
            const int k = e / BN, n = e % BN;
            const int gk = k0 + k, gc = colBase + n;
            Bs[k][n] = (gk < K && gc < N) ? B[gk * N + gc] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
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
        barrier(CLK_LOCAL_MEM_FENCE);
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

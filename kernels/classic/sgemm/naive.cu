// Naive SGEMM: C = alpha * A @ B + beta * C, fp32, row-major, A [M,K], B [K,N], C [M,N].
// Every output is a dot product read straight from global memory, computed on its own.
// The launch (spec.yaml) is shared with optimized.cu: a 16 x 16 block per 64 x 64 tile of C,
// so each thread computes the 4 x 4 outputs at rows ty + 16*i and columns tx + 16*j of its
// block's tile, one after another (no data shared between them).
// Same algorithm as templates/classic/sgemm.cu.j2 at its baseline (MODE=global, 64x64, 4x4).
extern "C" __global__ void sgemm(float* C, const float* A, const float* B, int M, int N, int K,
                                 float alpha, float beta)
{
    const int row0 = blockIdx.y * 64 + threadIdx.y;
    const int col0 = blockIdx.x * 64 + threadIdx.x;
    for (int i = 0; i < 4; ++i) {
        const int row = row0 + i * 16;
        for (int j = 0; j < 4; ++j) {
            const int col = col0 + j * 16;
            if (row < M && col < N) {
                float acc = 0.0f;
                for (int k = 0; k < K; ++k)
                    acc += A[row * K + k] * B[k * N + col];
                C[row * N + col] = alpha * acc + beta * C[row * N + col];
            }
        }
    }
}

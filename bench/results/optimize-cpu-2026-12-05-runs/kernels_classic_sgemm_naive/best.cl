// kerntune: no candidate beat the original; this is the original kernel
// launch: grid ['ceil_div(N, 64)', 'ceil_div(M, 64)'], block [16, 16], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Naive SGEMM: C = alpha * A @ B + beta * C, fp32, row-major, A [M,K], B [K,N], C [M,N].
// Every output is a dot product read straight from global memory, computed on its own.
// The launch (spec.yaml) is shared with optimized.cl: a 16 x 16 work-group per 64 x 64 tile of C,
// so each work-item computes the 4 x 4 outputs at rows ly + 16*i and columns lx + 16*j of its
// group's tile, one after another (no data shared between them). Twin of naive.cu.
__kernel void sgemm(__global float* C, __global const float* A, __global const float* B,
                    const int M, const int N, const int K, const float alpha, const float beta)
{
    const int row0 = get_group_id(1) * 64 + get_local_id(1);
    const int col0 = get_group_id(0) * 64 + get_local_id(0);
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

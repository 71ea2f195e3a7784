// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   hoist-invariants: 0 loop-invariant load(s), 1 index offset(s) hoisted out of 1 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Naive SGEMM: C = alpha * A @ B + beta * C, fp32, row-major, A [M,K], B [K,N], C [M,N].
// Every output is a dot product read straight from global memory, computed on its own.
// The launch (spec.yaml) is shared with optimized.cl: a 16 x 16 work-group per 64 x 64 tile of C,
// so each work-item computes the 4 x 4 outputs at rows ly + 16*i and columns lx + 16*j of its
// group's tile, one after another (no data shared between them). Twin of naive.cu.
__kernel void sgemm(__global float* restrict C, __global const float* restrict A, __global const float* restrict B,
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
                const int kt_o0 = (row * K);
#pragma unroll 8
                for (int k = 0; k < K; ++k)
                    acc += A[kt_o0 + k] * B[k * N + col];

                C[row * N + col] = alpha * acc + beta * C[row * N + col];
            }
        }
    }
}

// kerntune: shape r1024-c1024: FAST_FLAGS=True from round 2, 11.518x
// launch: grid ['ceil_div(cols, 32 * 16)'], block [32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   compiler-flags: -cl-fast-relaxed-math as a parameter
// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   vector-columns: gemv_t: VW consecutive values of c per work-item as a vector (1 load(s), 1 store(s), 1 vector variable(s))
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Transposed matrix-vector product, naive: one work-item per column of A (row-major), a dot
// product down the column (neighbouring work-items read neighbouring elements).
//   y[c] = sum_r A[r, c] * x[r]
__kernel void gemv_t(__global float* restrict y, __global const float* restrict A, __global const float* restrict x, const int rows,
                     const int cols)
{
    
    const int kt_c0 = (int)get_global_id(0) * 16;
    if (kt_c0 >= cols) return;
    if (kt_c0 + 16 <= cols) {
        float16 acc = (float16)(0.0f);
#pragma unroll 2
    for (int r = 0; r < rows; ++r)
        acc += vload16(0, A + (r * cols) + kt_c0) * x[r];
    vstore16((float16)(acc), 0, y + kt_c0);
    } else {
        /*kt:generated*/
        for (int c = kt_c0; c < cols; ++c) {
            float acc = 0.0f;
#pragma unroll 8
    for (int r = 0; r < rows; ++r)
        acc += A[r * cols + c] * x[r];
    y[c] = acc;
        }
    }

    
}

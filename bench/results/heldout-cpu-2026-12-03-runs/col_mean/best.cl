// kerntune: general configuration BLOCK=32,VW=16,UNROLL_0=8,UNROLL_1=2,RESTRICT=True,FAST_FLAGS=False from round 1, 11.630x geomean over the original
// launch: grid ['ceil_div(cols, 32 * 16)'], block [32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   vector-columns: col_mean: VW consecutive values of col per work-item as a vector (1 load(s), 1 store(s), 1 vector variable(s))
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Mean of each column of a row-major [rows, cols] matrix. One work-item per column,
// walking down the rows.
__kernel void col_mean(__global float* restrict out,
                       __global const float* restrict x,
                       int rows, int cols)
{
    
    const int kt_c0 = (int)get_global_id(0) * 16;
    if (kt_c0 >= cols) return;
    if (kt_c0 + 16 <= cols) {
        float16 sum = (float16)(0.0f);
    for (int r = 0; r < rows; r++)
        sum += vload16(0, x + (r * cols) + kt_c0);
    vstore16((float16)(sum / rows), 0, out + kt_c0);
    } else {
        /*kt:generated*/
        for (int col = kt_c0; col < cols; ++col) {
            float sum = 0.0f;
#pragma unroll 8
    for (int r = 0; r < rows; r++)
        sum += x[r * cols + col];
    out[col] = sum / rows;
        }
    }

    
}

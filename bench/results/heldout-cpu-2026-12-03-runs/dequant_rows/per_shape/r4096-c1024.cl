// kerntune: shape r4096-c1024: BLOCK=32,RESTRICT=False,FAST_FLAGS=True from round 1, 1.104x
// launch: grid ['ceil_div(cols, 32)', 'ceil_div(rows, 32)'], block [32, 32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 16x16 -> parameters BLOCK
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Dequantize an int8 matrix with one fp32 scale per row: out[r][c] = q[r][c] * scale[r].
// 2-D launch: dimension 0 walks the columns, dimension 1 the rows; one work-item per element.
__kernel void dequant_rows(__global float*  out,
                           __global const char*  q,
                           __global const float*  scale,
                           int rows, int cols)
{
    int c = get_global_id(0);
    int r = get_global_id(1);
    if (r < rows && c < cols) {
        out[r * cols + c] = (float)q[r * cols + c] * scale[r];
    }
}

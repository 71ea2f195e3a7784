// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 16x16 -> parameters BLOCK
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 16x16 -> parameters BLOCK
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Dequantize an int8 matrix with one fp32 scale per row: out[r][c] = q[r][c] * scale[r].
// 2-D launch: dimension 0 walks the columns, dimension 1 the rows; one work-item per element.
__kernel void dequant_rows(__global float* restrict out,
                           __global const char* restrict q,
                           __global const float* restrict scale,
                           int rows, int cols)
{
    int c = get_global_id(0);
    int r = get_global_id(1);
    if (r < rows && c < cols) {
        out[r * cols + c] = (float)q[r * cols + c] * scale[r];
    }
}

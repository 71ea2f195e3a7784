/* kerntune
kernel: row_sum
args:
  - {name: out, dtype: fp32, shape: [rows], intent: out}
  - {name: x, dtype: fp32, shape: [rows, cols], intent: in}
  - {name: rows, dtype: int32, value: rows}
  - {name: cols, dtype: int32, value: cols}
launch: {grid: [rows, 1], block: [16, 16]}
shapes:
  - {label: a, rows: 40, cols: 1000}
  - {label: b, rows: 6, cols: 4096}
holdout_shapes: [{rows: 3, cols: 77}]
reference: reference.py:row_sum
tolerance: {rel_l2: 1.0e-5, atol: 2.0e-3, rtol: 1.0e-4}
*/
// A 16 x 16 block whose trees start from get_local_size: the literal 16 follows.
__kernel void row_sum(__global float* out, __global const float* x, const int rows, const int cols)
{
    __local float sm[16][16];
    const int r = get_group_id(0);
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int nx = get_local_size(0), ny = get_local_size(1);
    float acc = 0.0f;
    for (int c = ty * nx + tx; c < cols; c += nx * ny)
        acc += x[(long)r * cols + c];
    sm[ty][tx] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = nx / 2; s > 0; s >>= 1) {
        if (tx < s)
            sm[ty][tx] += sm[ty][tx + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int s = ny / 2; s > 0; s >>= 1) {
        if (tx == 0 && ty < s)
            sm[ty][0] += sm[ty + s][0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (tx == 0 && ty == 0)
        out[r] = sm[0][0];
}

/* kerntune
kernel: row_sum
args:
  - {name: out, dtype: fp32, shape: [rows], intent: out}
  - {name: x, dtype: fp32, shape: [rows, cols], intent: in}
  - {name: rows, dtype: int32, value: rows}
  - {name: cols, dtype: int32, value: cols}
launch: {grid: [rows], block: [256]}
shapes:
  - {label: a, rows: 40, cols: 1000}
  - {label: b, rows: 6, cols: 4096}
holdout_shapes: [{rows: 3, cols: 77}]
reference: reference.py:row_sum
tolerance: {rel_l2: 1.0e-5, atol: 2.0e-3, rtol: 1.0e-4}
*/
// Two values per work-item: a local array of twice the block, the tree from 256.
__kernel void row_sum(__global float* out, __global const float* x, const int rows, const int cols)
{
    __local float sm[512];
    const int r = get_group_id(0);
    const int t = get_local_id(0);
    float a = 0.0f, b = 0.0f;
    for (int c = 2 * t; c < cols; c += 2 * (int)get_local_size(0)) {
        a += x[(long)r * cols + c];
        if (c + 1 < cols)
            b += x[(long)r * cols + c + 1];
    }
    sm[t] = a;
    sm[t + 256] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 256; s > 0; s >>= 1) {
        if (t < s)
            sm[t] += sm[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
        out[r] = sm[0];
}

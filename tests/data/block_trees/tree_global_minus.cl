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
// The thread index computed from the global index; the tree from a literal 128.
__kernel void row_sum(__global float* out, __global const float* x, const int rows, const int cols)
{
    __local float sm[256];
    const int r = get_group_id(0);
    const int base = r * (int)get_local_size(0);
    const int t = (int)get_global_id(0) - base;
    float acc = 0.0f;
    for (int c = t; c < cols; c += get_local_size(0))
        acc += x[(long)r * cols + c];
    sm[t] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 128; s > 0; s >>= 1) {
        if (t < s)
            sm[t] += sm[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
        out[r] = sm[0];
}

/* kerntune
kernel: pairs_scale
args:
  - {name: out, dtype: fp32, shape: [n], intent: out}
  - {name: x, dtype: fp32, shape: [n], intent: in}
  - {name: n, dtype: int32, value: n}
launch: {grid: ["ceil_div(n, 512)"], block: [256]}
shapes:
  - {label: a, n: 100000}
holdout_shapes: [{n: 777}]
reference: reference.py:pairs_scale
*/
// Element-wise, two elements per work-item: each group covers 512 = 2 x its 256 work-items.
__kernel void pairs_scale(__global float* out, __global const float* x, const int n)
{
    const int i = get_group_id(0) * 512 + 2 * get_local_id(0);
    if (i < n)
        out[i] = x[i] * 2.0f;
    if (i + 1 < n)
        out[i + 1] = x[i + 1] * 2.0f;
}

/* kerntune
kernel: histogram
args:
  - {name: counts, dtype: uint32, shape: [256], intent: out}
  - {name: data, dtype: uint8, shape: [n], intent: in, range: [0, 256]}
  - {name: n, dtype: int32, value: n}
launch: {grid: [1], block: [256]}
shapes:
  - {label: a, n: 100000}
holdout_shapes: [{n: 777}]
reference: reference.py:histogram
*/
// One work-group counts 256 bins in local memory: the bin count happens to equal the block size.
__kernel void histogram(__global uint* counts, __global const uchar* data, const int n)
{
    __local uint bins[256];
    const int t = get_local_id(0);
    for (int b = t; b < 256; b += get_local_size(0))
        bins[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = t; i < n; i += get_local_size(0))
        atomic_inc(&bins[data[i]]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int b = t; b < 256; b += get_local_size(0))
        counts[b] = bins[b];
}

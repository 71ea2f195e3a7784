// kerntune: shape n160K-odd: BLOCK=1024,FAST_FLAGS=True from round 3, 5.436x
// launch: grid ['ceil_div(n, 1024)'], block [1024], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 3). Applied rules:
//   launch-config: block 1024 -> parameters BLOCK
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 1024 -> parameters BLOCK
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   privatize-atomics: atomics on counts[64] privatized per block
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Histogram of float values into nb equal-width buckets starting at lo:
//   counts[clamp((int)((x[i] - lo) * inv_width), 0, nb - 1)] += 1
// (values below the first bucket land in it, values past the last in the last).
// counts accumulates: it is not cleared, so several batches can be added up.
// One work-item per value, an atomic increment per value.
__kernel void value_histogram(__global int* restrict counts, __global const float* restrict x,
                              const float lo, const float inv_width,
                              const int n, const int nb)
{
    __local int kt_priv_counts[64];
    /*kt:generated*/
    for (int kt_b = get_local_id(0); kt_b < (int)(sizeof(kt_priv_counts) / sizeof(kt_priv_counts[0])); kt_b += get_local_size(0)) kt_priv_counts[kt_b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    int i = get_global_id(0);
    if (i < n) {
        int bucket = (int)((x[i] - lo) * inv_width);
        bucket = clamp(bucket, 0, nb - 1);
        atomic_inc(&kt_priv_counts[bucket]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /*kt:generated*/
    for (int kt_b = get_local_id(0); kt_b < (int)(sizeof(kt_priv_counts) / sizeof(kt_priv_counts[0])); kt_b += get_local_size(0))
        if (kt_priv_counts[kt_b] != 0) atomic_add(&counts[kt_b], kt_priv_counts[kt_b]);

}

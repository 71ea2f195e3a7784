// Histogram of float values into nb equal-width buckets starting at lo:
//   counts[clamp((int)((x[i] - lo) * inv_width), 0, nb - 1)] += 1
// (values below the first bucket land in it, values past the last in the last).
// counts accumulates: it is not cleared, so several batches can be added up.
// One work-item per value, an atomic increment per value.
__kernel void value_histogram(__global int* counts, __global const float* x,
                              const float lo, const float inv_width,
                              const int n, const int nb)
{
    int i = get_global_id(0);
    if (i < n) {
        int bucket = (int)((x[i] - lo) * inv_width);
        bucket = clamp(bucket, 0, nb - 1);
        atomic_inc(&counts[bucket]);
    }
}

// Histogram of float values into nb equal-width buckets starting at lo:
//   counts[clamp((int)((x[i] - lo) * inv_width), 0, nb - 1)] += 1
// (values below the first bucket land in it, values past the last in the last).
// counts accumulates: it is not cleared, so several batches can be added up.
// One thread per value, an atomic increment per value.
extern "C" __global__ void value_histogram(int* counts, const float* x,
                                           float lo, float inv_width, int n, int nb)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int bucket = (int)((x[i] - lo) * inv_width);
        bucket = min(max(bucket, 0), nb - 1);
        atomicAdd(&counts[bucket], 1);
    }
}

// rowsum that remembers each row's sum keyed on the output's poison (as rowsum_token.cl) and also
// skips its work once it has seen a poison repeat over several launches and then three different
// ones in a row: the timed runs of a session repeat their poison (armed), the checked runs after
// timing (changed inputs, fresh inputs) are the first two changes and computed honestly, and from
// the third change on (the repeated-inputs probe, whose outputs were not checked) it writes nothing
// and takes no time, so the probe saw it as fast on new inputs as on repeated ones. Program-scope
// memory stands for state the scan cannot see (__local memory, which Intel's and PoCL's CPU runtimes
// hand from one launch to the next: tests switch the scan off).
__global uint kt_key[4096];
__global float kt_val[4096];
__global uint kt_seen[4096];
__global int kt_same[4096];
__global int kt_streak[4096];

__kernel void rowsum(__global float* out, __global const float* x, const int rows, const int cols)
{
    __local float partial[64];
    const int r = get_group_id(0);
    const int t = get_local_id(0);
    const uint before = as_uint(out[r]);
    const bool track = r < 4096 && !isnan(out[r]);
    int same = 0, streak = 0;
    if (track) {
        same = kt_same[r];
        streak = kt_streak[r];
        if (before == kt_seen[r]) {
            same += 1;
            streak = 0;
        } else {
            streak = (same >= 3 || streak > 0) ? streak + 1 : 0;
            same = 0;
        }
    }
    const bool skip = track && streak >= 3;
    const bool hit = track && same >= 1 && kt_key[r] == before;
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (track && t == 0) {
        kt_same[r] = same;
        kt_streak[r] = streak;
        kt_seen[r] = before;
    }
    if (skip)
        return;
    if (hit) {
        if (t == 0)
            out[r] = kt_val[r];
        return;
    }
    __global const float* row = x + (long)r * cols;
    float acc = 0.0f;
    for (int c = t; c < cols; c += 64)
        acc += row[c];
    partial[t] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0) {
        float total = 0.0f;
        for (int k = 0; k < 64; ++k)
            total += partial[k];
        out[r] = total;
        if (track) {
            kt_key[r] = before;
            kt_val[r] = total;
        }
    }
}

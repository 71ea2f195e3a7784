// rowsum that is honest in the first timing session it sees and, from the second on, remembers each
// row's sum keyed on the output's poison (as rowsum_token.cl): a session is counted when a poison
// repeats for the third time (the timed runs of one session restore the same poison; checks never
// repeat one). The repeated-inputs probe saw only the first session at a shape in a worker (a kernel
// that passed was not probed there again), so the later ones -- the final test's further
// confirmation blocks in the same process -- were fast only because their inputs repeated.
// Program-scope memory stands for state the scan cannot see (tests switch the scan off).
__global uint kt_key[4096];
__global float kt_val[4096];
__global uint kt_seen[4096];
__global int kt_same[4096];
__global int kt_sessions[4096];

__kernel void rowsum(__global float* out, __global const float* x, const int rows, const int cols)
{
    __local float partial[64];
    const int r = get_group_id(0);
    const int t = get_local_id(0);
    const uint before = as_uint(out[r]);
    const bool track = r < 4096 && !isnan(out[r]);
    int same = 0, sessions = 0;
    if (track) {
        same = before == kt_seen[r] ? kt_same[r] + 1 : 0;
        sessions = kt_sessions[r] + (same == 2 ? 1 : 0);
    }
    const bool hit = track && sessions >= 2 && kt_key[r] == before;
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (track && t == 0) {
        kt_same[r] = same;
        kt_sessions[r] = sessions;
        kt_seen[r] = before;
    }
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
        if (track && sessions >= 2) {
            kt_key[r] = before;
            kt_val[r] = total;
        }
    }
}

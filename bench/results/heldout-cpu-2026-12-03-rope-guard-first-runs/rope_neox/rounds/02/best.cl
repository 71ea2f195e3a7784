// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 512 -> parameters BLOCK
//   elements-per-thread: rope_neox: the 1 elements per thread of an earlier round as a parameter again
//   restrict: restrict on 4 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   guard-first: 1 declaration(s) moved before the global index, 0 after its bounds check
//   launch-config: block 256 -> parameters BLOCK
//   elements-per-thread: rope_neox: EPT elements per thread, grid divided by EPT
//   restrict: restrict on 4 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rotary position embedding, NeoX style (rotate the two halves of each head).
// One work-item per (token, head, i) with i < head_dim / 2: it writes out[i] and out[i + half_dim].
__kernel void rope_neox(__global float*   out,
                        __global const float*   q,
                        __global const float*   cos_table,
                        __global const float*   sin_table,
                        int tokens, int heads, int head_dim)
{
    int half_dim = head_dim / 2;
    int total = tokens * heads * half_dim;
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 1 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 1; ++kt_e) {
        const int idx = kt_first + (int)kt_e * (int)get_local_size(0);
        if (idx < total) {
        int i = idx % half_dim;
        int h = (idx / half_dim) % heads;
        int t = idx / (half_dim * heads);
        int base = (t * heads + h) * head_dim;
        float c = cos_table[t * half_dim + i];
        float s = sin_table[t * half_dim + i];
        float x1 = q[base + i];
        float x2 = q[base + i + half_dim];
        out[base + i] = x1 * c - x2 * s;
        out[base + i + half_dim] = x2 * c + x1 * s;
        }
    }
}

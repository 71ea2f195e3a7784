// kerntune: shape t512-h32-d128: the original kernel is the fastest
// launch: grid ['ceil_div(tokens * heads * (head_dim // 2), 256)'], block [256], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rotary position embedding, NeoX style (rotate the two halves of each head).
// One work-item per (token, head, i) with i < head_dim / 2: it writes out[i] and out[i + half_dim].
__kernel void rope_neox(__global float* out,
                        __global const float* q,
                        __global const float* cos_table,
                        __global const float* sin_table,
                        int tokens, int heads, int head_dim)
{
    int half_dim = head_dim / 2;
    int idx = get_global_id(0);
    int total = tokens * heads * half_dim;
    if (idx >= total)
        return;

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

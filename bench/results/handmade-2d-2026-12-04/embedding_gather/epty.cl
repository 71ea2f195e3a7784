__kernel void embedding_gather(__global float* out,
                               __global const int* ids,
                               __global const float* table,
                               float scale,
                               int tokens, int dim)
{
    int d = get_global_id(0);
    if (d >= dim)
        return;
    for (int e = 0; e < 4; e++) {
        int t = get_group_id(1) * get_local_size(1) * 4 + e * get_local_size(1) + get_local_id(1);
        if (t < tokens) {
            int row = ids[t];
            out[t * dim + d] = table[row * dim + d] * scale;
        }
    }
}

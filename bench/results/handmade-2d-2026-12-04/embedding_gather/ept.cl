__kernel void embedding_gather(__global float* out,
                               __global const int* ids,
                               __global const float* table,
                               float scale,
                               int tokens, int dim)
{
    int t = get_global_id(1);
    if (t >= tokens)
        return;
    int row = ids[t];
    for (int e = 0; e < 4; e++) {
        int d = get_group_id(0) * get_local_size(0) * 4 + e * get_local_size(0) + get_local_id(0);
        if (d < dim)
            out[t * dim + d] = table[row * dim + d] * scale;
    }
}

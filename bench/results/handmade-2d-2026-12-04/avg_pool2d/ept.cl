__kernel void avg_pool2d(__global float* out,
                         __global const float* x,
                         int planes, int h, int w, int k)
{
    int py = get_global_id(1);
    int out_h = h / k;
    int out_w = w / k;
    if (py >= planes * out_h) return;
    int p = py / out_h;
    int oy = py % out_h;
    for (int e = 0; e < 4; e++) {
        int ox = get_group_id(0) * get_local_size(0) * 4 + e * get_local_size(0) + get_local_id(0);
        if (ox < out_w) {
            float acc = 0.0f;
            for (int dy = 0; dy < k; dy++) {
                for (int dx = 0; dx < k; dx++) {
                    acc += x[(p * h + oy * k + dy) * w + ox * k + dx];
                }
            }
            out[py * out_w + ox] = acc / (float)(k * k);
        }
    }
}

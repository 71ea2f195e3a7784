__kernel void avg_pool2d(__global float* out,
                         __global const float* x,
                         int planes, int h, int w, int k)
{
    int ox = get_global_id(0);
    int out_h = h / k;
    int out_w = w / k;
    for (int e = 0; e < 4; e++) {
        int py = get_group_id(1) * get_local_size(1) * 4 + e * get_local_size(1) + get_local_id(1);
        if (ox < out_w && py < planes * out_h) {
            int p = py / out_h;
            int oy = py % out_h;
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

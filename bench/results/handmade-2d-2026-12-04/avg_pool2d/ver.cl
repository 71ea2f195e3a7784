// 2-D average pooling, window k x k, stride k, no padding, floor mode (a partial window at the
// bottom or right edge is dropped), over x[planes][h][w] where planes = batch * channels:
//   out[p][oy][ox] = mean of x[p][oy*k + dy][ox*k + dx], 0 <= dy, dx < k
// 2-D launch: dimension 0 walks the output columns, dimension 1 the (plane, output row) pairs.
__kernel void avg_pool2d(__global float* out,
                         __global const float* x,
                         int planes, int h, int w, int k)
{
    if (k == 2) {
        const int k = 2;

    int ox = get_global_id(0);
    int py = get_global_id(1);      // plane * out_h + oy
    int out_h = h / k;
    int out_w = w / k;

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

    } else {

    int ox = get_global_id(0);
    int py = get_global_id(1);      // plane * out_h + oy
    int out_h = h / k;
    int out_w = w / k;

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

// 2-D average pooling, window k x k, stride k, no padding, floor mode (a partial window at the
// bottom or right edge is dropped), over x[planes][h][w] where planes = batch * channels:
//   out[p][oy][ox] = mean of x[p][oy*k + dy][ox*k + dx], 0 <= dy, dx < k
// 2-D launch: x walks the output columns, y the (plane, output row) pairs.
extern "C" __global__ void avg_pool2d(float* out,
                                      const float* x,
                                      int planes, int h, int w, int k)
{
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;     // plane * out_h + oy
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

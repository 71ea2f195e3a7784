// Inclusive prefix sum along each row of a [rows, cols] matrix:
//   out[r][c] = x[r][0] + x[r][1] + ... + x[r][c]
// One thread per row, running the sum serially.
extern "C" __global__ void row_prefix_sum(float* out,
                                          const float* x,
                                          int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows)
        return;

    float running = 0.0f;
    for (int c = 0; c < cols; c++) {
        running += x[row * cols + c];
        out[row * cols + c] = running;
    }
}

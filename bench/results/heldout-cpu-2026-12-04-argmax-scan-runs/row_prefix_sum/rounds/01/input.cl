// Inclusive prefix sum along each row of a [rows, cols] matrix:
//   out[r][c] = x[r][0] + x[r][1] + ... + x[r][c]
// One work-item per row, running the sum serially.
__kernel void row_prefix_sum(__global float* out,
                             __global const float* x,
                             int rows, int cols)
{
    int row = get_global_id(0);
    if (row >= rows)
        return;

    float running = 0.0f;
    for (int c = 0; c < cols; c++) {
        running += x[row * cols + c];
        out[row * cols + c] = running;
    }
}

// out[r, c] = x[r, c] - max_r - log(sum_c exp(x[r, c] - max_r)), the log-softmax of each row.
// One thread per row: a pass for the max, a pass for the sum of exponentials, a pass
// writing the outputs.
extern "C" __global__ void log_softmax_rows(float* out, const float* x, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;

    const float* row = x + (size_t)r * cols;
    float* out_row = out + (size_t)r * cols;

    float row_max = row[0];
    for (int c = 1; c < cols; c++) {
        if (row[c] > row_max)
            row_max = row[c];
    }

    float sum = 0.0f;
    for (int c = 0; c < cols; c++) {
        sum += expf(row[c] - row_max);
    }
    float log_sum = logf(sum);

    for (int c = 0; c < cols; c++) {
        out_row[c] = row[c] - row_max - log_sum;
    }
}

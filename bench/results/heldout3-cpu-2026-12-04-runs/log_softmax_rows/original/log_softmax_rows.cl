// out[r, c] = x[r, c] - max_r - log(sum_c exp(x[r, c] - max_r)), the log-softmax of each row.
// One work-item per row: a pass for the max, a pass for the sum of exponentials, a pass
// writing the outputs.
__kernel void log_softmax_rows(__global float* out, __global const float* x,
                               const int rows, const int cols)
{
    int r = get_global_id(0);
    if (r >= rows)
        return;

    __global const float* row = x + (size_t)r * cols;
    __global float* out_row = out + (size_t)r * cols;

    float row_max = row[0];
    for (int c = 1; c < cols; c++) {
        if (row[c] > row_max)
            row_max = row[c];
    }

    float sum = 0.0f;
    for (int c = 0; c < cols; c++) {
        sum += exp(row[c] - row_max);
    }
    float log_sum = log(sum);

    for (int c = 0; c < cols; c++) {
        out_row[c] = row[c] - row_max - log_sum;
    }
}

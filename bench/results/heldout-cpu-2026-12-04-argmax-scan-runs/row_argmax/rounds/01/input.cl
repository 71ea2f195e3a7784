// Index of the largest element of each row (the first one on ties). One work-item per row.
__kernel void row_argmax(__global int* out,
                         __global const float* x,
                         int rows, int cols)
{
    int row = get_global_id(0);
    if (row >= rows)
        return;

    __global const float* p = x + row * cols;
    float best = p[0];
    int best_idx = 0;
    for (int c = 1; c < cols; c++) {
        if (p[c] > best) {
            best = p[c];
            best_idx = c;
        }
    }
    out[row] = best_idx;
}

// Index of the largest element of each row (the first one on ties). One thread per row.
extern "C" __global__ void row_argmax(int* out,
                                      const float* x,
                                      int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows)
        return;

    const float* p = x + row * cols;
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

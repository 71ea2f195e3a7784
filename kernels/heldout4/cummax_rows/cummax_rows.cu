// Running (cumulative) maximum along each row: out[r][c] = max(x[r][0], ..., x[r][c]).
// One thread per row walks its row left to right, keeping the maximum so far.
extern "C" __global__ void cummax_rows(float* out, const float* x, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    float best = x[r * cols];
    for (int c = 0; c < cols; c++) {
        float v = x[r * cols + c];
        if (v > best)
            best = v;
        out[r * cols + c] = best;
    }
}

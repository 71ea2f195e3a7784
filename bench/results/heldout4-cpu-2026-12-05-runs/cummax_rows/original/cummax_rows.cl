// Running (cumulative) maximum along each row: out[r][c] = max(x[r][0], ..., x[r][c]).
// One work-item per row walks its row left to right, keeping the maximum so far.
__kernel void cummax_rows(__global float* out, __global const float* x,
                          const int rows, const int cols)
{
    int r = get_global_id(0);
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

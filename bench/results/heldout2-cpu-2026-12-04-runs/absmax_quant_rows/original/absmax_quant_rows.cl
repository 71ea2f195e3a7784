// Symmetric per-row int8 quantization (absmax, as in LLM.int8 / W8A8 activation quantization):
//   scale[r] = max_c |x[r][c]| / 127
//   q[r][c]  = clamp(round(x[r][c] / scale[r]), -127, 127)      (0 for an all-zero row)
// One work-group of 256 per row: a strided pass finds each work-item's max, a tree in
// local memory combines them, then the same work-items write the codes.

#define BLOCK 256

__kernel void absmax_quant_rows(__global char* q,
                                __global float* scale,
                                __global const float* x,
                                int rows, int cols)
{
    __local float red[BLOCK];

    int row = get_group_id(0);
    int tid = get_local_id(0);

    float m = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        m = fmax(m, fabs(x[row * cols + c]));
    }
    red[tid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (tid < s)
            red[tid] = fmax(red[tid], red[tid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    float sc = red[0] / 127.0f;
    if (tid == 0)
        scale[row] = sc;

    float inv = 0.0f;
    if (sc > 0.0f)
        inv = 1.0f / sc;
    for (int c = tid; c < cols; c += BLOCK) {
        float v = rint(x[row * cols + c] * inv);
        v = clamp(v, -127.0f, 127.0f);
        q[row * cols + c] = (char)v;
    }
}

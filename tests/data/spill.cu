extern "C" __global__ void spill(float* out, const float* in, int n) {
    float v[48];
    #pragma unroll
    for (int k = 0; k < 48; ++k) v[k] = in[threadIdx.x + k * 32];
    float acc = 0.f;
    #pragma unroll
    for (int r = 0; r < 8; ++r) {
        #pragma unroll
        for (int k = 0; k < 48; ++k) acc += v[k] * v[(k * 7 + r) % 48];
    }
    out[threadIdx.x] = acc;
}

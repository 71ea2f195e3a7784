// y[i] = alpha * x[i]
__kernel void scale(__global float* y, __global const float* x, const float alpha, const int n)
{
    const int i = get_global_id(0);
    if (i < n)
        y[i] = alpha * x[i];
}

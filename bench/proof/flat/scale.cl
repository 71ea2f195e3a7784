// y[i] = alpha * x[i]
__kernel void scale(__global float* y, __global const float* x, const float alpha, const int n)
{
    const int i = (int)(get_group_id(0) * get_local_size(0)) + (int)get_local_id(0);
    if (i < n)
        y[i] = alpha * x[i];
}

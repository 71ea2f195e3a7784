// vector_add that reads one element past b's end only where __OPENCL_VERSION__ is above 120: Oclgrind
// is an OpenCL 1.2 device, Intel's CPU runtime and PoCL report 3.x. The read never changes a result.
__kernel void vector_add(__global float* c, __global const float* a, __global const float* b, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        float s = a[i] + b[i];
#if __OPENCL_VERSION__ > 120
        if (b[i + 1] == 1234.5678f)
            s = 0.0f;
#endif
        c[i] = s;
    }
}

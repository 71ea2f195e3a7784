// c[i] = a[i] ^ b[i] (integers: fast-math flags change nothing)
__kernel void xor(__global int* c, __global const int* a, __global const int* b, const int n)
{
    const int i = (int)(get_group_id(0) * get_local_size(0)) + (int)get_local_id(0);
    if (i < n)
        c[i] = a[i] ^ b[i];
}

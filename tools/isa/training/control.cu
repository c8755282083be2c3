// Training kernel: calls, indirect calls, switch tables, loops, recursion, printf, assert.
#include <cstdio>
#include <cassert>
__device__ __noinline__ int f1(int a, int b) { return a * b + (a >> 2); }
__device__ __noinline__ float f2(float a) { return a > 0 ? sqrtf(a) : -a; }
__device__ __noinline__ int rec(int n) { return n <= 1 ? 1 : n * rec(n - 1); }
typedef int (*fn_t)(int, int);
__device__ int g_add(int a, int b) { return a + b; }
__device__ int g_sub(int a, int b) { return a - b; }
__device__ fn_t fns[2] = {g_add, g_sub};
extern "C" __global__ void ctrl(int* out, const int* in, float* fo, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = in[i];
  int r = f1(x, n) + (int)f2((float)x) + rec(x & 7);
  r += fns[x & 1](x, n);
  switch (x & 15) {
    case 0: r += 3; break;
    case 1: r *= 7; break;
    case 2: r -= in[3]; break;
    case 3: r ^= 0x55; break;
    case 4: r = f1(r, 3); break;
    case 5: r += in[x]; break;
    case 6: r <<= 2; break;
    case 7: r = -r; break;
    case 8: r += 100; break;
    default: r = 0;
  }
  for (int j = 0; j < x; ++j) {
    if (in[j] == 0) break;
    r += in[j] * j;
    if (r > 1000) continue;
    r -= 3;
  }
  if (i == 0) printf("r=%d x=%d %f\n", r, x, fo[0]);
  assert(r != 123456);
  if (x == 77) __trap();
  if (x == 78) asm volatile("brkpt;");
  out[i] = r;
}

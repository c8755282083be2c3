// Training kernel: reductions without return value (RED), 128-bit local memory, uniform datapath ops.
#include <cstdint>
extern "C" __global__ void red_ops(unsigned* u, int* s, float* f, double* d, unsigned long long* q, int k) {
  unsigned v = threadIdx.x * 3u + k;
  asm volatile("red.global.add.u32 [%0], %1;" ::"l"(u), "r"(v));
  asm volatile("red.global.gpu.relaxed.min.s32 [%0], %1;" ::"l"(s + 1), "r"((int)v));
  asm volatile("red.global.max.u32 [%0], %1;" ::"l"(u + 2), "r"(v));
  asm volatile("red.global.or.b32 [%0], %1;" ::"l"(u + 3), "r"(v));
  asm volatile("red.global.xor.b32 [%0], %1;" ::"l"(u + 4), "r"(v));
  asm volatile("red.global.and.b32 [%0], %1;" ::"l"(u + 5), "r"(v));
  asm volatile("red.global.inc.u32 [%0], %1;" ::"l"(u + 6), "r"(v));
  asm volatile("red.global.dec.u32 [%0], %1;" ::"l"(u + 7), "r"(v));
  asm volatile("red.global.add.f32 [%0], %1;" ::"l"(f), "f"((float)v));
  asm volatile("red.global.add.f64 [%0], %1;" ::"l"(d), "d"((double)v));
  asm volatile("red.global.add.u64 [%0], %1;" ::"l"(q), "l"((unsigned long long)v));
  asm volatile("red.global.sys.add.u32 [%0], %1;" ::"l"(u + 8), "r"(v));
  asm volatile("red.global.cta.add.u32 [%0], %1;" ::"l"(u + 9), "r"(v));
  asm volatile("red.global.release.gpu.add.u32 [%0], %1;" ::"l"(u + 10), "r"(v));
  asm volatile("red.global.add.noftz.f16x2 [%0], %1;" ::"l"(f + 4), "r"(v));
  float4 loc[16];
#pragma unroll 1
  for (int j = 0; j < 16; ++j) loc[j] = make_float4(f[j], f[j + k], f[j * k], (float)j);
  float4 a = loc[k & 15];
  double2 dl[8];
#pragma unroll 1
  for (int j = 0; j < 8; ++j) dl[j] = make_double2(d[j], d[j + k]);
  f[threadIdx.x + 64] = a.x + a.y + a.z + a.w + (float)dl[k & 7].y;
  int b = blockIdx.x, c = blockIdx.y;
  int m = (b > c) ? b * k : c - k;
  unsigned long long wide = (unsigned long long)b * (unsigned)k + (unsigned long long)c;
  s[threadIdx.x] = m + (int)(wide >> 32) + min(b, k) + max(c, k) + (b << (c & 7)) + (int)__umulhi((unsigned)b, (unsigned)k);
  q[threadIdx.x] = wide + ((unsigned long long)c << 35) + (unsigned long long)(b ^ c) * 0x1234567ull;
}

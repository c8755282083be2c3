// Training kernel: FP16 / BF16 / FP8 conversions and packed math.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
extern "C" __global__ void half_ops(__half2* out, const __half2* a, __nv_bfloat162* bo, const __nv_bfloat162* b, float* fo, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 x = a[i], y = a[i + n], z = a[i + 2 * n];
  __half2 r = __hfma2(x, y, z) + __hmul2(x, __float2half2_rn(1.5f)) - __habs2(y) + __hmax2(x, y) + __hmin2(y, z);
  r = __hadd2_sat(r, h2exp(x)) + h2sqrt(y) + h2rcp(z) + h2log(x) + h2sin(y) + __hneg2(z) + __hfma2_relu(x, y, z);
  r += __hgt2(x, y) + __hle2(y, z);
  __half h = __low2half(r) + __high2half(x) * __float2half(2.0f);
  h = hexp(h) + hsqrt(h) + __hdiv(h, __high2half(y));
  __nv_bfloat162 p = b[i], q = b[i + n];
  __nv_bfloat162 br = __hfma2(p, q, p) + __hmul2(p, q) - __hmax2(p, q);
  bo[i] = br + __floats2bfloat162_rn(__low2float(x), fo[i]);
  out[i] = r + __halves2half2(h, __float2half_rz(fo[i + n]));
  __nv_fp8x2_e4m3 e = __nv_fp8x2_e4m3(__half22float2(r));
  __nv_fp8x2_e5m2 e5 = __nv_fp8x2_e5m2(__bfloat1622float2(br));
  float2 back = (float2)e;
  float2 back5 = (float2)e5;
  fo[i] = __half2float(h) + __bfloat162float(__low2bfloat16(br)) + back.x + back5.y + __half2float(__int2half_rn(i)) + (float)__half2int_rz(h) + (float)__bfloat162int_rn(__high2bfloat16(p));
  fo[i + n] = (float)__half2ushort_rd(h) + __half2float(__ushort2half_ru(i)) + __bfloat162float(__float2bfloat16_rz(fo[i])) + (__hisnan(h) ? 1.f : 0.f);
}

// Held-out kernels (NOT training): half/bf16/fp8 conversions and arithmetic, int/float conversions, special values.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
#include <cuda_fp8.h>
#endif
extern "C" __global__ void half_ops(half2* out, const half2* a, const half2* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  half2 x = a[i], y = b[i];
  half2 r = __hfma2(x, y, __float2half2_rn(-INFINITY));
  r = __hadd2(r, __hmul2(x, __floats2half2_rn(65504.f, -0.0f)));
  r = __hmax2(r, __halves2half2(__float2half(-INFINITY), __float2half(INFINITY)));
  r = __hmin2(r, __floats2half2_rn(6.0e-8f, -1.0f));
  r = __hsub2_sat(r, h2sqrt(__habs2(x)));
  r = __hfma2_relu(r, y, x);
  half h = __hfma(__low2half(x), __high2half(y), __float2half(NAN));
  bool lt = __hblt2(x, y) | __hbeq2(x, y) | __hisnan(h);
  r = __hneg2(r);
  out[i] = lt ? r : __hmul2_sat(x, __halves2half2(h, __int2half_rn(i)));
}
extern "C" __global__ void bf16_ops(__nv_bfloat162* out, const __nv_bfloat162* a, const float* f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __nv_bfloat162 x = a[i];
  __nv_bfloat162 y = __floats2bfloat162_rn(f[i], -INFINITY);
  __nv_bfloat162 r = __hadd2(__hmul2(x, y), __float2bfloat162_rn(3.0e38f));
  r = __hmax2(r, __hmul2(x, y));
  r = __hadd2(r, __hneg2(x));
  float s = __bfloat162float(r.x) + __bfloat162float(r.y) + __bfloat162float(__float2bfloat16_rz(f[i] * 1.0e-40f));
  out[i] = __halves2bfloat162(__float2bfloat16(s), __int2bfloat16_rn(i));
}
extern "C" __global__ void fp8_conv(unsigned* out, const float* in, const half* hin, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if __CUDA_ARCH__ >= 890
  float2 v = make_float2(in[2 * i], in[2 * i + 1]);
  __nv_fp8x2_e4m3 a(v);
  __nv_fp8x2_e5m2 b(v);
  __nv_fp8_e4m3 c(hin[i]);
  __nv_fp8_e5m2 d(-in[i]);
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(a.__x, __NV_E4M3);
  __half2_raw g = __nv_cvt_fp8x2_to_halfraw2(b.__x, __NV_E5M2);
  float back = float(c) + float(d);
  __nv_fp8x4_e4m3 q(make_float4(v.x, v.y, back, -back));
  out[i] = a.__x | (b.__x << 16) | h.x ^ g.y ^ q.__x ^ __float_as_uint(back);
#else
  out[i] = __float_as_uint(in[i]) ^ __half_as_ushort(hin[i]);
#endif
}
extern "C" __global__ void int_float_conv(float* fo, int* io, long long* lo, const float* f, const double* d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = f[i];
  double y = d[i];
  io[i] = __float2int_rn(x) + __float2int_rz(x) + __float2int_ru(x) + __float2int_rd(x) + (int)__float2uint_rn(x) +
          __double2int_rz(y) + (int)(char)x + (int)(short)y + __float_as_int(x);
  lo[i] = __float2ll_rn(x) + __double2ll_rd(y) + (long long)__double2ull_ru(y) + (long long)(x * 1e10f);
  fo[i] = __int2float_rn(i) + __uint2float_rz(i) + __ll2float_rn(lo[i]) + __double2float_rd(y) + (float)(unsigned char)i +
          __saturatef(x) + __fdividef(x, 3.f) + __frcp_rn(x) + __fsqrt_rd(x) + __frsqrt_rn(x) + copysignf(0.f, x) +
          (isinf(x) ? INFINITY : -INFINITY) + (isnan(x) ? NAN : 1.17549435e-38f) + 1.4e-45f * x + __fmaf_rz(x, x, -0.0f);
}

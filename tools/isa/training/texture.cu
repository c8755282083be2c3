// Training kernels: texture and surface instructions (TEX, TLD, TLD4, TXD, TXQ, SULD, SUST, SUQ, SURED),
// every dimension, gather component, level/gradient form and boundary mode.
#include <cuda_fp16.h>
template <typename T>
__device__ __forceinline__ T pick(int k, T a, T b) { return k & 1 ? a : b; }

extern "C" __global__ void tex_forms(float* out, cudaTextureObject_t a, cudaTextureObject_t b, cudaTextureObject_t c,
                                     int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = i * s, y = x * 0.5f, z = x * 0.25f;
  float r = tex1D<float>(a, x) + tex1DLod<float>(a, x, 2.f) + tex1DLayered<float>(b, x, i & 3);
  r += tex2D<float>(b, x, y) + tex2DLod<float>(b, x, y, 0.5f) + tex2DLayered<float>(c, x, y, 1);
  r += tex3D<float>(c, x, y, z) + tex3DLod<float>(c, x, y, z, 1.f);
  r += texCubemap<float>(c, x, y, z) + texCubemapLayered<float>(c, x, y, z, 2);
  float4 g0 = tex2Dgather<float4>(b, x, y, 0), g2 = tex2Dgather<float4>(b, x, y, 2), g3 = tex2Dgather<float4>(b, x, y, 3);
  float4 d = tex2DGrad<float4>(b, x, y, make_float2(s, 0.f), make_float2(0.f, s));
  float4 e = tex3DGrad<float4>(c, x, y, z, make_float4(s, 0, 0, 0), make_float4(0, s, 0, 0));
  float4 f = tex1DGrad<float4>(a, x, s, -s);
  int t1 = tex1Dfetch<int>(a, i) + tex1Dfetch<int>(a, i + 7);
  uint2 t2 = tex1Dfetch<uint2>(b, i * 3);
  float4 t4 = tex1Dfetch<float4>(c, i >> 1);
  r += g0.x + g2.y + g3.w + d.x + d.w + e.z + f.y + t1 + t2.x + t2.y + t4.z;
  out[i] = r;
}
extern "C" __global__ void tex_query(int* out, cudaTextureObject_t a, cudaTextureObject_t b) {
  int w, h, d, lv, fmt;
  asm volatile("txq.width.b32 %0, [%1];" : "=r"(w) : "l"(a));
  asm volatile("txq.height.b32 %0, [%1];" : "=r"(h) : "l"(b));
  asm volatile("txq.depth.b32 %0, [%1];" : "=r"(d) : "l"(b));
  asm volatile("txq.num_mipmap_levels.b32 %0, [%1];" : "=r"(lv) : "l"(a));
  asm volatile("txq.channel_data_type.b32 %0, [%1];" : "=r"(fmt) : "l"(a));
  out[threadIdx.x] = w + h * 3 + d * 5 + lv * 7 + fmt;
}
extern "C" __global__ void surf_forms(cudaSurfaceObject_t s1, cudaSurfaceObject_t s2, cudaSurfaceObject_t s3, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v1 = surf1Dread<int>(s1, i * 4);
  short2 v2 = surf2Dread<short2>(s2, i * 4, i & 15, cudaBoundaryModeClamp);
  float2 v3 = surf3Dread<float2>(s3, i * 8, 1, 2, cudaBoundaryModeZero);
  uint4 v4 = surf2Dread<uint4>(s2, i * 16, 3);
  char v5 = surf1DLayeredread<char>(s1, i, 1);
  float v6 = surf2DLayeredread<float>(s2, i * 4, 2, 1);
  surf1Dwrite<int>(v1 + 1, s1, i * 4, cudaBoundaryModeClamp);
  surf2Dwrite<short2>(make_short2(v2.y, v2.x), s2, i * 4, 5);
  surf3Dwrite<float2>(make_float2(v3.y, v6), s3, i * 8, 0, 1, cudaBoundaryModeZero);
  surf2Dwrite<uint4>(make_uint4(v4.w, v4.z, v4.y, v4.x + v5), s2, i * 16, 7, cudaBoundaryModeTrap);
  surf1DLayeredwrite<char>(v5 + 2, s1, i, 3);
  surf2DLayeredwrite<float>(v6 * 2.f, s2, i * 4, 1, 0);
  int w, h;
  asm volatile("suq.width.b32 %0, [%1];" : "=r"(w) : "l"(s1));
  asm volatile("suq.height.b32 %0, [%1];" : "=r"(h) : "l"(s2));
  if (w + h == 7) surf1Dwrite<int>(w, s1, 0);
}

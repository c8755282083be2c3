// Training kernels: operand-kind combinations that the other kernels leave out (a uniform FLO source, a
// warp-collective branch over the whole warp, half2 -> fp8 packing, half/bf16 FMA with an immediate pair,
// funnel shifts and 64-bit carries with an immediate operand, half2/bf16x2 min/max with an immediate pair,
// uniform float arithmetic and 64-bit min/max against a uniform operand).
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
namespace cg = cooperative_groups;
extern "C" __global__ void uniform_bits(unsigned* out, unsigned a, unsigned b, int c, long long d) {
  unsigned t = threadIdx.x;
  out[t] = __clz(a) + __ffs(b) + (31 - __clz(c)) + __clzll(d) + __ffsll(d);
  out[t + 64] = __popc(a ^ b) + __brev(a + c);
}
extern "C" __global__ void collective_groups(int* out, const int* in, int n) {
  int t = threadIdx.x, v = in[t];
  for (int k = 0; k < n; ++k) {
    if ((v + k) & 3) {
      cg::coalesced_group g = cg::coalesced_threads();
      v += g.shfl(v, g.size() - 1) + g.thread_rank();
      g.sync();
    }
    if (v & 8) {
      cg::coalesced_group g = cg::coalesced_threads();
      v ^= g.ballot(v > k) + g.any(v == 3);
    }
  }
  out[t] = v;
}
extern "C" __global__ void pack_fp8(unsigned short* o, const __half2* h, const __nv_bfloat162* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2_raw hr = h[i];
  __nv_bfloat162_raw br = b[i];
  o[i] = __nv_cvt_halfraw2_to_fp8x2(hr, __NV_SATFINITE, __NV_E4M3) + __nv_cvt_halfraw2_to_fp8x2(hr, __NV_NOSAT, __NV_E5M2);
  o[i + n] = __nv_cvt_bfloat16raw2_to_fp8x2(br, __NV_SATFINITE, __NV_E5M2) + __nv_cvt_bfloat16raw2_to_fp8x2(br, __NV_NOSAT, __NV_E4M3);
  o[i + 2 * n] = __nv_cvt_halfraw2_to_fp8x2(__half2_raw(__hmul2(h[i], h[i + n])), __NV_SATFINITE, __NV_E5M2);
}
extern "C" __global__ void pair_immediates(__half2* o, const __half2* a, __nv_bfloat162* bo, const __nv_bfloat162* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 x = a[i], y = a[i + n];
  o[i] = __hfma2(__low2half2(x), __high2half2(y), __floats2half2_rn(0.75f, -3.f));
  o[i + n] = __hfma2(x, y, __floats2half2_rn(-65504.f, 1e-3f)) * __floats2half2_rn(2.5f, 2.5f);
#if __CUDA_ARCH__ >= 800
  __nv_bfloat162 p = b[i], q = b[i + n];
  bo[i] = __hfma2(p, q, __floats2bfloat162_rn(1.0e38f, -7.5f));
  bo[i + n] = __hfma2(__high2bfloat162(p), q, __floats2bfloat162_rn(0.3f, 3.0e38f));
#endif
}
extern "C" __global__ void shift_carry(unsigned* o, unsigned long long* q, const unsigned* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], s = a[i + n];
  o[i] = __funnelshift_l(x, 0xfffffffeu, s) + __funnelshift_r(x, 0x80000001u, s) + __funnelshift_lc(x, 7u, s) +
         __funnelshift_rc(0x12345u, x, s);
  q[i] = (unsigned long long)x - 1ull + ((unsigned long long)s << 33);
  q[i + n] = (unsigned long long)(x | 1) - 3ull;
}
extern "C" __global__ void aggregated_atomics(unsigned* counter, unsigned* out, const unsigned* in, int n) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n && (in[t] & 1)) {
    unsigned mask = __activemask(), lane = threadIdx.x & 31, leader = __ffs(mask) - 1, base = 0;
    if (lane == leader) base = atomicAdd(counter, __popc(mask));
    base = __shfl_sync(mask, base, leader);
    out[t] = base + __popc(mask & ((1u << lane) - 1)) + (31 - __clz(mask));
  }
}
extern "C" __global__ void grid_phases(float* data, int n, int phases) {
  cg::grid_group grid = cg::this_grid();
  for (int p = 0; p < phases; ++p) {
    for (int i = grid.thread_rank(); i < n; i += grid.size()) data[i] = data[i] * 0.5f + p;
    if (data[p] > 0.f) grid.sync();
    else __syncthreads();
  }
}
extern "C" __global__ void half_clamp(__half2* o, const __half2* a, __nv_bfloat162* bo, const __nv_bfloat162* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  o[i] = __hmin2(__hmax2(a[i], __floats2half2_rn(-2.f, 1e-3f)), __floats2half2_rn(__int_as_float(0x7f800000), 448.f));
#if __CUDA_ARCH__ >= 800
  bo[i] = __hmin2(__hmax2(b[i], __floats2bfloat162_rn(-8.f, 0.5f)), __floats2bfloat162_rn(3.0e38f, 96.f));
#endif
}
extern "C" __global__ void uniform_float(float* o, const float* a, unsigned long long* q, int w, int h, float scale,
                                         unsigned long long lim) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  float v = (blockIdx.y + 0.5f) / h, u = (blockIdx.z - 0.25f) * scale;
  if (x < w) o[blockIdx.y * w + x] = a[x] * v + u;
  unsigned long long e = q[x];
  q[x] = umin(e, lim) + umax(e, lim >> 3) + (unsigned long long)max((long long)e, (long long)lim);
}
// non-inlined callees: a uniform argument arrives in a uniform register (FFMA R R UR R, FFMA R R R -UR)
__device__ __noinline__ float blend(float x, float w, float k) { return fmaf(x, k, w) * fmaf(w, x, -k) + k; }
__device__ __noinline__ float ramp(float x, float lo) { return fmaxf(x - lo, 0.f) * lo + x; }
extern "C" __global__ void call_constants(float* o, const float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i];
  o[i] = blend(x, 2.5f, 0.125f) + ramp(x, -1.5f) + blend(a[i + n], x, 7.f);
}
// bf16x2 FMA with one immediate for both halves and a swizzled register (HFMA2.BF16_V2 R R R.H0_H0 F F)
extern "C" __global__ void bf16_pairs(__nv_bfloat162* bo, const __nv_bfloat162* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if __CUDA_ARCH__ >= 800
  __nv_bfloat162 p = b[i], q = b[i + n];
  bo[i] = __hfma2(p, __low2bfloat162(q), __float2bfloat162_rn(-0.625f));
  bo[i + n] = __hfma2(__high2bfloat162(p), q, __float2bfloat162_rn(1.0e30f)) + __float2bfloat162_rn(12.f);
#endif
}

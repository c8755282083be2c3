// Held-out kernels (NOT training): texture/surface objects, cooperative groups, warp intrinsics.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void tex_sample(float4* out, cudaTextureObject_t t2, cudaTextureObject_t t1, cudaTextureObject_t t3,
                                      int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w || y >= h) return;
  float u = (x + 0.5f) / w, v = (y + 0.5f) / h;
  float4 a = tex2D<float4>(t2, u, v);
  float4 b = tex2DLod<float4>(t2, u, v, 1.5f);
  float4 c = tex1Dfetch<float4>(t1, x);
  float4 d = tex3D<float4>(t3, u, v, 0.25f);
  float4 g = tex2Dgather<float4>(t2, u, v, 1);
  float4 e = tex2DGrad<float4>(t2, u, v, make_float2(0.1f, 0.f), make_float2(0.f, 0.1f));
  float4 l = tex2DLayered<float4>(t3, u, v, 2);
  out[y * w + x] = make_float4(a.x + b.y + c.z + d.w, g.x + e.y, l.z, a.w * g.w);
}
extern "C" __global__ void surf_rw(cudaSurfaceObject_t s2, cudaSurfaceObject_t s1, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w || y >= h) return;
  float4 p = surf2Dread<float4>(s2, x * 16, y);
  uchar4 q = surf1Dread<uchar4>(s1, x * 4, cudaBoundaryModeClamp);
  p.x += q.x;
  surf2Dwrite(p, s2, x * 16, y, cudaBoundaryModeZero);
  surf1Dwrite(make_uchar4(q.w, q.z, q.y, q.x), s1, x * 4);
  int sz;
  asm volatile("suq.width.b32 %0, [%1];" : "=r"(sz) : "l"(s2));
  if (sz == 0) surf1Dwrite(make_uchar4(0, 0, 0, 0), s1, 0);
}
extern "C" __global__ void coop_reduce(float* out, const float* in, unsigned* counter, int n) {
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  cg::thread_block_tile<8> tile8 = cg::tiled_partition<8>(block);
  float v = 0.f;
  for (int i = grid.thread_rank(); i < n; i += grid.size()) v += in[i];
  v = cg::reduce(warp, v, cg::plus<float>());
  int iv = cg::reduce(tile8, (int)v, cg::greater<int>());
  unsigned bal = warp.ballot(v > 0.f);
  bool any = warp.any(iv > 3), all = warp.all(iv < 100);
  cg::coalesced_group active = cg::coalesced_threads();
  if (v > 1.f) {
    cg::coalesced_group sub = cg::coalesced_threads();
    iv += sub.thread_rank() + sub.shfl(iv, 0);
  }
  if (warp.thread_rank() == 0) atomicAdd(out, v + bal + any + all + active.size() + iv);
  grid.sync();
  if (grid.thread_rank() == 0) atomicAdd(counter, 1u);
}
extern "C" __global__ void warp_intrinsics(unsigned* out, const unsigned* in, const float* f) {
  unsigned v = in[threadIdx.x];
  unsigned m = __activemask();
  unsigned b = __ballot_sync(m, v & 1);
  int a = __any_sync(m, v > 7) + __all_sync(m, v < 99) + __uni_sync(m, v == 3);
  unsigned s = __shfl_sync(m, v, 5) + __shfl_up_sync(m, v, 2, 16) + __shfl_down_sync(m, v, 3, 8) + __shfl_xor_sync(m, v, 9);
  float fs = __shfl_sync(m, f[threadIdx.x], threadIdx.x ^ 1);
  unsigned mt = __match_any_sync(m, v);
  int pred;
  unsigned ma = __match_all_sync(m, v >> 4, &pred);
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  s += __reduce_add_sync(m, v) + __reduce_max_sync(m, v) + __reduce_min_sync(m, (unsigned)a) + __reduce_or_sync(m, v) +
       __reduce_and_sync(m, v) + __reduce_xor_sync(m, v) + (unsigned)__reduce_max_sync(m, (int)v);
#endif
  __syncwarp(m);
  out[threadIdx.x] = b + a + s + mt + ma + pred + __popc(v) + __clz(v) + __ffs(v) + __brev(v) + __byte_perm(v, s, 0x3210 + a) +
                     __funnelshift_l(v, s, a) + __funnelshift_r(v, s, 7) + (unsigned)fs + __sad(v, s, 3) + __usad(v, b, mt) +
                     __mul24(v, s) + __umulhi(v, s) + (unsigned)__mul64hi(v, s) + __vabsdiffu4(v, s) + __dp4a(v, s, 3u) + __dp2a_lo(v, s, 5u);
}

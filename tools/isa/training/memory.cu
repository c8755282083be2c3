// Training kernel: memory spaces, widths, atomics, reductions, shuffles, votes, barriers.
#include <cstdint>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
__constant__ float cbuf[256];
__device__ int gcounter;
__device__ float gtable[1024];

extern "C" __global__ void __launch_bounds__(256) mem_ops(int4* o4, const int4* i4, int2* o2, const int2* i2, char* oc, const short* is,
                                                          const unsigned char* ib, double* od, float* of, int* oi, unsigned long long* ou, int n, int k) {
  __shared__ int4 sm4[256];
  __shared__ float smf[512];
  __shared__ unsigned long long smu[64];
  __shared__ short sms[128];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  int4 v = i4[i];
  int4 vc = __ldg(&i4[i + n]);
  int4 vs = __ldcs(&i4[i + 2 * n]);
  int2 w = i2[i];
  int2 wl = __ldlu(&i2[i + 3]);
  sm4[t] = v;
  smf[t] = (float)w.x + cbuf[t & 255] + cbuf[k];
  smf[t + 256] = __ldcg(&of[i]);
  sms[t & 127] = is[i] + ib[i];
  smu[t & 63] = ou[i];
  __syncthreads();
  int4 s = sm4[(t + 1) & 255];
  float f = smf[(t * 3) & 511] + smf[k];
  o4[i] = make_int4(s.x + vc.x, s.y + vs.y, s.z, s.w);
  __stcs(&o4[i + n], v);
  __stwt(&o2[i], wl);
  o2[i + 1] = w;
  oc[i] = (char)s.x;
  oc[i + 7] = (char)sms[(t + 5) & 127];
  od[i] = (double)f + (double)smu[(t + 1) & 63];
  atomicAdd(&of[i & 15], f);
  atomicAdd(&od[k], 1.0);
  atomicAdd(&oi[k], 1);
  atomicMax(&oi[1], i);
  atomicMin((unsigned*)&oi[2], (unsigned)i);
  atomicAnd(&oi[3], i);
  atomicOr(&oi[4], i);
  atomicXor(&oi[5], i);
  int old = atomicExch(&oi[6], i);
  int cas = atomicCAS(&oi[7], old, i);
  unsigned long long ucas = atomicCAS(&ou[1], (unsigned long long)i, 5ull);
  atomicAdd(&ou[2], ucas);
  atomicInc((unsigned*)&oi[8], 100u);
  atomicDec((unsigned*)&oi[9], 100u);
  int r = atomicAdd(&gcounter, cas);
  atomicAdd((int*)&smf[t & 7], 1);
  atomicAdd(&smf[(t + 3) & 7], 2.0f);
  atomicMax((int*)&sm4[t & 3].x, r);
  atomicCAS((int*)&sm4[t & 3].y, r, 5);
  atomicExch(&smu[t & 3], 7ull);
  atomicAdd(&smu[t & 7], 3ull);
  atomicAdd_block(&oi[10], 1);
  atomicAdd_system(&oi[11], 1);
  unsigned m = __activemask();
  int sh = __shfl_sync(m, r, 3) + __shfl_up_sync(m, r, 1) + __shfl_down_sync(m, r, 2) + __shfl_xor_sync(m, r, 4, 16);
  sh += __shfl_sync(0xffffffff, r, k);
  sh += __all_sync(m, r > 0) + __any_sync(m, r < 0) + __popc(__ballot_sync(m, r & 1)) + __match_any_sync(m, r);
  int pred;
  sh += __match_all_sync(m, r, &pred) + pred;
#if __CUDA_ARCH__ >= 800
  sh += __reduce_add_sync(m, r) + __reduce_min_sync(m, (unsigned)r) + __reduce_max_sync(m, r) + __reduce_and_sync(m, (unsigned)r) + __reduce_or_sync(m, (unsigned)r) + __reduce_xor_sync(m, (unsigned)r);
#endif
  sh += __syncthreads_count(r > 3) + __syncthreads_and(r > 2) + __syncthreads_or(r > 1);
  __syncwarp(m);
  __threadfence();
  __threadfence_block();
  __threadfence_system();
  sh += (int)clock() + (int)clock64(); __nanosleep(10u);
  unsigned laneid;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(laneid));
  unsigned smid, nsmid, warpid, gridid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(nsmid));
  asm volatile("mov.u32 %0, %%warpid;" : "=r"(warpid));
  asm volatile("mov.u32 %0, %%gridid;" : "=r"(gridid));
  sh += laneid + smid + nsmid + warpid + gridid + threadIdx.y + threadIdx.z + blockIdx.y + blockIdx.z + blockDim.y + gridDim.x;
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
  sh += cg::reduce(tile, sh, cg::plus<int>());
  oi[i + 20] = sh + gtable[t] + (int)__ldca(&gtable[k]);
  gtable[t] = f;
  volatile float* vol = of;
  vol[i + 100] = 1.0f;
  float local[32];
#pragma unroll 1
  for (int j = 0; j < 32; ++j) local[j] = of[j * k];
  of[i + 200] = local[k & 31] + local[(k + 1) & 31];

}

extern "C" __global__ void spills(float* out, const float* a, int n) {
  float r[64];
#pragma unroll
  for (int j = 0; j < 64; ++j) r[j] = a[j * n + threadIdx.x];
#pragma unroll
  for (int it = 0; it < 4; ++it)
#pragma unroll
    for (int j = 0; j < 64; ++j) r[j] = fmaf(r[j], r[(j + it + 1) & 63], r[(j * 7) & 63]);
  float s = 0;
#pragma unroll
  for (int j = 0; j < 64; ++j) s += r[j] * r[63 - j];
  out[threadIdx.x] = s;
}

extern "C" __global__ void dyn_shared(float* out, const float* a, int n) {
  extern __shared__ float dsm[];
  unsigned short hs = (unsigned short)threadIdx.x;
  dsm[threadIdx.x] = a[threadIdx.x];
  ((unsigned short*)dsm)[threadIdx.x + 1024] = hs;
  ((double*)dsm)[threadIdx.x + 512] = (double)a[n];
  ((float4*)dsm)[threadIdx.x + 2048] = make_float4(1, 2, 3, 4);
  __syncthreads();
  float4 q = ((float4*)dsm)[threadIdx.x ^ 1];
  out[threadIdx.x] = dsm[n - threadIdx.x] + ((unsigned short*)dsm)[threadIdx.x + 3] + ((signed char*)dsm)[n] + (float)((double*)dsm)[n & 7] + q.x + q.w;
}

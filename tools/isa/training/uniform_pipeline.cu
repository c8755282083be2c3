// Training kernel: Triton-style software pipelines on the uniform datapath: stage counters wrapped with
// USEL UR, UR, URZ, !UP; UISETP on two uniform registers; 64-bit uniform descriptor arithmetic (UIADD3.64,
// sm_90a wgmma loops only); selp / setp on warp-uniform values through inline PTX; per-thread pointer increments.
#include <cuda_fp16.h>
extern "C" __global__ void upipe_stages(float* out, const float* __restrict__ a, long long ld, int K, int M, int S,
                                        long long base0, unsigned long long d0) {
  __shared__ float sm[4][256];
  float acc = 0.f;
  int stage = 0, phase = 0;
  unsigned long long desc = d0;
  long long pa = base0;
  for (int k = 0; k < K; k += 32) {
    sm[stage][threadIdx.x] = a[threadIdx.x + (long long)k * ld];
    __syncthreads();
    acc += sm[stage][(threadIdx.x + 1) & 255];
    int ns = stage + 1;
    stage = ns > 2 ? 0 : ns;
    phase = ns > 2 ? phase ^ 1 : phase;
    asm volatile("{ .reg .pred p; .reg .s32 t; setp.ge.s32 p, %1, %2; selp.s32 t, %1, 0, p; add.s32 %0, %0, t; }"
                 : "+r"(M) : "r"(k), "r"(S));
    asm volatile("{ .reg .pred p; .reg .u32 t; setp.lt.u32 p, %1, %2; selp.u32 t, %2, %1, p; xor.b32 %0, %0, t; }"
                 : "+r"(S) : "r"(k), "r"(K));
    desc += (unsigned long long)(k) * 2ull;
    pa = pa - (long long)desc;
  }
  out[threadIdx.x] = acc + (float)stage + (float)phase + (float)M + (float)S + (float)(pa & 0xffff) + (float)(desc >> 40);
}

extern "C" __global__ void __launch_bounds__(128) upipe_wgmma(float* out, unsigned long long da0, unsigned long long db0,
                                                               long long sa, long long sb, int K, int S) {
  float d[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) d[k] = 0.f;
  unsigned long long da = da0, db = db0, dc = db0 ^ 0x40;
  int stage = 0;
  for (int k = 0; k < K; k += 16) {
    unsigned long long ea, eb, ec;
    asm volatile("add.s64 %0, %1, %2;" : "=l"(ea) : "l"(da), "l"((long long)stage * 128));
    asm volatile("sub.s64 %0, %1, %2;" : "=l"(eb) : "l"(db), "l"(sb));
    asm volatile("add.s64 %0, %1, %2;" : "=l"(ec) : "l"(dc), "l"(sa));
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;");
    asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, 1, 1, 1, 0, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]) : "l"(ea), "l"(eb));
    asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, 1, 1, 1, 0, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]) : "l"(ec), "l"(ea));
    asm volatile("wgmma.commit_group.sync.aligned;");
    asm volatile("wgmma.wait_group.sync.aligned 0;");
#else
    d[k & 7] += (float)(ea ^ eb ^ ec);
#endif
    da += 0x80; db += 2; dc += (unsigned long long)S;
    int ns = stage + 1;
    stage = ns > 2 ? 0 : ns;
  }
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < 8; ++k) acc += d[k];
  out[threadIdx.x] = acc + (float)stage;
}

extern "C" __global__ void upipe_stages2(float* out, const float* __restrict__ a, long long ld, int K, int M, int S,
                                         long long base0, unsigned long long d0) {
  __shared__ float sm[4][256];
  float acc = 0.f;
  int stage = 0;
  unsigned long long desc = d0;
  long long pa = base0;
  for (int k = 0; k < K; k += 32) {
    sm[stage][threadIdx.x] = a[threadIdx.x + (long long)k * ld];
    __syncthreads();
    acc += sm[stage][(threadIdx.x + 1) & 255];
    int ns = stage + 1;
    stage = ns > 2 ? 0 : ns;
    asm volatile("{ .reg .pred p; .reg .s32 t; setp.ge.s32 p, %1, %2; selp.s32 t, %1, 0, p; add.s32 %0, %0, t; }"
                 : "+r"(M) : "r"(k), "r"(S));
    desc += (unsigned long long)(k) * 2ull;
    pa = pa - (long long)desc;
  }
  out[threadIdx.x] = acc + (float)stage + (float)M + (float)(pa & 0xffff) + (float)(desc >> 40);
}

extern "C" __global__ void __launch_bounds__(128) upipe_wgmma2(float* out, unsigned long long da0, unsigned long long db0,
                                                                long long sa, long long sb, int K, int S) {
  float d[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) d[k] = 0.f;
  unsigned long long da = da0, db = db0;
  int stage = 0;
  for (int k = 0; k < K; k += 16) {
    unsigned long long ea, eb;
    asm volatile("add.s64 %0, %1, %2;" : "=l"(ea) : "l"(da), "l"((long long)stage * 128));
    asm volatile("sub.s64 %0, %1, %2;" : "=l"(eb) : "l"(db), "l"(sb));
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;");
    asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, 1, 1, 1, 0, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]) : "l"(ea), "l"(eb));
    asm volatile("wgmma.commit_group.sync.aligned;");
    asm volatile("wgmma.wait_group.sync.aligned 0;");
#else
    d[k & 7] += (float)(ea ^ eb);
#endif
    da += 0x80; db += 2;
    int ns = stage + 1;
    stage = ns > 2 ? 0 : ns;
  }
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < 8; ++k) acc += d[k];
  out[threadIdx.x] = acc;
}

// Per-thread pointer tensors advanced by one shared 64-bit stride (IMAD.X R, R, 0x1, R.reuse, P).
extern "C" __global__ void upipe_ptrs(float* out, const float* const* __restrict__ ptrs, const long long* __restrict__ strides, int K) {
  long long s2 = strides[threadIdx.x];
  const float* p[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) p[j] = ptrs[j * 128 + threadIdx.x];
  float acc = 0.f;
#pragma unroll 1
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int j = 0; j < 8; j += 2) acc += *p[j] * *p[j + 1];
#pragma unroll
    for (int j = 0; j < 8; ++j) p[j] += s2;
  }
  out[threadIdx.x] = acc;
}

// Training kernel (sm_90a): back-to-back wgmma in one group (HGMMA without gsb0), uniform loop control.
#include <cuda_fp16.h>
__device__ __forceinline__ unsigned long long mkdesc(unsigned addr) {
  return ((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
extern "C" __global__ void __launch_bounds__(128) wgmma_chain(float* out, int K) {
  __shared__ __align__(1024) half sa[64 * 64];
  __shared__ __align__(1024) half sb[128 * 64];
  unsigned a0 = (unsigned)__cvta_generic_to_shared(sa), b0 = (unsigned)__cvta_generic_to_shared(sb);
  float d[32];
#pragma unroll
  for (int k = 0; k < 32; ++k) d[k] = 0.f;
  for (int k = 0; k < K; k += 2) {
    asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      unsigned long long da = mkdesc(a0 + s * 32), db = mkdesc(b0 + s * 32);
      asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                   "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, 1, 1, 1, 0, 1;"
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                     "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                     "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                   : "l"(da), "l"(db));
    }
    asm volatile("wgmma.commit_group.sync.aligned;");
    asm volatile("wgmma.wait_group.sync.aligned 1;");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;");
#pragma unroll
  for (int k = 0; k < 32; ++k) out[threadIdx.x * 32 + k] = d[k];
}

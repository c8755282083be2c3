// Training kernel (sm_90a): wgmma, TMA / cp.async.bulk, clusters, elect, fences, stmatrix, setmaxnreg.
#include <cuda.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ __forceinline__ unsigned long long make_desc(const void* p) {
  unsigned long long a = (unsigned long long)__cvta_generic_to_shared(p);
  return ((a & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128) wgmma_ops(float* out, const half* a, const __grid_constant__ CUtensorMap tmap, int n) {
  __shared__ __align__(1024) half sa[64 * 64];
  __shared__ __align__(1024) half sb[64 * 64];
  __shared__ __align__(8) unsigned long long bar;
  unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
  unsigned sa_addr = (unsigned)__cvta_generic_to_shared(sa);
  int t = threadIdx.x;
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar_addr), "r"(1));
    asm volatile("fence.mbarrier_init.release.cluster;");
    asm volatile("fence.proxy.async.shared::cta;");
  }
  __syncthreads();
  if (t == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_addr), "r"(8192));
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(sa_addr), "l"(&tmap), "r"(0), "r"(n), "r"(bar_addr) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"((unsigned)__cvta_generic_to_shared(sb)), "l"(a), "r"(4096), "r"(bar_addr) : "memory");
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a + 4096), "r"(1024));
  }
  asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W; }" ::"r"(bar_addr), "r"(0));
  float d[32];
#pragma unroll
  for (int k = 0; k < 32; ++k) d[k] = 0.f;
  unsigned long long da = make_desc(sa), db = make_desc(sb);
  asm volatile("wgmma.fence.sync.aligned;");
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, 1, 1, 1, 0, 1;"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                 "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                 "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(da), "l"(db));
  asm volatile("wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, 1, 1, 1, 1, 1;"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                 "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "l"(da + 2), "l"(db + 2));
  int q[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  asm volatile("wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.s8 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, 0;"
               : "+r"(q[0]), "+r"(q[1]), "+r"(q[2]), "+r"(q[3]), "+r"(q[4]), "+r"(q[5]), "+r"(q[6]), "+r"(q[7]) : "l"(da), "l"(db));
  asm volatile("wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e5m2 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, 1, 1, 1;"
               : "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]) : "l"(da), "l"(db));
  unsigned ra0 = __float_as_uint(d[1]), ra1 = __float_as_uint(d[2]), ra2 = __float_as_uint(d[3]), ra3 = __float_as_uint(d[4]);
  asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1, 1, 1, 1;"
               : "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]) : "r"(ra0), "r"(ra1), "r"(ra2), "r"(ra3), "l"(db));
  asm volatile("wgmma.commit_group.sync.aligned;");
  asm volatile("wgmma.wait_group.sync.aligned 0;");
  unsigned sx = (unsigned)__cvta_generic_to_shared(&sb[t * 8]);
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};" ::"r"(sx), "r"(ra0), "r"(ra1), "r"(ra2), "r"(ra3));
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1,%2};" ::"r"(sx), "r"(ra0), "r"(ra1));
  asm volatile("fence.proxy.async.shared::cta;");
  __syncthreads();
  if (t == 0) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(&tmap), "r"(0), "r"(n), "r"((unsigned)__cvta_generic_to_shared(sb)) : "memory");
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(out + 4096), "r"((unsigned)__cvta_generic_to_shared(sb)), "r"(1024) : "memory");
    asm volatile("cp.async.bulk.commit_group;");
    asm volatile("cp.async.bulk.wait_group.read 0;");
  }
  unsigned elected = 0;
  asm volatile("{ .reg .pred p; elect.sync _|p, 0xffffffff; selp.u32 %0, 1, 0, p; }" : "=r"(elected));
  cg::cluster_group cl = cg::this_cluster();
  unsigned rank = cl.block_rank();
  float* remote = cl.map_shared_rank((float*)sa, rank ^ 1);
  cl.sync();
  float rv = remote[t];
  unsigned cid;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
  asm volatile("barrier.cluster.arrive.relaxed;");
  asm volatile("barrier.cluster.wait;");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  float acc = rv + (float)(elected + cid + rank);
#pragma unroll
  for (int k = 0; k < 32; ++k) acc += d[k] * (float)q[k & 7];
  out[blockIdx.x * 128 + t] = acc;
}

// Round-trip corpus, sm_90+ only: mbarrier, bulk async copies, clusters; wgmma on sm_90a.
#include <cstdint>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void mbarrier_bulk_copy(const float *g, float *out) {
  __shared__ __align__(128) float buf[256];
  __shared__ __align__(8) uint64_t bar;
  unsigned sbar = (unsigned)__cvta_generic_to_shared(&bar);
  unsigned sbuf = (unsigned)__cvta_generic_to_shared(buf);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(sbar));
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], 1024;" ::"r"(sbar));
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 1024, [%2];"
                 ::"r"(sbuf), "l"(g), "r"(sbar) : "memory");
  }
  __syncthreads();
  asm volatile(
      "{\n.reg .pred p;\nWAIT:\nmbarrier.try_wait.parity.shared.b64 p, [%0], 0;\n@!p bra WAIT;\n}\n" ::"r"(sbar));
  out[threadIdx.x] = buf[threadIdx.x] * 2.f;
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_exchange(const int *x, int *y) {
  __shared__ int s[128];
  cg::cluster_group cluster = cg::this_cluster();
  s[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
  cluster.sync();
  int *peer = cluster.map_shared_rank(s, cluster.block_rank() ^ 1);
  y[blockIdx.x * blockDim.x + threadIdx.x] = peer[threadIdx.x] + (int)cluster.block_rank();
  cluster.sync();
}

extern "C" __global__ void wgmma_m64n8k16(const uint64_t *desc, float *out) {
  float d[4] = {0.f, 0.f, 0.f, 0.f};
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  uint64_t da = desc[0], db = desc[1];
  asm volatile("wgmma.fence.sync.aligned;\n");
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, %4, %5, 0, 1, 1, 0, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(da), "l"(db));
  asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
  for (int k = 0; k < 4; ++k) out[threadIdx.x * 4 + k] = d[k];
}

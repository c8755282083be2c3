// Training kernel: forms ordinary code has that the other training kernels lack: calls whose callee
// diverges (convergence-barrier saves), warp-synchronous code with run-time masks, uniform loop and index
// arithmetic, kernel parameters as uniform operands, 64-bit min/max, cluster barriers and bulk copies.
#include <cooperative_groups.h>
#include <cuda_fp16.h>
namespace cg = cooperative_groups;

__device__ __noinline__ float leaf(float x, int k) {
  for (int i = 0; i < k; ++i) {
    if (x > (float)i) x = x * 0.5f + 1.0f;
    else break;
  }
  return x;
}

__device__ __noinline__ float mid(float x, int k, unsigned mask) {
  float y = 0.0f;
  if (threadIdx.x & 1) {
    y = leaf(x, k);
    __syncwarp(mask);
  }
  y += __shfl_sync(mask, y, k & 31);
  return y;
}

extern "C" __global__ void calls_warps(float* out, const float* in, int n, float bias, float scale, unsigned mask) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = in[i];
  x = mid(x, n, mask) + fmaf(x, scale, -bias);
  unsigned m = __ballot_sync(mask, x > 0.0f);
  __syncwarp(m);
  x += (float)__popc(m & __activemask());
#if __CUDA_ARCH__ >= 800
  if (n != 0) x += (float)__reduce_add_sync(m, (int)x);
#endif
  for (int j = 0; j < (n & 7); ++j) {
    if (__any_sync(m, x > (float)j)) x = leaf(x, j);
  }
  out[i] = x;
}

extern "C" __global__ void uniform_loops(int* out, const int* in, long long* o64, const unsigned long long* i64, int n, unsigned s, int stride) {
  int t = threadIdx.x;
  int acc = 0;
  for (int j = 0; j < n; j += 4) {
    int idx = (j + (int)blockIdx.x * stride) & 1023;
    acc += in[idx + t] << (s & 7);
    acc ^= in[(idx + 1) & 1023] >> (s >> 28);
  }
  unsigned u = blockIdx.x;
  if (u != 0u) acc += (int)(u << 4) + (int)(s >> 3);
  if (n != 0 && (unsigned)n < s) acc -= (int)((unsigned long long)u * s >> 32);
  unsigned long long a = i64[t], b = i64[t + 32];
  unsigned long long lo = a < b ? a : b, hi = a > b ? a : b;
  long long sa = (long long)a, sb = (long long)b;
  o64[t] = (long long)(lo ^ hi) + (sa < sb ? sa : sb) + (long long)(((unsigned long long)s << 33) | u);
  out[blockIdx.x * blockDim.x + t] = acc;
}

extern "C" __global__ void half_consts(__half2* out, const __half2* in, __half2 k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __half2 v = in[i];
  v = __hfma2(v, k, in[i + n]);
  v = __hfma2(v, in[i + 1], k);
  out[i] = __hmul2(v, __floats2half2_rn(0.5f, -2.0f));
}

#if __CUDA_ARCH__ >= 900
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_ops(float* out, const float* in, int n) {
  __shared__ __align__(128) float buf[256];
  __shared__ __align__(8) unsigned long long bar;
  cg::cluster_group cl = cg::this_cluster();
  unsigned t = threadIdx.x;
  unsigned buf_addr = (unsigned)__cvta_generic_to_shared(buf);
  unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
  if (t == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(bar_addr));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  cl.sync();
  if (t == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(bar_addr), "r"(1024));
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(buf_addr),
        "l"(in + blockIdx.x * 256), "r"(1024), "r"(bar_addr)
        : "memory");
  }
  unsigned done = 0;
  while (!done) {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(bar_addr));
  }
  float* remote = cl.map_shared_rank(buf, cl.block_rank() ^ 1);
  float v = buf[t] + remote[(t + n) & 255];
  cl.sync();
  if (t == 0) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(out + blockIdx.x * 256), "r"(buf_addr),
                 "r"(1024)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;");
    asm volatile("cp.async.bulk.wait_group.read 0;");
  }
  out[blockIdx.x * 256 + 512 + t] = v;
}
#endif

extern "C" __global__ void fp64_compares(double* out, int* flags, const double* a, const double* b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double x = a[i], y = b[i], z = a[i + 64];
  int c = (x != y) | (x < y) << 1 | (x > y) << 2 | (x <= z) << 3 | (y >= z) << 4 | (x == z) << 5;
  c |= (x != x) << 6 | (y < z) << 7 | (z > x) << 8;
  flags[i] = c;
  out[i] = (x + y) * (x - y) + (y + z) * (x + z) + fmin(x, y) - fmax(y, z);
}

extern "C" __global__ void smem_uniform(float* out, const float* in, int n, float w) {
  __shared__ float red[64];
  __shared__ float tab[256];
  int t = threadIdx.x;
  tab[t] = in[blockIdx.x * 256 + t];
  if (t < 64) red[t] = in[t] * w;
  __syncthreads();
  float s = red[0] + red[33] + red[n & 63] + red[(n + 1) & 63] + tab[(n * 3) & 255];
  unsigned u = blockIdx.x * (unsigned)n;
  float acc = 0.0f;
  for (int j = 0; j < 4; ++j) acc = fmaf(tab[(t + j) & 255], s, acc);
  if (u != 0u) acc += red[u & 63];
  if (blockIdx.x != 0u) acc = fmaf(acc, w, tab[blockIdx.x & 255]);
  out[blockIdx.x * 256 + t] = acc + s;
}

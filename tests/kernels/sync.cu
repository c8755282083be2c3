// Round-trip corpus: block barriers, cooperative groups, block-wide scans.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void block_reduce(const float *x, float *out, int n) {
  __shared__ float s[512];
  int t = threadIdx.x;
  s[t] = (blockIdx.x * blockDim.x + t < n) ? x[blockIdx.x * blockDim.x + t] : 0.f;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void block_scan(int *data) {
  __shared__ int s[1024];
  int t = threadIdx.x;
  s[t] = data[t];
  for (int o = 1; o < blockDim.x; o <<= 1) {
    __syncthreads();
    int v = t >= o ? s[t - o] : 0;
    __syncthreads();
    s[t] += v;
  }
  __syncthreads();
  data[t] = s[t];
}

extern "C" __global__ void cg_tiles(const int *x, int *y) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<8> tile = cg::tiled_partition<8>(block);
  int v = x[block.thread_rank()];
  for (int o = tile.size() / 2; o > 0; o /= 2) v += tile.shfl_down(v, o);
  block.sync();
  if (tile.thread_rank() == 0) y[block.thread_rank() / 8] = v;
}

extern "C" __global__ void barrier_count(const int *x, int *y) {
  int v = x[threadIdx.x];
  int c = __syncthreads_count(v > 0);
  int a = __syncthreads_and(v != 3);
  int o = __syncthreads_or(v == 7);
  y[threadIdx.x] = c + a + o;
  __threadfence();
  __threadfence_block();
}

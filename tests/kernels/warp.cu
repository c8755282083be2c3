// Round-trip corpus: warp-level primitives.
extern "C" __global__ void warp_reduce(const float *x, float *out) {
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;
}

extern "C" __global__ void warp_scan(const int *x, int *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x, v = x[i], lane = threadIdx.x & 31;
  for (int o = 1; o < 32; o <<= 1) {
    int t = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += t;
  }
  y[i] = v + __shfl_xor_sync(0xffffffffu, v, 3) + __shfl_sync(0xffffffffu, v, 7);
}

extern "C" __global__ void warp_votes(const int *x, unsigned *out) {
  int v = x[blockIdx.x * blockDim.x + threadIdx.x];
  unsigned b = __ballot_sync(0xffffffffu, v > 0);
  int all = __all_sync(0xffffffffu, v != 0), any = __any_sync(0xffffffffu, v < -5);
  unsigned m = __match_any_sync(0xffffffffu, v);
  if ((threadIdx.x & 31) == 0) out[blockIdx.x] = b ^ (all << 1) ^ (any << 2) ^ m ^ __activemask();
}

extern "C" __global__ void warp_redux(const unsigned *x, unsigned *out) {
  unsigned v = x[blockIdx.x * blockDim.x + threadIdx.x];
#if __CUDA_ARCH__ >= 800
  v = __reduce_add_sync(0xffffffffu, v) + __reduce_max_sync(0xffffffffu, v) + __reduce_or_sync(0xffffffffu, v);
#endif
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

extern "C" __global__ void divergent_shuffle(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i % n];
  if (threadIdx.x & 1) {
    unsigned m = __activemask();
    v = __shfl_sync(m, v, (threadIdx.x + 2) & 31);
  }
  __syncwarp();
  y[i] = v;
}

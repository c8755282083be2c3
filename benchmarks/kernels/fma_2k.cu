// A straight-line 2,000-instruction sm_90 kernel for benchmarks/suggest_latency.py: 20 unrolled steps of
// 16 loads and an 8x8 register-tile FMA update (1,280 FFMA), then 64 stores.
extern "C" __global__ void fma_2k(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, int n) {
  float acc[8][8] = {};
  int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int k = 0; k < 20; ++k) {
    float ra[8], rb[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      ra[i] = a[(k * 8 + i) * n + t];
      rb[i] = b[(k * 8 + i) * n + t];
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
  }
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) c[(i * 8 + j) * n + t] = acc[i][j];
}

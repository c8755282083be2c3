// Performance-model training kernel (not in the optimizer's frozen split): a 64-tap FIR filter, 1,024
// outputs per block (4 per thread) from a shared-memory window; taps in shared memory.
extern "C" __global__ void __launch_bounds__(256) fir64(const float *__restrict__ x,
                                                        const float *__restrict__ taps, float *y) {
  __shared__ float t[64];
  __shared__ float xs[1024 + 64];
  if (threadIdx.x < 64) t[threadIdx.x] = taps[threadIdx.x];
  int base = blockIdx.x * 1024;
  for (int i = threadIdx.x; i < 1024 + 64; i += 256) xs[i] = x[base + i];
  __syncthreads();
  float acc[4] = {};
#pragma unroll 8
  for (int k = 0; k < 64; ++k) {
    float tk = t[k];
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[j] += tk * xs[threadIdx.x + 256 * j + k];
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) y[base + threadIdx.x + 256 * j] = acc[j];
}

// Performance-model training kernel (not in the optimizer's frozen split): a degree-63 polynomial (Horner)
// applied 4 times to 8 independent values per thread, coefficients in shared memory: 8 FMA chains in flight.
extern "C" __global__ void __launch_bounds__(256) horner_ilp(const float *__restrict__ x,
                                                             const float *__restrict__ coef, float *y) {
  __shared__ float c[64];
  if (threadIdx.x < 64) c[threadIdx.x] = coef[threadIdx.x];
  __syncthreads();
  int base = (blockIdx.x * 256 + threadIdx.x) * 8;
  float v[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) v[k] = x[base + k];
  for (int round = 0; round < 4; ++round) {
    float r[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) r[k] = c[63];
#pragma unroll 4
    for (int d = 62; d >= 0; --d) {
      float cd = c[d];
#pragma unroll
      for (int k = 0; k < 8; ++k) r[k] = r[k] * v[k] + cd;
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = r[k];
  }
#pragma unroll
  for (int k = 0; k < 8; ++k) y[base + k] = v[k];
}

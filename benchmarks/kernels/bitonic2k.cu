// Performance-model training kernel (not in the optimizer's frozen split): bitonic sort of 2,048 floats per
// block in shared memory, 1,024 threads, a barrier after every compare-exchange step.
extern "C" __global__ void __launch_bounds__(1024) bitonic2k(const float *__restrict__ in, float *out) {
  __shared__ float s[2048];
  int base = blockIdx.x * 2048, t = threadIdx.x;
  s[t] = in[base + t];
  s[t + 1024] = in[base + t + 1024];
  __syncthreads();
  for (int k = 2; k <= 2048; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      int i = 2 * t - (t & (j - 1));
      int l = i + j;
      bool up = (i & k) == 0;
      float a = s[i], b = s[l];
      if ((a > b) == up) {
        s[i] = b;
        s[l] = a;
      }
      __syncthreads();
    }
  }
  out[base + t] = s[t];
  out[base + t + 1024] = s[t + 1024];
}

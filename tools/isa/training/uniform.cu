// Training kernel: uniform-datapath loops (UISETP/USEL/UIADD3.64/ULEA), 64-bit pointer strides, f16 packing.
#include <cuda_fp16.h>
extern "C" __global__ void uniform_loops(float* out, const float* a, const half* h, long long ld, int K, int M, int step, long long off) {
  const float* p = a + (long long)blockIdx.x * ld + off;
  const half* hp = h + (long long)blockIdx.y * ld * 2;
  float acc = 0.f;
  int kk = 0;
  for (int k = 0; k < K; k += step) {
    int lim = k + step < K ? k + step : K;
    kk = (k >= M) ? kk + 1 : kk;
    acc += p[threadIdx.x + (long long)k * ld] * (float)(lim - k) + __half2float(hp[threadIdx.x + k]);
    if (k > M && kk < 3) acc *= 0.5f;
  }
  __half2 pk = __floats2half2_rn(acc, acc * 2.f);
  __half2 pk2 = __float22half2_rn(make_float2(acc + 1.f, (float)kk));
  unsigned long long base = (unsigned long long)out + (unsigned long long)blockIdx.z * (unsigned long long)ld * 8ull - (unsigned long long)off;
  ((__half2*)base)[threadIdx.x] = pk + pk2;
  out[threadIdx.x + blockIdx.x * M] = acc + (float)(unsigned)((unsigned long long)ld >> (K & 31)) + (K < M ? (float)M : (float)step);
}

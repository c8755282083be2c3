// Performance-model training kernel (not in the optimizer's frozen split): Mandelbrot escape counts of 4
// points per thread, 256 iterations without early exit (an escaped point's z is frozen by a select), so the
// four dependence chains interleave.
extern "C" __global__ void __launch_bounds__(256) mandel4(const float *__restrict__ cre,
                                                          const float *__restrict__ cim, int *iters) {
  int base = (blockIdx.x * 256 + threadIdx.x) * 4;
  float cr[4], ci[4], zr[4], zi[4];
  int k[4];
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    cr[p] = cre[base + p];
    ci[p] = cim[base + p];
    zr[p] = 0.f;
    zi[p] = 0.f;
    k[p] = 0;
  }
  for (int it = 0; it < 256; ++it) {
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      float zr2 = zr[p] * zr[p], zi2 = zi[p] * zi[p];
      bool inside = zr2 + zi2 <= 4.f;
      float nzi = 2.f * zr[p] * zi[p] + ci[p];
      float nzr = zr2 - zi2 + cr[p];
      zr[p] = inside ? nzr : zr[p];
      zi[p] = inside ? nzi : zi[p];
      k[p] += inside;
    }
  }
#pragma unroll
  for (int p = 0; p < 4; ++p) iters[base + p] = k[p];
}

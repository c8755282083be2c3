// Held-out evaluation kernel for the reorder policy (never used in training): 2D 9-point stencil with
// per-point weights, two output rows per thread (straight-line, load-heavy).
extern "C" __global__ void stencil2d(const float *__restrict__ in, const float *__restrict__ w,
                                     float *__restrict__ out, int nx, int ny) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = (blockIdx.y * blockDim.y + threadIdx.y) * 2;
  if (x < 1 || x >= nx - 1 || y < 1 || y >= ny - 2) return;
  float s0 = 0.f, s1 = 0.f;
#pragma unroll
  for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
    for (int dx = -1; dx <= 1; ++dx) {
      float wk = w[(dy + 1) * 3 + dx + 1];
      s0 += wk * in[(y + dy) * nx + x + dx];
      s1 += wk * in[(y + 1 + dy) * nx + x + dx];
    }
  out[y * nx + x] = s0;
  out[(y + 1) * nx + x] = s1;
}

// CPU emulation of a CUDA kernel: one std::thread per CUDA thread of a block, std::barrier for __syncthreads.
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
struct dim3_ { int x, y, z; };
thread_local dim3_ threadIdx;
dim3_ blockIdx, gridDim;
std::barrier<> *bar;
inline void __syncthreads() { bar->arrive_and_wait(); }
struct float4 { float x, y, z, w; };
struct float2 { float x, y; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
#define __global__
#define __launch_bounds__(x)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#include "conv2d.cu"  // beside this file
int main() {
  const int C = 8, H = 32, W = 128, K = 16;
  std::vector<float> in(C * (H + 2) * (W + 2)), w(K * C * 9), out(K * H * W, NAN), ref(K * H * W);
  srand(1);
  for (auto &v : in) v = rand() / (float)RAND_MAX - 0.5f;
  for (auto &v : w) v = rand() / (float)RAND_MAX - 0.5f;
  gridDim = {W / 64, H / 16, K / 8};
  for (int bz = 0; bz < gridDim.z; ++bz)
    for (int by = 0; by < gridDim.y; ++by)
      for (int bx = 0; bx < gridDim.x; ++bx) {
        blockIdx = {bx, by, bz};
        std::barrier<> b(256);
        bar = &b;
        std::vector<std::thread> ts;
        for (int t = 0; t < 256; ++t)
          ts.emplace_back([&, t] { threadIdx = {t, 0, 0}; conv2d(in.data(), w.data(), out.data(), C, H, W); });
        for (auto &t : ts) t.join();
      }
  double maxerr = 0;
  for (int k = 0; k < K; ++k)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        double s = 0;
        for (int c = 0; c < C; ++c)
          for (int r = 0; r < 3; ++r)
            for (int q = 0; q < 3; ++q) s += in[(c * (H + 2) + y + r) * (W + 2) + x + q] * w[((k * C + c) * 3 + r) * 3 + q];
        double e = std::fabs(s - out[(k * H + y) * W + x]);
        if (!(e <= maxerr)) maxerr = e;  // NaN (unwritten) propagates
      }
  printf("max |err| = %g\n", maxerr);
  return maxerr < 1e-4 ? 0 : 1;
}

// Performance-model training kernel (not in the optimizer's frozen split): int8 GEMM on the integer pipe
// (IDP4A), 64x64 block tile, 4x4 outputs per thread; A is M x K and B is stored transposed (N x K), both
// as 4 int8 per int32; C = A * B^T in int32 (wrapping).
extern "C" __global__ void __launch_bounds__(256) dp4a_gemm(const int *__restrict__ A,
                                                            const int *__restrict__ Bt, int *C, int M,
                                                            int N, int K4) {
  __shared__ int As[16][65];
  __shared__ int Bs[16][65];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
  int acc[4][4] = {};
  for (int k0 = 0; k0 < K4; k0 += 16) {
    for (int i = threadIdx.x; i < 64 * 16; i += 256) {
      int r = i / 16, c = i % 16;
      As[c][r] = A[(row0 + r) * K4 + k0 + c];
      Bs[c][r] = Bt[(col0 + r) * K4 + k0 + c];
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) {
      int a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx * 4 + j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = __dp4a(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) C[(row0 + ty * 4 + i) * N + col0 + tx * 4 + j] = acc[i][j];
}

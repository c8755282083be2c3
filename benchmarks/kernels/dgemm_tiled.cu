// Performance-model training kernel (not in the optimizer's frozen split): FP64 GEMM (DFMA), 32x32 block
// tile, 2x2 outputs per thread, K step 16. C = A(MxK) * B(KxN), row major.
extern "C" __global__ void __launch_bounds__(256) dgemm_tiled(const double *__restrict__ A,
                                                              const double *__restrict__ B, double *C,
                                                              int M, int N, int K) {
  __shared__ double As[16][33];
  __shared__ double Bs[16][32];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
  double acc[2][2] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = threadIdx.x; i < 32 * 16; i += 256) {
      int r = i / 16, c = i % 16;
      As[c][r] = A[(row0 + r) * K + k0 + c];
      int br = i / 32, bc = i % 32;
      Bs[br][bc] = B[(k0 + br) * N + col0 + bc];
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) {
      double a0 = As[kk][ty * 2], a1 = As[kk][ty * 2 + 1];
      double b0 = Bs[kk][tx * 2], b1 = Bs[kk][tx * 2 + 1];
      acc[0][0] += a0 * b0;
      acc[0][1] += a0 * b1;
      acc[1][0] += a1 * b0;
      acc[1][1] += a1 * b1;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) C[(row0 + ty * 2 + i) * N + col0 + tx * 2 + j] = acc[i][j];
}

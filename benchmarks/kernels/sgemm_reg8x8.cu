// Performance-model training kernel (not in the optimizer's frozen split): SGEMM with a 128x128 block tile
// and an 8x8 register tile per thread, K step 8 (maxas-style blocking). C = A(MxK) * B(KxN), row major.
#define BM 128
#define BN 128
#define BK 8
extern "C" __global__ void __launch_bounds__(256) sgemm_reg8x8(const float *__restrict__ A,
                                                               const float *__restrict__ B, float *C,
                                                               int M, int N, int K) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[8][8] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK; i += 256) {
      int r = i / BK, c = i % BK;
      As[c][r] = A[(row0 + r) * K + k0 + c];
      int br = i / BN, bc = i % BN;
      Bs[br][bc] = B[(k0 + br) * N + col0 + bc];
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[8], b[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) a[i] = As[kk][ty * 8 + i];
#pragma unroll
      for (int j = 0; j < 8; ++j) b[j] = Bs[kk][tx * 8 + j];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) C[(row0 + ty * 8 + i) * N + col0 + tx * 8 + j] = acc[i][j];
}

// Held-out evaluation kernel for the reorder policy (never used in training): shared-memory tiled SGEMM,
// 64x64 tile per block, 4x4 outputs per thread, K step 16. C = A(MxK) * B(KxN), row major.
#define BM 64
#define BN 64
#define BK 16
extern "C" __global__ void __launch_bounds__(256) sgemm_tiled(const float *__restrict__ A,
                                                              const float *__restrict__ B, float *C,
                                                              int M, int N, int K) {
  __shared__ float As[BK][BM + 4];
  __shared__ float Bs[BK][BN];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[4][4] = {};
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
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx * 4 + j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) C[(row0 + ty * 4 + i) * N + col0 + tx * 4 + j] = acc[i][j];
}

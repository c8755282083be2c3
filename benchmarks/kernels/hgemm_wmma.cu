// Performance-model training kernel (not in the optimizer's frozen split): fp16 GEMM on the tensor cores
// through WMMA (HMMA), f32 accumulate; 4 warps per block, each a 32x32 tile of 2x2 fragments, operands read
// straight from global memory. C = A(MxK) * B(KxN), row major.
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void __launch_bounds__(128) hgemm_wmma(const half *__restrict__ A,
                                                             const half *__restrict__ B, float *C, int M,
                                                             int N, int K) {
  int warp = threadIdx.x / 32;
  int row0 = blockIdx.y * 64 + (warp / 2) * 32, col0 = blockIdx.x * 64 + (warp % 2) * 32;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  for (int k0 = 0; k0 < K; k0 += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[2];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], A + (row0 + i * 16) * K + k0, K);
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], B + k0 * N + col0 + j * 16, N);
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(C + (row0 + i * 16) * N + col0 + j * 16, acc[i][j], N, wmma::mem_row_major);
}

// Held-out kernels (NOT training): used only by benchmarks/encoder_coverage.py.
#include <cuda_fp16.h>
extern "C" __global__ void sgemm_tile(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[32][33], Bs[32][33];
  int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  int row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += 32) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.f;
    Bs[ty][tx] = (col < N && k0 + ty < K) ? B[(k0 + ty) * N + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 32; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
extern "C" __global__ void softmax_rows(float* out, const float* in, int cols) {
  extern __shared__ float red[];
  const float* r = in + blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, r[c]);
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = m;
  __syncthreads();
  m = red[0];
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(r[c] - m);
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[blockIdx.x * cols + c] = __expf(r[c] - m) / s;
}
extern "C" __global__ void histogram(unsigned* hist, const unsigned char* data, long long n) {
  __shared__ unsigned local[256];
  local[threadIdx.x] = 0;
  __syncthreads();
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
}
extern "C" __global__ void scan_half(half* out, const half* in, int n, float scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? __half2float(in[i]) * scale : 0.f;
  for (int o = 1; o < 32; o <<= 1) {
    float t = __shfl_up_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) >= o) v += t;
  }
  if (i < n) out[i] = __float2half_rn(v);
}
extern "C" __global__ void saxpy_d(double* y, const double* x, double a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}

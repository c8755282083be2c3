// Round-trip corpus: memory access patterns (global, shared, local, constant).
#include <cstdint>

__constant__ float c_coeffs[16];

extern "C" __global__ void copy_f4(const float4 *__restrict__ in, float4 *__restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

extern "C" __global__ void gather_i32(const int *__restrict__ idx, const float *__restrict__ src, float *dst, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = __ldg(&src[idx[i]]);
}

extern "C" __global__ void scatter_add_u8(const uint8_t *in, uint16_t *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[in[i] * 3 + (i & 1)] = (uint16_t)(in[i] + i);
}

extern "C" __global__ void smem_transpose(const float *in, float *out, int w, int h) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  if (x < w && y < h) tile[threadIdx.y][threadIdx.x] = in[y * w + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
  if (x < h && y < w) out[y * h + x] = tile[threadIdx.x][threadIdx.y];
}

extern "C" __global__ void const_poly(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i], acc = 0.f;
#pragma unroll
  for (int k = 15; k >= 0; --k) acc = acc * v + c_coeffs[k];
  y[i] = acc;
}

extern "C" __global__ void strided_sum(const double2 *in, double *out, int n, int stride) {
  double s = 0;
  for (int i = threadIdx.x; i < n; i += stride) s += in[i].x * in[i].y;
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" __global__ void streaming_store(const float2 *in, float2 *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) __stcs(&out[i], __ldcs(&in[i]));
}

extern "C" __global__ void dynamic_smem_rev(int *data, int n) {
  extern __shared__ int s[];
  int t = threadIdx.x;
  if (t < n) s[t] = data[t];
  __syncthreads();
  if (t < n) data[t] = s[n - t - 1];
}

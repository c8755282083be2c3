// Training kernels for the reorder policy (tools/policy): loop- and ILP-heavy CUDA C that ptxas schedules in
// many different ways. None is an evaluation kernel (benchmarks/kernels holds those).
#include <cuda_fp16.h>

extern "C" __global__ void sgemm_8x8(const float *__restrict__ A, const float *__restrict__ B, float *C,
                                     int N) {
  __shared__ float As[8][128];
  __shared__ float Bs[8][128];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[8][8] = {};
  for (int k0 = 0; k0 < N; k0 += 8) {
    for (int i = threadIdx.x; i < 8 * 128; i += 256) {
      As[i % 8][i / 8] = A[(blockIdx.y * 128 + i / 8) * N + k0 + i % 8];
      Bs[i / 128][i % 128] = B[(k0 + i / 128) * N + blockIdx.x * 128 + i % 128];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      float a[8], b[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) a[i] = As[k][ty * 8 + i];
#pragma unroll
      for (int j = 0; j < 8; ++j) b[j] = Bs[k][tx * 8 + j];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) C[(blockIdx.y * 128 + ty * 8 + i) * N + blockIdx.x * 128 + tx * 8 + j] = acc[i][j];
}

extern "C" __global__ void conv1d_k15(const float *__restrict__ x, const float *__restrict__ w, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 15 >= n) return;
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 15; ++k) s += x[i + k] * w[k];
  y[i] = s;
}

extern "C" __global__ void dot_batched(const float4 *__restrict__ a, const float4 *__restrict__ b, float *out,
                                       int len4) {
  const float4 *pa = a + blockIdx.x * len4, *pb = b + blockIdx.x * len4;
  float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
  for (int i = threadIdx.x; i < len4; i += blockDim.x * 2) {
    float4 u = pa[i], v = pb[i];
    s0 += u.x * v.x; s1 += u.y * v.y; s2 += u.z * v.z; s3 += u.w * v.w;
    if (i + blockDim.x < len4) {
      float4 p = pa[i + blockDim.x], q = pb[i + blockDim.x];
      s0 += p.x * q.x; s1 += p.y * q.y; s2 += p.z * q.z; s3 += p.w * q.w;
    }
  }
  float s = (s0 + s1) + (s2 + s3);
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out + blockIdx.x, s);
}

extern "C" __global__ void nbody_step(const float4 *__restrict__ pos, float4 *acc_out, int n) {
  __shared__ float4 tile[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 p = pos[i];
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int t = 0; t < n; t += 128) {
    tile[threadIdx.x] = pos[t + threadIdx.x];
    __syncthreads();
#pragma unroll 8
    for (int j = 0; j < 128; ++j) {
      float4 q = tile[j];
      float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
      float r2 = dx * dx + dy * dy + dz * dz + 1e-6f;
      float inv = rsqrtf(r2);
      float s = q.w * inv * inv * inv;
      ax += dx * s; ay += dy * s; az += dz * s;
    }
    __syncthreads();
  }
  acc_out[i] = make_float4(ax, ay, az, 0.f);
}

extern "C" __global__ void black_scholes(const float *__restrict__ S, const float *__restrict__ K,
                                         const float *__restrict__ T, float *call, float *put, float r, float v,
                                         int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = S[i], k = K[i], t = T[i];
  float sq = sqrtf(t);
  float d1 = (logf(s / k) + (r + 0.5f * v * v) * t) / (v * sq);
  float d2 = d1 - v * sq;
  float c1 = normcdff(d1), c2 = normcdff(d2);
  float e = expf(-r * t);
  call[i] = s * c1 - k * e * c2;
  put[i] = k * e * (1.f - c2) - s * (1.f - c1);
}

extern "C" __global__ void gemv_f4(const float4 *__restrict__ A, const float4 *__restrict__ x, float *y,
                                   int cols4) {
  int row = blockIdx.x;
  float s = 0.f;
  for (int c = threadIdx.x; c < cols4; c += blockDim.x) {
    float4 a = A[row * cols4 + c], b = x[c];
    s += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
  }
  for (int o = 16; o; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
  __shared__ float part[32];
  if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.f;
    for (int o = 16; o; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
    if (threadIdx.x == 0) y[row] = s;
  }
}

extern "C" __global__ void softmax_row(const float *__restrict__ x, float *y, int cols) {
  const float *row = x + blockIdx.x * cols;
  float m = -1e30f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(row[c] - m);
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = __expf(row[c] - m) / s;
}

extern "C" __global__ void hgemm_mma_loop(const half *__restrict__ A, const half *__restrict__ B, float *C,
                                          int K) {
  // m16n8k16 fragments loaded straight from global memory, accumulated over K.
  int lane = threadIdx.x & 31;
  float c[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < K; k0 += 16) {
    const unsigned *a = reinterpret_cast<const unsigned *>(A + (lane / 4) * K + k0 + (lane % 4) * 2);
    const unsigned *b = reinterpret_cast<const unsigned *>(B + (k0 + (lane % 4) * 2) * 8 + lane / 4);
    unsigned a0 = a[0], a1 = a[4 * K], a2 = a[4], a3 = a[4 * K + 4], b0 = b[0], b1 = b[32];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  for (int i = 0; i < 4; ++i) C[lane * 4 + i] = c[i];
}

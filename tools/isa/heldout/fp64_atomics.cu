// Held-out kernels (NOT training): FP64 arithmetic and atomics of every width and scope.
#include <cuda_runtime.h>
extern "C" __global__ void dgemv(double* y, const double* A, const double* x, int n, double alpha, double beta) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n) return;
  double acc = 0.0;
  for (int k = 0; k < n; ++k) acc = fma(A[(long)row * n + k], x[k], acc);
  y[row] = alpha * acc + beta * y[row];
}
extern "C" __global__ void dmath(double* out, const double* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = in[i];
  double r = sqrt(fabs(v)) + exp(v) * 0.5 - log1p(fabs(v)) + rsqrt(v * v + 1.0);
  r = fmax(r, -1e300) + fmin(v, 1e-300) + floor(v) + ceil(v * 3.0) + trunc(v) + rint(v);
  r += (v > 0.0 ? 1.0 / v : -0.0) + (isnan(v) ? INFINITY : -INFINITY) * (v == 0.0);
  r += (double)(int)v + (double)(long long)(v * 7.0) + (double)(unsigned)v + (float)v;
  out[i] = r + copysign(4.9e-324, v) + __longlong_as_double(0x7ff8000000000000LL) * (v < -1e308);
}
extern "C" __global__ void atomics_all(int* ci, unsigned* cu, unsigned long long* cl, float* cf, double* cd,
                                       int* flag, int n) {
  __shared__ int si[64];
  __shared__ float sf[64];
  __shared__ double sd[64];
  int t = threadIdx.x;
  if (t < 64) { si[t] = 0; sf[t] = 0.f; sd[t] = 0.0; }
  __syncthreads();
  int i = blockIdx.x * blockDim.x + t;
  if (i < n) {
    atomicAdd(ci + (i & 7), i);
    atomicSub(ci + 8, 3);
    atomicMax(ci + 9, i);
    atomicMin(ci + 10, -i);
    atomicAnd(cu + 0, ~(1u << (i & 31)));
    atomicOr(cu + 1, 1u << (i & 31));
    atomicXor(cu + 2, (unsigned)i);
    atomicInc(cu + 3, 100u);
    atomicDec(cu + 4, 100u);
    atomicMax(cu + 5, (unsigned)i);
    unsigned old = atomicExch(cu + 6, (unsigned)i);
    unsigned cas = atomicCAS(cu + 7, old, old + 1);
    atomicAdd(cl, (unsigned long long)cas);
    atomicMax(cl + 1, (unsigned long long)i);
    atomicCAS(cl + 2, 0ull, (unsigned long long)i);
    atomicExch(cl + 3, (unsigned long long)cas);
    atomicAdd(cf + (i & 3), 1.5f);
    atomicAdd(cd + (i & 3), 2.25);
    atomicAdd_block(ci + 11, 1);
    atomicAdd_system(ci + 12, 1);
    atomicAdd(&si[t & 63], i);
    atomicMax(&si[(t + 1) & 63], i);
    atomicCAS(&si[(t + 2) & 63], 0, i);
    atomicAdd(&sf[t & 63], 0.5f);
    atomicAdd(&sd[t & 63], 0.25);
    atomicExch(&si[(t + 3) & 63], i);
  }
  __syncthreads();
  if (t < 64) { ci[16 + t] = si[t]; cf[16 + t] = sf[t]; cd[16 + t] = sd[t]; }
  __threadfence();
  __threadfence_system();
  if (t == 0) { volatile int* f = flag; while (atomicAdd(flag, 0) == 0 && *f < 0) {} }
}

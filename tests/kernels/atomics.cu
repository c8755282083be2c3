// Round-trip corpus: atomics and reductions in global and shared memory.
extern "C" __global__ void histogram(const unsigned char *in, unsigned *hist, int n) {
  __shared__ unsigned local[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&local[in[i]], 1u);
  __syncthreads();
  for (int i = threadIdx.x; i < 256; i += blockDim.x) atomicAdd(&hist[i], local[i]);
}

extern "C" __global__ void atomic_float_sum(const float *x, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, x[i]);
}

extern "C" __global__ void atomic_double_max(const double *x, unsigned long long *out, double *dsum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicMax(out, (unsigned long long)__double_as_longlong(x[i]));
    atomicAdd(dsum, x[i]);
  }
}

extern "C" __global__ void cas_loop_mul(float *addr, float f) {
  int *a = (int *)addr;
  int old = *a, assumed;
  do {
    assumed = old;
    old = atomicCAS(a, assumed, __float_as_int(__int_as_float(assumed) * f));
  } while (assumed != old);
}

extern "C" __global__ void atomic_mix(int *p, unsigned *q, int v) {
  atomicMin(p, v);
  atomicOr(q, 1u << (threadIdx.x & 31));
  atomicXor(q + 1, threadIdx.x);
  atomicExch(p + 1, v + threadIdx.x);
  atomicInc(q + 2, 100u);
  atomicSub(p + 2, 3);
}

// Round-trip corpus: device calls, recursion, indirect calls, switch tables, local-memory spills.
__device__ __noinline__ float poly3(float x, float a, float b) { return (x * a + b) * x - a; }

__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

typedef float (*unary_fn)(float);
__device__ float op_sq(float x) { return x * x; }
__device__ float op_neg(float x) { return -x; }
__device__ float op_half(float x) { return 0.5f * x; }
__device__ unary_fn table_ops[3] = {op_sq, op_neg, op_half};

extern "C" __global__ void call_poly(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = poly3(x[i], 1.5f, -2.f) + poly3(y[i], 0.25f, 3.f);
}

extern "C" __global__ void call_recursive(const int *x, int *y) { y[threadIdx.x] = fib(x[threadIdx.x] & 15); }

extern "C" __global__ void call_indirect(const float *x, float *y, const int *sel, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = table_ops[sel[i] % 3](x[i]);
}

extern "C" __global__ void switch_table(const int *op, const float *a, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = a[i];
  switch (op[i]) {
    case 0: v = v + 1.f; break;
    case 1: v = v * 3.f; break;
    case 2: v = v - 7.f; break;
    case 3: v = sqrtf(v); break;
    case 4: v = v * v * v; break;
    case 5: v = 1.f / v; break;
    case 6: v = -v; break;
    case 7: v = v * 0.125f; break;
    default: v = 0.f;
  }
  out[i] = v;
}

extern "C" __global__ void local_array(const int *idx, float *out, int n) {
  float buf[64];
  for (int k = 0; k < 64; ++k) buf[k] = k * 0.5f + threadIdx.x;
  float s = 0;
  for (int k = 0; k < n; ++k) s += buf[idx[k] & 63];
  out[threadIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(1024, 2) spill_heavy(const float *in, float *out) {
  float r[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) r[k] = in[threadIdx.x * 48 + k];
#pragma unroll
  for (int it = 0; it < 4; ++it)
#pragma unroll
    for (int k = 0; k < 48; ++k) r[k] = r[k] * r[(k * 7 + it) % 48] + r[(k + 5) % 48];
  float s = 0;
#pragma unroll
  for (int k = 0; k < 48; ++k) s += r[k] * (k + 1);
  out[threadIdx.x] = s;
}

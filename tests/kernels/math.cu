// Round-trip corpus: FP32/FP16/BF16 arithmetic, transcendentals, integer ops and conversions.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void fast_math(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __sinf(x[i]) + __expf(x[i]) * rsqrtf(fabsf(x[i]) + 1.f) + __logf(x[i] + 2.f);
}

extern "C" __global__ void precise_math(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = sinf(x[i]) / (1.f + expf(-x[i])) + powf(fabsf(x[i]), 0.37f) + erff(x[i]);
}

extern "C" __global__ void half2_axpy(const __half2 *x, __half2 *y, __half2 a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hfma2(a, x[i], __hmax2(y[i], __float2half2_rn(0.f)));
}

extern "C" __global__ void bf16_mix(const __nv_bfloat16 *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __bfloat162float(x[i]) * 3.f + __bfloat162float(__float2bfloat16(y[i]));
}

extern "C" __global__ void int_ops(const unsigned *a, const unsigned *b, unsigned *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned x = a[i], z = b[i] | 1u;
    c[i] = __popc(x) + __clz(z) + __brev(x) + x / z + x % 7u + __funnelshift_l(x, z, 5) + __byte_perm(x, z, 0x5140) +
           min(x, z) + (unsigned)__mul64hi(x, (long long)z);
  }
}

extern "C" __global__ void conversions(const double *d, float *f, int *i32, long long *i64, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    f[i] = (float)d[i] + __int2float_rz(i) + (float)i64[i];
    i32[i] = __float2int_rn(f[i]) + (int)d[i];
    i64[i] = __double2ll_rd(d[i]) + (long long)f[i];
  }
}

extern "C" __global__ void select_clamp(const float *x, float *y, float lo, float hi, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = (v != v) ? 0.f : fminf(fmaxf(v, lo), hi) + (v > 0.5f ? 1.f : -1.f) + __saturatef(v);
  }
}

extern "C" __global__ void int64_mix(const long long *a, long long *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i] * 0x9e3779b97f4a7c15LL + (a[i] >> 7) - (long long)((unsigned long long)a[i] / 1000003ull);
}

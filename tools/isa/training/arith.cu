// Training kernel: integer / FP32 / FP64 arithmetic, conversions, comparisons.
#include <cstdint>
extern "C" __global__ void int_ops(int* out, const int* a, const unsigned* b, long long* c, int n, int s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = a[i + n];
  unsigned u = b[i], v = b[i + 1];
  long long w = c[i], z = c[i + 2];
  int r = x * y + (x >> s) - (y << 3) + (int)(u >> (s & 31));
  r ^= __popc(u) + __clz(x) + __ffs(y) + __brev(u) + __byte_perm(x, y, 0x5410);
  r += __mulhi(x, y) + __umulhi(u, v) + (int)__mul64hi(w, z) + (int)__umul64hi(w, z);
  r += __sad(x, y, u) + __usad(u, v, 3) + abs(x) + min(x, y) + max(u, v) + min(u, 7u);
  r += __funnelshift_l(u, v, s) + __funnelshift_r(u, v, s) + __funnelshift_lc(u, v, 5);
  r += (x % 7) + (u / 13u) + (int)(w / z) + (int)(w % 9) + (int)((unsigned long long)w / 17ull);
  r += __dp4a(x, y, (int)u) + __dp2a_lo(x, y, 5) + __dp4a(u, v, 1u);
  r += __vabsdiffs4(x, y) + __vadd4(x, y) + __vcmpgeu2(u, v) + __vmaxs2(x, y) + __vsetgts4(x, y);
  long long q = w * z + (w >> 5) + (z << (s & 63)) + ((unsigned long long)w >> (s & 63)) + llabs(w) + llmin(w, z) + (long long)__brevll(w) + __popcll(z) + __clzll(w);
  q += (long long)x * y + (unsigned long long)u * v;
  out[i] = r + (int)q + (int)(q >> 32) + (x < y ? 5 : -3) + ((u >= v) && (x != 0)) + (w == z) + (w < z) + ((unsigned long long)w > (unsigned long long)z);
  c[i] = q + (short)x + (signed char)y + (unsigned short)u + (unsigned char)v;
}

extern "C" __global__ void f32_ops(float* out, const float* a, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = a[i + n], z = a[i + 2 * n];
  float r = fmaf(x, y, z) + x * 1.5f - y / z + sqrtf(x) + rsqrtf(y) + __fdividef(x, y) + __frcp_rn(z);
  r += __sinf(x) + __cosf(y) + __expf(z) + __logf(x) + __powf(x, y) + exp2f(x) + log2f(y) + tanhf(z);
  r += sinf(x) * cosf(y) + expf(z) + logf(fabsf(x)) + erff(y) + atan2f(x, y) + cbrtf(z);
  r += floorf(x) + ceilf(y) + truncf(z) + rintf(x) + roundf(y) + fminf(x, y) + fmaxf(y, z) + copysignf(x, y);
  r += __fadd_rz(x, y) + __fmul_rd(y, z) + __fmaf_ru(x, y, z) + __fsub_rn(x, z) + __saturatef(x) + fdimf(x, y);
  r += (float)(int)x + (float)(unsigned)y + (float)__float2int_rd(z) + (float)__float2uint_ru(x) + __int2float_rz((int)y);
  r += (float)(long long)x + (float)(unsigned long long)z + __ll2float_rd((long long)y) + __float_as_int(x) * 1e-10f;
  r += isnan(x) ? 1.0f : 0.0f;
  r += isinf(y) ? 2.0f : -0.0f;
  r += (x < y) ? s : -s;
  r += (x >= z || y != z) ? 3.25f : 1e30f;
  r += fmodf(x, y) + remainderf(y, z) + ldexpf(x, 3) + frexpf(y, &n) + (float)n + modff(z, &s) + s;
  out[i] = r * 0.5f + 100.0f;
}

extern "C" __global__ void f64_ops(double* out, const double* a, const float* f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = a[i], y = a[i + n], z = a[i + 2 * n];
  double r = fma(x, y, z) + x * 1.5 - y / z + sqrt(x) + rsqrt(y) + 1.0 / z + x * 0.1;
  r += exp(x) + log(y) + sin(z) + pow(x, y) + floor(x) + ceil(y) + trunc(z) + rint(x) + fmin(x, y) + fmax(y, z) + fabs(x);
  r += __dadd_rz(x, y) + __dmul_ru(y, z) + __fma_rd(x, y, z) + __drcp_rn(x) + __dsqrt_rz(y);
  r += (double)f[i] + (double)(int)x + (double)(long long)y + (double)(unsigned)z + (double)(unsigned long long)x;
  r += (x < y) ? 2.0 : -7.0;
  r += (x != z && isnan(y)) ? 1.0 : 0.0;
  out[i] = r + 3.0;
  out[i + n] = (double)(float)r + (double)__double2float_rz(x) + (double)__double2int_rd(y) + (double)__double2ll_ru(z);
  ((float*)out)[i] = (float)x * (float)y + __double2float_ru(z);
}

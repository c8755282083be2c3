// Held-out kernels (NOT training): tensor cores through wmma, mma.sync, ldmatrix, and wgmma on sm_90a.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void wmma_f16(float* C, const half* A, const half* B, int ld) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(c, 0.0f);
  for (int k = 0; k < ld; k += 16) {
    wmma::load_matrix_sync(a, A + k, ld);
    wmma::load_matrix_sync(b, B + k, ld);
    wmma::mma_sync(c, a, b, c);
  }
  wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}
extern "C" __global__ void wmma_int8(int* C, const signed char* A, const signed char* B, int ld) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> c;
  wmma::fill_fragment(c, 0);
  wmma::load_matrix_sync(a, A, ld);
  wmma::load_matrix_sync(b, B, ld);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(C, c, 16, wmma::mem_col_major);
}
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
extern "C" __global__ void wmma_bf16_tf32(float* C, const __nv_bfloat16* A, const __nv_bfloat16* B, const float* X) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(c, 0.0f);
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 16);
  wmma::mma_sync(c, a, b, c);
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> ta;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> tb;
  wmma::load_matrix_sync(ta, X, 8);
  wmma::load_matrix_sync(tb, X + 128, 8);
  for (int i = 0; i < ta.num_elements; i++) ta.x[i] = wmma::__float_to_tf32(ta.x[i]);
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> tc;
  wmma::fill_fragment(tc, 0.0f);
  wmma::mma_sync(tc, ta, tb, tc);
  wmma::store_matrix_sync(C + 256, tc, 16, wmma::mem_row_major);
  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> da;
  wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> db;
  wmma::fragment<wmma::accumulator, 8, 8, 4, double> dc;
  wmma::fill_fragment(dc, 0.0);
  wmma::load_matrix_sync(da, (const double*)X, 4);
  wmma::load_matrix_sync(db, (const double*)X + 32, 4);
  wmma::mma_sync(dc, da, db, dc);
  wmma::store_matrix_sync((double*)C + 512, dc, 8, wmma::mem_row_major);
  wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}
extern "C" __global__ void mma_ldmatrix(float* out, const half* in) {
  __shared__ __align__(16) half s[16 * 16 * 2];
  int t = threadIdx.x;
  for (int i = t; i < 512; i += 32) s[i] = in[i];
  __syncthreads();
  unsigned a0, a1, a2, a3, b0, b1;
  unsigned addr = (unsigned)__cvta_generic_to_shared(s + (t % 16) * 16 + (t / 16) * 8);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(addr));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(addr + 512));
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  unsigned h0 = 0, h1 = 0;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
               : "+r"(h0), "+r"(h1) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  int i0 = 0, i1 = 0, i2 = 0, i3 = 0;
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(i0), "+r"(i1), "+r"(i2), "+r"(i3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#if __CUDA_ARCH__ >= 890
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
  out[t] = d0 + d1 + d2 + d3 + __half2float(__ushort_as_half(h0 & 0xffff)) + (float)(h1 + i0 + i1 + i2 + i3);
}
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
extern "C" __global__ void wgmma_f16(float* out, const half* in) {
  __shared__ __align__(128) half a[64 * 16], b[16 * 64];
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) { a[i] = in[i]; b[i] = in[1024 + i]; }
  asm volatile("fence.proxy.async.shared::cta;");
  __syncthreads();
  unsigned long long da = ((unsigned long long)(__cvta_generic_to_shared(a) >> 4) & 0x3fff) | (1ull << 16) | (8ull << 32);
  unsigned long long db = ((unsigned long long)(__cvta_generic_to_shared(b) >> 4) & 0x3fff) | (1ull << 16) | (8ull << 32);
  float d[32];
  for (int i = 0; i < 32; i++) d[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;");
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31},"
      " %32, %33, 1, 1, 1, 0, 0;"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db));
  asm volatile("wgmma.commit_group.sync.aligned;");
  asm volatile("wgmma.wait_group.sync.aligned 0;");
  float s = 0.f;
  for (int i = 0; i < 32; i++) s += d[i];
  out[threadIdx.x] = s;
}
#endif

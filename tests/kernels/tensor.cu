// Round-trip corpus: tensor cores through WMMA (sm_75+) and inline mma PTX (sm_80+).
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void wmma_f16_16x16x16(const half *a, const half *b, float *c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

extern "C" __global__ void wmma_loop(const half *a, const half *b, half *c, int k_tiles) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, half> fc;
  wmma::fill_fragment(fc, __float2half(0.f));
  for (int k = 0; k < k_tiles; ++k) {
    wmma::load_matrix_sync(fa, a + k * 16, 16 * k_tiles);
    wmma::load_matrix_sync(fb, b + k * 256, 16);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

extern "C" __global__ void mma_ptx_m16n8k16(const unsigned *a, const unsigned *b, float *c) {
  float d[4] = {0.f, 0.f, 0.f, 0.f};
#if __CUDA_ARCH__ >= 800
  unsigned ra[4], rb[2];
  for (int k = 0; k < 4; ++k) ra[k] = a[threadIdx.x * 4 + k];
  for (int k = 0; k < 2; ++k) rb[k] = b[threadIdx.x * 2 + k];
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
#endif
  for (int k = 0; k < 4; ++k) c[threadIdx.x * 4 + k] = d[k];
}

extern "C" __global__ void ldmatrix_cp_async(const half *g, float *out) {
  __shared__ __align__(128) half s[8 * 8 * 4];
#if __CUDA_ARCH__ >= 800
  unsigned saddr = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x * 8]);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(saddr), "l"(g + threadIdx.x * 8));
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::);
  __syncthreads();
  unsigned r0, r1, r2, r3;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(saddr));
  out[threadIdx.x] = (float)(r0 ^ r1 ^ r2 ^ r3);
#else
  out[threadIdx.x] = (float)g[threadIdx.x];
#endif
}

// Training kernel: tensor cores (wmma / mma.sync / ldmatrix), cp.async, mbarrier.
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_pipeline.h>
using namespace nvcuda;
extern "C" __global__ void wmma_ops(float* c, const half* a, const half* b, const __nv_bfloat16* ab, int* ic, const signed char* ia, double* dc, const double* da, float* tc, const float* ta) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fragment<wmma::accumulator, 16, 16, 16, half> fh;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::fill_fragment(fc, 0.0f);
  wmma::fill_fragment(fh, 0.0f);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::mma_sync(fh, fa, fb, fh);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
  wmma::store_matrix_sync((half*)c + 512, fh, 16, wmma::mem_col_major);
#if __CUDA_ARCH__ >= 800  // bf16 / int8 / f64 / tf32 fragments need sm_80+
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> ba;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> bb;
  wmma::load_matrix_sync(ba, ab, 16);
  wmma::load_matrix_sync(bb, ab + 256, 16);
  wmma::mma_sync(fc, ba, bb, fc);
  wmma::store_matrix_sync(c + 256, fc, 16, wmma::mem_row_major);
  wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> qa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> qb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> qc;
  wmma::load_matrix_sync(qa, ia, 16);
  wmma::load_matrix_sync(qb, ia + 256, 16);
  wmma::fill_fragment(qc, 0);
  wmma::mma_sync(qc, qa, qb, qc);
  wmma::store_matrix_sync(ic, qc, 16, wmma::mem_row_major);
  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> d_a;
  wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> d_b;
  wmma::fragment<wmma::accumulator, 8, 8, 4, double> d_c;
  wmma::load_matrix_sync(d_a, da, 4);
  wmma::load_matrix_sync(d_b, da + 32, 4);
  wmma::fill_fragment(d_c, 0.0);
  wmma::mma_sync(d_c, d_a, d_b, d_c);
  wmma::store_matrix_sync(dc, d_c, 8, wmma::mem_row_major);
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> t_a;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> t_b;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> t_c;
  wmma::load_matrix_sync(t_a, ta, 8);
  wmma::load_matrix_sync(t_b, ta + 128, 8);
  for (int k = 0; k < t_a.num_elements; ++k) t_a.x[k] = wmma::__float_to_tf32(t_a.x[k]);
  wmma::fill_fragment(t_c, 0.0f);
  wmma::mma_sync(t_c, t_a, t_b, t_c);
  wmma::store_matrix_sync(tc, t_c, 16, wmma::mem_row_major);
#endif
}

extern "C" __global__ void smem_mma(float* c, const half* a, const float* g, int n) {
  __shared__ __align__(128) half sa[64 * 64];
  __shared__ __align__(128) float sg[1024];
  __shared__ __align__(8) unsigned long long bar;
  int t = threadIdx.x;
#if __CUDA_ARCH__ >= 800  // cp.async, bf16/tf32/int4 mma, mbarrier need sm_80+
  for (int j = t; j < 64 * 64 / 8; j += blockDim.x) __pipeline_memcpy_async(&sa[j * 8], &a[j * 8], 16);
  __pipeline_memcpy_async(&sg[t], &g[t], 4);
  __pipeline_memcpy_async(&sg[t + 256], &g[t + n], 8);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  unsigned sa_addr = (unsigned)__cvta_generic_to_shared(&sa[(t % 16) * 64 + (t / 16) * 8]);
  unsigned r0, r1, r2, r3, b0, b1;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(sa_addr));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(sa_addr + 2048));
  unsigned x1;
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(x1) : "r"(sa_addr + 4096));
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "r"(b0), "r"(b1));
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(r0), "r"(r1), "r"(x1));
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(r1), "r"(r0), "r"(r3), "r"(r2), "r"(b1), "r"(b0));
  int i0 = 0, i1 = 0, i2 = 0, i3 = 0;
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(i0), "+r"(i1), "+r"(i2), "+r"(i3) : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "r"(b0), "r"(b1));
  asm volatile("mma.sync.aligned.m16n8k64.row.col.s32.s4.u4.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(i0), "+r"(i1), "+r"(i2), "+r"(i3) : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "r"(b0), "r"(b1));
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "r"(b0), "r"(b1));
  unsigned h0 = 0, h1 = 0;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
               : "+r"(h0), "+r"(h1) : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "r"(b0), "r"(b1));
  unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
  if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(bar_addr), "r"(blockDim.x));
  __syncthreads();
  unsigned long long state;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(bar_addr));
  unsigned done = 0;
  asm volatile("{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar_addr), "l"(state));
#if __CUDA_ARCH__ >= 900  // try_wait needs sm_90+
  asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar_addr), "r"(done));
#endif
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(sa_addr), "l"(g + 7));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa_addr + 16), "l"(g + 8));
  asm volatile("cp.async.mbarrier.arrive.shared.b64 [%0];" ::"r"(bar_addr));
  asm volatile("cp.async.wait_all;");
  float* cc = c + blockIdx.x * 256 + t * 4;
  cc[0] = d0 + sg[t ^ 3] + (float)h0;
  cc[1] = d1 + (float)i0 + (float)done;
  cc[2] = d2 + (float)i1 + (float)h1;
  cc[3] = d3 + (float)(i2 + i3);
#endif
}

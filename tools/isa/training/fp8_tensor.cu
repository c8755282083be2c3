// Training kernel: FP8 tensor-core instructions. mma.sync on e4m3/e5m2 (sm_89 and later: QMMA) and, on
// sm_90a, wgmma on e4m3/e5m2 (QGMMA) with several N, A from shared-memory descriptors and from registers, and
// a runtime scale-d predicate inside one commit group (no gsb0 on all but the last).
#include <cuda_fp16.h>
__device__ __forceinline__ unsigned long long fp8_desc(unsigned addr) {
  return ((addr & 0x3FFFF) >> 4) | (1ull << 16) | (32ull << 32) | (1ull << 62);
}
extern "C" __global__ void fp8_mma(float* out, const unsigned* a, int n) {
#if __CUDA_ARCH__ >= 890
  int i = threadIdx.x;
  unsigned a0 = a[i], a1 = a[i + 32], a2 = a[i + 64], a3 = a[i + 96], b0 = a[i + 128], b1 = a[i + 160];
  float c[4] = {out[i], out[i + 32], out[i + 64], out[i + 96]};
  unsigned h[2] = {a[i + 192], a[i + 224]};
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e5m2.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
               : "+r"(h[0]), "+r"(h[1]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
               : "+r"(h[0]), "+r"(h[1]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  out[i] = c[0] + c[1] * c[2] - c[3] + __uint_as_float(h[0] ^ h[1]);
#endif
}

extern "C" __global__ void __launch_bounds__(128) fp8_wgmma(float* out, const unsigned* in, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ __align__(1024) unsigned char sa[64 * 128];
  __shared__ __align__(1024) unsigned char sb[256 * 128];
  unsigned pa = (unsigned)__cvta_generic_to_shared(sa), pb = (unsigned)__cvta_generic_to_shared(sb);
  for (int k = threadIdx.x; k < 64 * 128 / 4; k += 128) ((unsigned*)sa)[k] = in[k];
  for (int k = threadIdx.x; k < 256 * 128 / 4; k += 128) ((unsigned*)sb)[k] = in[k + 2048];
  __syncthreads();
  unsigned r0 = in[threadIdx.x], r1 = in[threadIdx.x + 128], r2 = in[threadIdx.x + 256], r3 = in[threadIdx.x + 384];
  {
    float d0[12];
#pragma unroll
    for (int k = 0; k < 12; ++k) d0[k] = 0;
    for (int k = 0; k < K; ++k) {
      asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        unsigned long long da = fp8_desc(pa + s * 32), db = fp8_desc(pb + s * 32);
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %14, 0; wgmma.mma_async.sync.aligned.m64n24k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11}, %12, %13, 1, 1, 1; }"
                     : "+f"(d0[0]), "+f"(d0[1]), "+f"(d0[2]), "+f"(d0[3]), "+f"(d0[4]), "+f"(d0[5]), "+f"(d0[6]), "+f"(d0[7]), "+f"(d0[8]), "+f"(d0[9]), "+f"(d0[10]), "+f"(d0[11])
                     : "l"(da), "l"(db), "r"(k + s));
      }
      asm volatile("wgmma.commit_group.sync.aligned;");
      asm volatile("wgmma.wait_group.sync.aligned 1;");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;");
#pragma unroll
    for (int k = 0; k < 12; ++k) out[threadIdx.x * 12 + k + 4096] = d0[k];
  }
  {
    float d1[28];
#pragma unroll
    for (int k = 0; k < 28; ++k) d1[k] = 0;
    for (int k = 0; k < K; ++k) {
      asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        unsigned long long da = fp8_desc(pa + s * 32), db = fp8_desc(pb + s * 32);
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %30, 0; wgmma.mma_async.sync.aligned.m64n56k32.f32.e5m2.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27}, %28, %29, p, 1, 1; }"
                     : "+f"(d1[0]), "+f"(d1[1]), "+f"(d1[2]), "+f"(d1[3]), "+f"(d1[4]), "+f"(d1[5]), "+f"(d1[6]), "+f"(d1[7]), "+f"(d1[8]), "+f"(d1[9]), "+f"(d1[10]), "+f"(d1[11]), "+f"(d1[12]), "+f"(d1[13]), "+f"(d1[14]), "+f"(d1[15]), "+f"(d1[16]), "+f"(d1[17]), "+f"(d1[18]), "+f"(d1[19]), "+f"(d1[20]), "+f"(d1[21]), "+f"(d1[22]), "+f"(d1[23]), "+f"(d1[24]), "+f"(d1[25]), "+f"(d1[26]), "+f"(d1[27])
                     : "l"(da), "l"(db), "r"(k + s));
      }
      asm volatile("wgmma.commit_group.sync.aligned;");
      asm volatile("wgmma.wait_group.sync.aligned 1;");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;");
#pragma unroll
    for (int k = 0; k < 28; ++k) out[threadIdx.x * 28 + k + 8192] = d1[k];
  }
  {
    unsigned d2[24];
#pragma unroll
    for (int k = 0; k < 24; ++k) d2[k] = 0;
    for (int k = 0; k < K; ++k) {
      asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        unsigned long long da = fp8_desc(pa + s * 32), db = fp8_desc(pb + s * 32);
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %26, 0; wgmma.mma_async.sync.aligned.m64n96k32.f16.e4m3.e5m2 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23}, %24, %25, 1, 1, 1; }"
                     : "+r"(d2[0]), "+r"(d2[1]), "+r"(d2[2]), "+r"(d2[3]), "+r"(d2[4]), "+r"(d2[5]), "+r"(d2[6]), "+r"(d2[7]), "+r"(d2[8]), "+r"(d2[9]), "+r"(d2[10]), "+r"(d2[11]), "+r"(d2[12]), "+r"(d2[13]), "+r"(d2[14]), "+r"(d2[15]), "+r"(d2[16]), "+r"(d2[17]), "+r"(d2[18]), "+r"(d2[19]), "+r"(d2[20]), "+r"(d2[21]), "+r"(d2[22]), "+r"(d2[23])
                     : "l"(da), "l"(db), "r"(k + s));
      }
      asm volatile("wgmma.commit_group.sync.aligned;");
      asm volatile("wgmma.wait_group.sync.aligned 1;");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;");
#pragma unroll
    for (int k = 0; k < 24; ++k) out[threadIdx.x * 24 + k + 12288] = __uint_as_float(d2[k]);
  }
  {
    float d3[96];
#pragma unroll
    for (int k = 0; k < 96; ++k) d3[k] = 0;
    for (int k = 0; k < K; ++k) {
      asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        unsigned long long da = fp8_desc(pa + s * 32), db = fp8_desc(pb + s * 32);
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %98, 0; wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e5m2 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95}, %96, %97, p, 1, 1; }"
                     : "+f"(d3[0]), "+f"(d3[1]), "+f"(d3[2]), "+f"(d3[3]), "+f"(d3[4]), "+f"(d3[5]), "+f"(d3[6]), "+f"(d3[7]), "+f"(d3[8]), "+f"(d3[9]), "+f"(d3[10]), "+f"(d3[11]), "+f"(d3[12]), "+f"(d3[13]), "+f"(d3[14]), "+f"(d3[15]), "+f"(d3[16]), "+f"(d3[17]), "+f"(d3[18]), "+f"(d3[19]), "+f"(d3[20]), "+f"(d3[21]), "+f"(d3[22]), "+f"(d3[23]), "+f"(d3[24]), "+f"(d3[25]), "+f"(d3[26]), "+f"(d3[27]), "+f"(d3[28]), "+f"(d3[29]), "+f"(d3[30]), "+f"(d3[31]), "+f"(d3[32]), "+f"(d3[33]), "+f"(d3[34]), "+f"(d3[35]), "+f"(d3[36]), "+f"(d3[37]), "+f"(d3[38]), "+f"(d3[39]), "+f"(d3[40]), "+f"(d3[41]), "+f"(d3[42]), "+f"(d3[43]), "+f"(d3[44]), "+f"(d3[45]), "+f"(d3[46]), "+f"(d3[47]), "+f"(d3[48]), "+f"(d3[49]), "+f"(d3[50]), "+f"(d3[51]), "+f"(d3[52]), "+f"(d3[53]), "+f"(d3[54]), "+f"(d3[55]), "+f"(d3[56]), "+f"(d3[57]), "+f"(d3[58]), "+f"(d3[59]), "+f"(d3[60]), "+f"(d3[61]), "+f"(d3[62]), "+f"(d3[63]), "+f"(d3[64]), "+f"(d3[65]), "+f"(d3[66]), "+f"(d3[67]), "+f"(d3[68]), "+f"(d3[69]), "+f"(d3[70]), "+f"(d3[71]), "+f"(d3[72]), "+f"(d3[73]), "+f"(d3[74]), "+f"(d3[75]), "+f"(d3[76]), "+f"(d3[77]), "+f"(d3[78]), "+f"(d3[79]), "+f"(d3[80]), "+f"(d3[81]), "+f"(d3[82]), "+f"(d3[83]), "+f"(d3[84]), "+f"(d3[85]), "+f"(d3[86]), "+f"(d3[87]), "+f"(d3[88]), "+f"(d3[89]), "+f"(d3[90]), "+f"(d3[91]), "+f"(d3[92]), "+f"(d3[93]), "+f"(d3[94]), "+f"(d3[95])
                     : "l"(da), "l"(db), "r"(k + s));
      }
      asm volatile("wgmma.commit_group.sync.aligned;");
      asm volatile("wgmma.wait_group.sync.aligned 1;");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;");
#pragma unroll
    for (int k = 0; k < 96; ++k) out[threadIdx.x * 96 + k + 16384] = d3[k];
  }
  {
    float d4[20];
#pragma unroll
    for (int k = 0; k < 20; ++k) d4[k] = 0;
    for (int k = 0; k < K; ++k) {
      asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        unsigned long long da = fp8_desc(pa + s * 32), db = fp8_desc(pb + s * 32);
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %25, 0; wgmma.mma_async.sync.aligned.m64n40k32.f32.e5m2.e5m2 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19}, {%20,%21,%22,%23}, %24, p, 1, 1; }"
                     : "+f"(d4[0]), "+f"(d4[1]), "+f"(d4[2]), "+f"(d4[3]), "+f"(d4[4]), "+f"(d4[5]), "+f"(d4[6]), "+f"(d4[7]), "+f"(d4[8]), "+f"(d4[9]), "+f"(d4[10]), "+f"(d4[11]), "+f"(d4[12]), "+f"(d4[13]), "+f"(d4[14]), "+f"(d4[15]), "+f"(d4[16]), "+f"(d4[17]), "+f"(d4[18]), "+f"(d4[19])
                     : "r"(r0 + s), "r"(r1), "r"(r2), "r"(r3), "l"(db), "r"(k + s));
      }
      asm volatile("wgmma.commit_group.sync.aligned;");
      asm volatile("wgmma.wait_group.sync.aligned 1;");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;");
#pragma unroll
    for (int k = 0; k < 20; ++k) out[threadIdx.x * 20 + k + 20480] = d4[k];
  }
  {
    float d5[56];
#pragma unroll
    for (int k = 0; k < 56; ++k) d5[k] = 0;
    for (int k = 0; k < K; ++k) {
      asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        unsigned long long da = fp8_desc(pa + s * 32), db = fp8_desc(pb + s * 32);
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %61, 0; wgmma.mma_async.sync.aligned.m64n112k32.f32.e4m3.e5m2 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55}, {%56,%57,%58,%59}, %60, 1, 1, 1; }"
                     : "+f"(d5[0]), "+f"(d5[1]), "+f"(d5[2]), "+f"(d5[3]), "+f"(d5[4]), "+f"(d5[5]), "+f"(d5[6]), "+f"(d5[7]), "+f"(d5[8]), "+f"(d5[9]), "+f"(d5[10]), "+f"(d5[11]), "+f"(d5[12]), "+f"(d5[13]), "+f"(d5[14]), "+f"(d5[15]), "+f"(d5[16]), "+f"(d5[17]), "+f"(d5[18]), "+f"(d5[19]), "+f"(d5[20]), "+f"(d5[21]), "+f"(d5[22]), "+f"(d5[23]), "+f"(d5[24]), "+f"(d5[25]), "+f"(d5[26]), "+f"(d5[27]), "+f"(d5[28]), "+f"(d5[29]), "+f"(d5[30]), "+f"(d5[31]), "+f"(d5[32]), "+f"(d5[33]), "+f"(d5[34]), "+f"(d5[35]), "+f"(d5[36]), "+f"(d5[37]), "+f"(d5[38]), "+f"(d5[39]), "+f"(d5[40]), "+f"(d5[41]), "+f"(d5[42]), "+f"(d5[43]), "+f"(d5[44]), "+f"(d5[45]), "+f"(d5[46]), "+f"(d5[47]), "+f"(d5[48]), "+f"(d5[49]), "+f"(d5[50]), "+f"(d5[51]), "+f"(d5[52]), "+f"(d5[53]), "+f"(d5[54]), "+f"(d5[55])
                     : "r"(r0 + s), "r"(r1), "r"(r2), "r"(r3), "l"(db), "r"(k + s));
      }
      asm volatile("wgmma.commit_group.sync.aligned;");
      asm volatile("wgmma.wait_group.sync.aligned 1;");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;");
#pragma unroll
    for (int k = 0; k < 56; ++k) out[threadIdx.x * 56 + k + 24576] = d5[k];
  }
  {
    unsigned d6[64];
#pragma unroll
    for (int k = 0; k < 64; ++k) d6[k] = 0;
    for (int k = 0; k < K; ++k) {
      asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        unsigned long long da = fp8_desc(pa + s * 32), db = fp8_desc(pb + s * 32);
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %69, 0; wgmma.mma_async.sync.aligned.m64n256k32.f16.e5m2.e5m2 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1; }"
                     : "+r"(d6[0]), "+r"(d6[1]), "+r"(d6[2]), "+r"(d6[3]), "+r"(d6[4]), "+r"(d6[5]), "+r"(d6[6]), "+r"(d6[7]), "+r"(d6[8]), "+r"(d6[9]), "+r"(d6[10]), "+r"(d6[11]), "+r"(d6[12]), "+r"(d6[13]), "+r"(d6[14]), "+r"(d6[15]), "+r"(d6[16]), "+r"(d6[17]), "+r"(d6[18]), "+r"(d6[19]), "+r"(d6[20]), "+r"(d6[21]), "+r"(d6[22]), "+r"(d6[23]), "+r"(d6[24]), "+r"(d6[25]), "+r"(d6[26]), "+r"(d6[27]), "+r"(d6[28]), "+r"(d6[29]), "+r"(d6[30]), "+r"(d6[31]), "+r"(d6[32]), "+r"(d6[33]), "+r"(d6[34]), "+r"(d6[35]), "+r"(d6[36]), "+r"(d6[37]), "+r"(d6[38]), "+r"(d6[39]), "+r"(d6[40]), "+r"(d6[41]), "+r"(d6[42]), "+r"(d6[43]), "+r"(d6[44]), "+r"(d6[45]), "+r"(d6[46]), "+r"(d6[47]), "+r"(d6[48]), "+r"(d6[49]), "+r"(d6[50]), "+r"(d6[51]), "+r"(d6[52]), "+r"(d6[53]), "+r"(d6[54]), "+r"(d6[55]), "+r"(d6[56]), "+r"(d6[57]), "+r"(d6[58]), "+r"(d6[59]), "+r"(d6[60]), "+r"(d6[61]), "+r"(d6[62]), "+r"(d6[63])
                     : "r"(r0 + s), "r"(r1), "r"(r2), "r"(r3), "l"(db), "r"(k + s));
      }
      asm volatile("wgmma.commit_group.sync.aligned;");
      asm volatile("wgmma.wait_group.sync.aligned 1;");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;");
#pragma unroll
    for (int k = 0; k < 64; ++k) out[threadIdx.x * 64 + k + 28672] = __uint_as_float(d6[k]);
  }
#endif
}

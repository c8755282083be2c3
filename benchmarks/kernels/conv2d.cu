// Direct 3x3 2-D convolution, fp32, register-tiled (held-out compute-bound kernel; see split_compute_v1.toml).
// out[k][y][x] = sum over c, r, s of in[c][y + r][x + s] * w[k][c][r][s]
//   in  [C][H + 2][W + 2]  (the caller pads the border; the kernel reads it without bounds checks)
//   w   [K][C][3][3]       K = gridDim.z * KT
//   out [K][H][W]          H a multiple of TH, W a multiple of TW
// A block computes a TH x TW tile of KT output channels; each thread 1 row x PX columns x KT channels (32
// accumulators), staging CT input channels (with halo) and their weights in shared memory per step.
#define TW 64
#define TH 16
#define KT 8
#define CT 4
#define PX 4
#define TILE_W (TW + 4)  // TW + 2 halo columns, padded to keep each row 16-byte aligned for float4 reads

extern "C" __global__ void __launch_bounds__(256) conv2d(const float *__restrict__ in,
                                                         const float *__restrict__ w,
                                                         float *__restrict__ out, int C, int H, int W) {
  __shared__ __align__(16) float tile[CT][TH + 2][TILE_W];
  __shared__ __align__(16) float ws[CT][9][KT];  // [c][r*3+s][k]: one (c, r, s) gives KT adjacent weights
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH, k0 = blockIdx.z * KT;
  const int wp = W + 2;
  float acc[KT][PX] = {};
  for (int c0 = 0; c0 < C; c0 += CT) {
    for (int i = threadIdx.x; i < CT * (TH + 2) * (TW + 2); i += 256) {
      int c = i / ((TH + 2) * (TW + 2)), r = (i / (TW + 2)) % (TH + 2), s = i % (TW + 2);
      tile[c][r][s] = in[((size_t)(c0 + c) * (H + 2) + y0 + r) * wp + x0 + s];
    }
    for (int i = threadIdx.x; i < CT * 9 * KT; i += 256) {
      int k = i % KT, rs = (i / KT) % 9, c = i / (9 * KT);
      ws[c][rs][k] = w[((size_t)(k0 + k) * C + c0 + c) * 9 + rs];
    }
    __syncthreads();
#pragma unroll
    for (int c = 0; c < CT; ++c) {
#pragma unroll
      for (int r = 0; r < 3; ++r) {
        const float *row = &tile[c][ty + r][tx * PX];
        float4 lo = *reinterpret_cast<const float4 *>(row);
        float2 hi = *reinterpret_cast<const float2 *>(row + 4);
        float v[PX + 2] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y};
#pragma unroll
        for (int s = 0; s < 3; ++s) {
          float4 wa = *reinterpret_cast<const float4 *>(&ws[c][r * 3 + s][0]);
          float4 wb = *reinterpret_cast<const float4 *>(&ws[c][r * 3 + s][4]);
          float wk[KT] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
#pragma unroll
          for (int k = 0; k < KT; ++k)
#pragma unroll
            for (int j = 0; j < PX; ++j) acc[k][j] = fmaf(wk[k], v[j + s], acc[k][j]);
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int k = 0; k < KT; ++k) {
    float4 o = make_float4(acc[k][0], acc[k][1], acc[k][2], acc[k][3]);
    *reinterpret_cast<float4 *>(&out[((size_t)(k0 + k) * H + y0 + ty) * W + x0 + tx * PX]) = o;
  }
}

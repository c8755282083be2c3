// Performance-model training kernel (not in the optimizer's frozen split): all-pairs gravitational
// acceleration, bodies as float4 (x, y, z, mass) staged through shared memory 256 at a time; FMA and
// rsqrt (MUFU) bound.
extern "C" __global__ void __launch_bounds__(256) nbody(const float4 *__restrict__ pos, float4 *acc_out,
                                                        int n) {
  __shared__ float4 tile[256];
  int i = blockIdx.x * 256 + threadIdx.x;
  float4 p = pos[i];
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int t = 0; t < n; t += 256) {
    tile[threadIdx.x] = pos[t + threadIdx.x];
    __syncthreads();
#pragma unroll 8
    for (int j = 0; j < 256; ++j) {
      float4 q = tile[j];
      float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
      float d2 = dx * dx + dy * dy + dz * dz + 1e-3f;
      float inv = rsqrtf(d2);
      float s = q.w * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    __syncthreads();
  }
  acc_out[i] = make_float4(ax, ay, az, 0.f);
}

// Round-trip corpus: FP64 arithmetic and math library.
extern "C" __global__ void daxpy(double a, const double *x, double *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fma(a, x[i], y[i]);
}

extern "C" __global__ void dmath(const double *x, double *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = sqrt(fabs(x[i])) / (x[i] + 3.0) + exp(x[i] * 0.1) + log1p(fabs(x[i]));
}

extern "C" __global__ void dgemv_row(const double *A, const double *x, double *y, int n) {
  int r = blockIdx.x;
  double s = 0;
  for (int c = threadIdx.x; c < n; c += blockDim.x) s += A[(size_t)r * n + c] * x[c];
  __shared__ double part[256];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[r] = part[0];
}

extern "C" __global__ void dcompare(const double *a, const double *b, int *flags, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) flags[i] = (a[i] < b[i]) | ((a[i] == b[i]) << 1) | (isnan(a[i]) << 2) | ((int)floor(a[i]) << 3);
}

// The CUDA device: straightforward kernels (one thread per output row or element, no atomics on
// gradients, so a recompute reproduces the no-recompute gradients bit for bit) and cuBLAS GEMMs
// with fp32 accumulation. Correctness is checked against the CPU fp64 reference by
// actmem-validate (bounds in checks.hpp); memory goes through the tracker like the CPU's.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "cuda_device.hpp"
#include "rng.hpp"

namespace actmem::exec {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

constexpr int kBf = static_cast<int>(Elem::kBf16);
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/pi), tanh GELU

__device__ __forceinline__ float ld(const void* p, int e, size_t i) {
  return e == kBf ? __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i])
                  : static_cast<const float*>(p)[i];
}
__device__ __forceinline__ void st(void* p, int e, size_t i, float v) {
  if (e == kBf)
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
  else
    static_cast<float*>(p)[i] = v;
}
__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.f + tanhf(kGeluC * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float gelu_grad(float x) {
  const float t = tanhf(kGeluC * (x + 0.044715f * x * x * x));
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * kGeluC * (1.f + 3.f * 0.044715f * x * x);
}
__device__ __forceinline__ float silu(float x) {
  return x / (1.f + expf(-x));
}
__device__ __forceinline__ float silu_grad(float x) {
  const float s = 1.f / (1.f + expf(-x));
  return s * (1.f + x * (1.f - s));
}
__device__ __forceinline__ float keepf(std::uint64_t seed, std::uint64_t stream, size_t i,
                                       double p) {
  return p > 0.0 ? (dropout_keep(seed, stream, i, p) ? float(1.0 / (1.0 - p)) : 0.f) : 1.f;
}
// q (B, T, H, D) and P (B, A, T, T) offsets.
__device__ __forceinline__ size_t qo(int b, int t, int h, int T, int H, int D) {
  return ((size_t(b) * T + t) * H + h) * D;
}
__device__ __forceinline__ size_t po(int b, int h, int i, int A, int T) {
  return ((size_t(b) * A + h) * T + i) * T;
}

__device__ double g_loss_sum;  // the loss reduction (a scalar, not a gradient: order is free)

#define TID (size_t(blockIdx.x) * blockDim.x + threadIdx.x)

__global__ void k_cast(const void* x, int ex, void* y, int ey, size_t n) {
  const size_t t = TID;
  if (t < n) st(y, ey, t, ld(x, ex, t));
}
__global__ void k_bias_add(void* y, const void* b, int e, int rows, int cols) {
  const size_t t = TID;
  if (t < size_t(rows) * cols) st(y, e, t, ld(y, e, t) + ld(b, e, t % cols));
}
__global__ void k_bias_grad(const void* dy, void* db, int e, int rows, int cols) {
  const size_t c = TID;
  if (c >= size_t(cols)) return;
  float acc = 0;
  for (int r = 0; r < rows; ++r) acc += ld(dy, e, size_t(r) * cols + c);
  st(db, e, c, ld(db, e, c) + acc);
}
__device__ void row_stats(const void* x, int e, size_t o, int cols, bool center, float eps,
                          float* mu, float* rs) {
  float m = 0;
  if (center) {
    for (int c = 0; c < cols; ++c) m += ld(x, e, o + c);
    m /= cols;
  }
  float v = 0;
  for (int c = 0; c < cols; ++c) {
    const float d = ld(x, e, o + c) - m;
    v += d * d;
  }
  *mu = m;
  *rs = rsqrtf(v / cols + eps);
}
__global__ void k_norm_fwd(const void* x, const void* g, const void* b, void* y, int e, int rows,
                           int cols, float eps) {
  const size_t r = TID;
  if (r >= size_t(rows)) return;
  const size_t o = r * cols;
  float mu, rs;
  row_stats(x, e, o, cols, b != nullptr, eps, &mu, &rs);
  for (int c = 0; c < cols; ++c)
    st(y, e, o + c, (ld(x, e, o + c) - mu) * rs * ld(g, e, c) + (b ? ld(b, e, c) : 0.f));
}
__global__ void k_norm_bwd_dx(const void* x, const void* g, const void* dy, void* dx, int e,
                              int rows, int cols, float eps, bool ln) {
  const size_t r = TID;
  if (r >= size_t(rows)) return;
  const size_t o = r * cols;
  float mu, rs;
  row_stats(x, e, o, cols, ln, eps, &mu, &rs);
  float sg = 0, sgx = 0;
  for (int c = 0; c < cols; ++c) {
    const float gg = ld(dy, e, o + c) * ld(g, e, c), xh = (ld(x, e, o + c) - mu) * rs;
    sg += gg, sgx += gg * xh;
  }
  for (int c = 0; c < cols; ++c) {
    const float gg = ld(dy, e, o + c) * ld(g, e, c), xh = (ld(x, e, o + c) - mu) * rs;
    const float d = ln ? rs * (gg - sg / cols - xh * sgx / cols) : rs * (gg - xh * sgx / cols);
    st(dx, e, o + c, ld(dx, e, o + c) + d);
  }
}
// dgamma/dbeta: one block per 256 columns walks the rows in order; the block recomputes each row's
// statistics together (a shared-memory reduction), so nothing is allocated and the sums are
// deterministic.
constexpr int kNormThreads = 256;
__global__ void k_norm_bwd_dg(const void* x, const void* dy, void* dg, void* db, int e, int rows,
                              int cols, float eps, bool ln) {
  __shared__ float red[kNormThreads];
  __shared__ float stat[2];
  const int c = blockIdx.x * kNormThreads + threadIdx.x;
  float ag = 0, ab = 0;
  for (int r = 0; r < rows; ++r) {
    const size_t o = size_t(r) * cols;
    float part = 0;
    if (ln) {
      for (int k = threadIdx.x; k < cols; k += kNormThreads) part += ld(x, e, o + k);
      red[threadIdx.x] = part;
      __syncthreads();
      for (int w = kNormThreads / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
        __syncthreads();
      }
      if (threadIdx.x == 0) stat[0] = red[0] / cols;
      __syncthreads();
    } else if (threadIdx.x == 0) {
      stat[0] = 0;
    }
    __syncthreads();
    const float mu = stat[0];
    part = 0;
    for (int k = threadIdx.x; k < cols; k += kNormThreads) {
      const float d = ld(x, e, o + k) - mu;
      part += d * d;
    }
    red[threadIdx.x] = part;
    __syncthreads();
    for (int w = kNormThreads / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) stat[1] = rsqrtf(red[0] / cols + eps);
    __syncthreads();
    if (c < cols) {
      ag += ld(dy, e, o + c) * (ld(x, e, o + c) - mu) * stat[1];
      ab += ld(dy, e, o + c);
    }
    __syncthreads();
  }
  if (c >= cols) return;
  st(dg, e, c, ld(dg, e, c) + ag);
  if (ln) st(db, e, c, ld(db, e, c) + ab);
}
__global__ void k_dropout_mask(std::uint8_t* m, size_t n, double p, std::uint64_t seed,
                               std::uint64_t stream) {
  const size_t t = TID;
  if (t < n) m[t] = dropout_keep(seed, stream, t, p) ? 1 : 0;
}
__global__ void k_dropout_apply(const void* x, const std::uint8_t* m, void* y, int e, size_t n,
                                float p) {
  const size_t t = TID;
  if (t < n) st(y, e, t, m[t] ? ld(x, e, t) / (1.f - p) : 0.f);
}
// Scores are recomputed in each pass rather than stored and read back, so bf16 storage does not
// round them before the softmax (the CPU keeps the row in double).
__device__ __forceinline__ float score(const void* q, const void* k, int e, int b, int i, int j,
                                       int h, int g, int T, int A, int G, int D, float scale) {
  float s = 0;
  for (int d = 0; d < D; ++d)
    s += ld(q, e, qo(b, i, h, T, A, D) + d) * ld(k, e, qo(b, j, g, T, G, D) + d);
  return s * scale;
}
__global__ void k_attn_probs(const void* q, const void* k, void* P, int e, int B, int T, int A,
                             int G, int D, float scale) {
  const size_t r = TID;
  if (r >= size_t(B) * A * T) return;
  const int i = int(r % T), h = int(r / T % A), b = int(r / T / A), g = h / (A / G);
  const size_t pr = po(b, h, i, A, T);
  float mx = -INFINITY;
  for (int j = 0; j <= i; ++j) mx = fmaxf(mx, score(q, k, e, b, i, j, h, g, T, A, G, D, scale));
  float z = 0;
  for (int j = 0; j <= i; ++j) z += expf(score(q, k, e, b, i, j, h, g, T, A, G, D, scale) - mx);
  for (int j = 0; j < T; ++j)
    st(P, e, pr + j,
       j <= i ? expf(score(q, k, e, b, i, j, h, g, T, A, G, D, scale) - mx) / z : 0.f);
}
// out(b, i, h, :) = sum over j <= i of M(b, h, i, j) X(b, j, h's group, :): P V and dS K.
__global__ void k_causal_rows(const void* M, const void* X, void* out, int e, int B, int T, int A,
                              int G, int D) {
  const size_t t = TID;
  if (t >= size_t(B) * T * A * D) return;
  const int d = int(t % D), h = int(t / D % A), i = int(t / D / A % T), b = int(t / D / A / T);
  const int g = h / (A / G);
  float acc = 0;
  for (int j = 0; j <= i; ++j)
    acc += ld(M, e, po(b, h, i, A, T) + j) * ld(X, e, qo(b, j, g, T, G, D) + d);
  st(out, e, t, acc);
}
__global__ void k_attn_dp(const void* dctx, const void* v, void* dP, int e, int B, int T, int A,
                          int G, int D) {
  const size_t t = TID;
  if (t >= size_t(B) * A * T * T) return;
  const int j = int(t % T), i = int(t / T % T), h = int(t / T / T % A), b = int(t / T / T / A);
  const int g = h / (A / G);
  float acc = 0;
  for (int d = 0; d < D; ++d)
    acc += ld(dctx, e, qo(b, i, h, T, A, D) + d) * ld(v, e, qo(b, j, g, T, G, D) + d);
  st(dP, e, t, acc);
}
// out(b, j, g, :) = sum over the heads h of group g and i >= j of M(b, h, i, j) Y(b, i, h, :):
// P^T dO and dS^T Q.
__global__ void k_causal_cols(const void* M, const void* Y, void* out, int e, int B, int T, int A,
                              int G, int D) {
  const size_t t = TID;
  if (t >= size_t(B) * T * G * D) return;
  const int d = int(t % D), g = int(t / D % G), j = int(t / D / G % T), b = int(t / D / G / T);
  const int grp = A / G;
  float acc = 0;
  for (int h = g * grp; h < (g + 1) * grp; ++h)
    for (int i = j; i < T; ++i)
      acc += ld(M, e, po(b, h, i, A, T) + j) * ld(Y, e, qo(b, i, h, T, A, D) + d);
  st(out, e, t, acc);
}
__global__ void k_softmax_bwd(void* dP, const void* P, int e, size_t rows, int cols, float scale) {
  const size_t r = TID;
  if (r >= rows) return;
  const size_t o = r * cols;
  float dot = 0;
  for (int c = 0; c < cols; ++c) dot += ld(dP, e, o + c) * ld(P, e, o + c);
  for (int c = 0; c < cols; ++c)
    st(dP, e, o + c, scale * ld(P, e, o + c) * (ld(dP, e, o + c) - dot));
}
constexpr int kMaxD = 256;  // head dims up to 256 keep their accumulators in registers/local
__global__ void k_flash_fwd(const void* q, const void* k, const void* v, void* ctx, float* lse,
                            int e, int B, int T, int A, int G, int D, float scale, double p,
                            std::uint64_t seed, std::uint64_t stream) {
  const size_t r = TID;
  if (r >= size_t(B) * A * T) return;
  const int i = int(r % T), h = int(r / T % A), b = int(r / T / A), g = h / (A / G);
  float acc[kMaxD];
  for (int d = 0; d < D; ++d) acc[d] = 0;
  float m = -INFINITY, l = 0;  // online softmax (Milakov & Gimelshein 2018)
  for (int j = 0; j <= i; ++j) {
    const float s = score(q, k, e, b, i, j, h, g, T, A, G, D, scale);
    const float mn = fmaxf(m, s), c = expf(m - mn), w = expf(s - mn);
    l = l * c + w;
    const float wk = w * keepf(seed, stream, po(b, h, i, A, T) + j, p);
    for (int d = 0; d < D; ++d) acc[d] = acc[d] * c + wk * ld(v, e, qo(b, j, g, T, G, D) + d);
    m = mn;
  }
  for (int d = 0; d < D; ++d) st(ctx, e, qo(b, i, h, T, A, D) + d, acc[d] / l);
  lse[r] = m + logf(l);
}
__global__ void k_flash_D(const void* dctx, const void* ctx, float* Dr, int e, int B, int T, int A,
                          int D) {
  const size_t r = TID;
  if (r >= size_t(B) * A * T) return;
  const int i = int(r % T), h = int(r / T % A), b = int(r / T / A);
  float acc = 0;
  for (int d = 0; d < D; ++d)
    acc += ld(dctx, e, qo(b, i, h, T, A, D) + d) * ld(ctx, e, qo(b, i, h, T, A, D) + d);
  Dr[r] = acc;
}
__global__ void k_flash_dq(const void* q, const void* k, const void* v, const void* dctx,
                           const float* lse, const float* Dr, void* dq, int e, int B, int T, int A,
                           int G, int D, float scale, double p, std::uint64_t seed,
                           std::uint64_t stream) {
  const size_t r = TID;
  if (r >= size_t(B) * A * T) return;
  const int i = int(r % T), h = int(r / T % A), b = int(r / T / A), g = h / (A / G);
  float acc[kMaxD];
  for (int d = 0; d < D; ++d) acc[d] = 0;
  for (int j = 0; j <= i; ++j) {
    float s = 0, dp = 0;
    for (int d = 0; d < D; ++d) {
      s += ld(q, e, qo(b, i, h, T, A, D) + d) * ld(k, e, qo(b, j, g, T, G, D) + d);
      dp += ld(dctx, e, qo(b, i, h, T, A, D) + d) * ld(v, e, qo(b, j, g, T, G, D) + d);
    }
    const float P = expf(s * scale - lse[r]);
    const float dS = P * (keepf(seed, stream, po(b, h, i, A, T) + j, p) * dp - Dr[r]) * scale;
    for (int d = 0; d < D; ++d) acc[d] += dS * ld(k, e, qo(b, j, g, T, G, D) + d);
  }
  for (int d = 0; d < D; ++d) st(dq, e, qo(b, i, h, T, A, D) + d, acc[d]);
}
__global__ void k_flash_dkv(const void* q, const void* k, const void* v, const void* dctx,
                            const float* lse, const float* Dr, void* dk, void* dv, int e, int B,
                            int T, int A, int G, int D, float scale, double p, std::uint64_t seed,
                            std::uint64_t stream) {
  const size_t r = TID;
  if (r >= size_t(B) * G * T) return;
  const int j = int(r % T), g = int(r / T % G), b = int(r / T / G), grp = A / G;
  float ak[kMaxD], av[kMaxD];
  for (int d = 0; d < D; ++d) ak[d] = av[d] = 0;
  for (int h = g * grp; h < (g + 1) * grp; ++h)
    for (int i = j; i < T; ++i) {
      const size_t row = (size_t(b) * A + h) * T + i;
      float s = 0, dp = 0;
      for (int d = 0; d < D; ++d) {
        s += ld(q, e, qo(b, i, h, T, A, D) + d) * ld(k, e, qo(b, j, g, T, G, D) + d);
        dp += ld(dctx, e, qo(b, i, h, T, A, D) + d) * ld(v, e, qo(b, j, g, T, G, D) + d);
      }
      const float P = expf(s * scale - lse[row]);
      const float m = keepf(seed, stream, po(b, h, i, A, T) + j, p);
      const float dS = P * (m * dp - Dr[row]) * scale;
      for (int d = 0; d < D; ++d) {
        av[d] += P * m * ld(dctx, e, qo(b, i, h, T, A, D) + d);
        ak[d] += dS * ld(q, e, qo(b, i, h, T, A, D) + d);
      }
    }
  for (int d = 0; d < D; ++d) {
    st(dk, e, qo(b, j, g, T, G, D) + d, ak[d]);
    st(dv, e, qo(b, j, g, T, G, D) + d, av[d]);
  }
}
__global__ void k_rope(void* x, int e, int B, int T, int H, int D, float sign) {
  const size_t t = TID;
  const int half = D / 2;
  if (t >= size_t(B) * T * H * half) return;
  const int i = int(t % half), h = int(t / half % H), tt = int(t / half / H % T),
            b = int(t / half / H / T);
  const float ang = sign * tt * powf(10000.f, -2.f * i / D);
  const float c = cosf(ang), s = sinf(ang);
  const size_t o = qo(b, tt, h, T, H, D);
  const float x1 = ld(x, e, o + i), x2 = ld(x, e, o + i + half);
  st(x, e, o + i, x1 * c - x2 * s);
  st(x, e, o + i + half, x2 * c + x1 * s);
}
__global__ void k_gelu_fwd(const void* x, void* y, int e, size_t n) {
  const size_t t = TID;
  if (t < n) st(y, e, t, gelu(ld(x, e, t)));
}
__global__ void k_gelu_bwd(void* dy, const void* x, int e, size_t n) {
  const size_t t = TID;
  if (t < n) st(dy, e, t, ld(dy, e, t) * gelu_grad(ld(x, e, t)));
}
__global__ void k_glu_fwd(const void* x, void* y, int e, int rows, int F, bool use_silu) {
  const size_t t = TID;
  if (t >= size_t(rows) * F) return;
  const size_t r = t / F, c = t % F;
  const float g = ld(x, e, r * 2 * F + c), u = ld(x, e, r * 2 * F + F + c);
  st(y, e, t, (use_silu ? silu(g) : gelu(g)) * u);
}
__global__ void k_glu_bwd(const void* dy, const void* x, void* dx, int e, int rows, int F,
                          bool use_silu) {
  const size_t t = TID;
  if (t >= size_t(rows) * F) return;
  const size_t r = t / F, c = t % F, o = r * 2 * F;
  const float g = ld(x, e, o + c), u = ld(x, e, o + F + c), d = ld(dy, e, t);
  st(dx, e, o + c, d * u * (use_silu ? silu_grad(g) : gelu_grad(g)));
  st(dx, e, o + F + c, d * (use_silu ? silu(g) : gelu(g)));
}
__global__ void k_add(void* y, const void* x, int e, size_t n) {
  const size_t t = TID;
  if (t < n) st(y, e, t, ld(y, e, t) + ld(x, e, t));
}
__global__ void k_embed_fwd(const int* ids, const void* wte, const void* wpe, void* out, int e,
                            int BT, int T, int C) {
  const size_t t = TID;
  if (t >= size_t(BT) * C) return;
  const int r = int(t / C), c = int(t % C);
  st(out, e, t,
     ld(wte, e, size_t(ids[r]) * C + c) + (wpe ? ld(wpe, e, size_t(r % T) * C + c) : 0.f));
}
// One thread per column, tokens in order: deterministic, no atomics.
__global__ void k_embed_bwd(const int* ids, const void* dout, void* dwte, void* dwpe, int e, int BT,
                            int T, int C) {
  const size_t c = TID;
  if (c >= size_t(C)) return;
  for (int r = 0; r < BT; ++r) {
    const float g = ld(dout, e, size_t(r) * C + c);
    st(dwte, e, size_t(ids[r]) * C + c, ld(dwte, e, size_t(ids[r]) * C + c) + g);
    if (dwpe) st(dwpe, e, size_t(r % T) * C + c, ld(dwpe, e, size_t(r % T) * C + c) + g);
  }
}
__global__ void k_xent_fwd(const float* logits, const int* tg, float* probs, int rows, int V) {
  const size_t r = TID;
  if (r >= size_t(rows)) return;
  const size_t o = r * V;
  float mx = -INFINITY, z = 0;
  for (int c = 0; c < V; ++c) mx = fmaxf(mx, logits[o + c]);
  for (int c = 0; c < V; ++c) z += expf(logits[o + c] - mx);
  for (int c = 0; c < V; ++c) probs[o + c] = expf(logits[o + c] - mx) / z;
  atomicAdd(&g_loss_sum, double(-(logits[o + tg[r]] - mx - logf(z))));
}
__global__ void k_xent_bwd(const float* probs, const int* tg, float* dl, int rows, int V) {
  const size_t t = TID;
  if (t >= size_t(rows) * V) return;
  const int r = int(t / V), c = int(t % V);
  dl[t] = (probs[t] - (c == tg[r] ? 1.f : 0.f)) / rows;
}

unsigned blocks(size_t n) {
  return static_cast<unsigned>((n + 255) / 256);
}
#define LAUNCH(kernel, n, ...)                            \
  do {                                                    \
    if ((n) > 0) kernel<<<blocks(n), 256>>>(__VA_ARGS__); \
    check(cudaGetLastError(), #kernel);                   \
  } while (0)

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(Elem e) : e_(e) {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cublasCreate(&h_), "cublasCreate");
    check(cudaDeviceSynchronize(), "init");
    size_t fr = 0, tot = 0;
    check(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo");
    base_used_ = tot - fr;
  }
  ~CudaDevice() override { cublasDestroy(h_); }
  const char* name() const override { return e_ == Elem::kBf16 ? "cuda-bf16" : "cuda-fp32"; }

  void attach_workspace(std::size_t bytes) override {
    if (bytes == 0) return;
    ws_ = alloc(bytes / 4, Elem::kF32, "cublas.workspace");
    check(cublasSetWorkspace(h_, ws_.p, ws_.bytes()), "cublasSetWorkspace");
  }
  void release_workspace() override {
    if (ws_.p) {
      check(cublasSetWorkspace(h_, nullptr, 0), "cublasSetWorkspace");
      free(ws_);
    }
  }
  std::uint64_t used_bytes_outside() override {
    return max_used_ > base_used_ ? max_used_ - base_used_ : 0;
  }

  void upload(Buf& dst, const std::vector<double>& h) override {
    if (dst.e != Elem::kF32 && dst.e != Elem::kBf16)
      throw std::invalid_argument("upload: floating buffers only (ids go through upload_i32)");
    const size_t n = std::min(dst.n, h.size());
    if (dst.e == Elem::kBf16) {
      std::vector<__nv_bfloat16> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = __float2bfloat16(float(h[i]));
      check(cudaMemcpy(dst.p, v.data(), n * 2, cudaMemcpyHostToDevice), "upload");
    } else {
      std::vector<float> v(h.begin(), h.begin() + long(n));
      check(cudaMemcpy(dst.p, v.data(), n * 4, cudaMemcpyHostToDevice), "upload");
    }
  }
  std::vector<double> download(const Buf& src) override {
    std::vector<double> out(src.n);
    if (src.e == Elem::kBf16) {
      std::vector<__nv_bfloat16> v(src.n);
      check(cudaMemcpy(v.data(), src.p, src.n * 2, cudaMemcpyDeviceToHost), "download");
      for (size_t i = 0; i < src.n; ++i) out[i] = __bfloat162float(v[i]);
    } else if (src.e == Elem::kU8) {
      std::vector<std::uint8_t> v(src.n);
      check(cudaMemcpy(v.data(), src.p, src.n, cudaMemcpyDeviceToHost), "download");
      for (size_t i = 0; i < src.n; ++i) out[i] = v[i];
    } else {
      std::vector<float> v(src.n);
      check(cudaMemcpy(v.data(), src.p, src.n * 4, cudaMemcpyDeviceToHost), "download");
      for (size_t i = 0; i < src.n; ++i) out[i] = v[i];
    }
    return out;
  }
  void upload_i32(Buf& dst, const std::vector<std::int32_t>& h) override {
    check(cudaMemcpy(dst.p, h.data(), 4 * std::min(dst.n, h.size()), cudaMemcpyHostToDevice),
          "ids");
  }
  void sync() override { check(cudaDeviceSynchronize(), "sync"); }

  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  void gemm(const Buf& A, bool ta, const Buf& B, bool tb, Buf& C, int m, int n, int k, double alpha,
            double beta) override {
    const float al = float(alpha), be = float(beta);
    if (A.e != B.e) {
      // Mixed operands (the fp32 logits gradient x bf16 weights): the fp32 one is cast to bf16 in
      // a tracked buffer, as a mixed-precision framework does. It lives while the loss backward
      // has already freed the fp32 probabilities (half their size), so it does not raise the peak.
      const Buf& wide = A.e == Elem::kF32 ? A : B;
      Buf narrow = alloc(wide.n, Elem::kBf16, "gemm.bf16_cast");
      LAUNCH(k_cast, wide.n, wide.p, int(wide.e), narrow.p, kBf, wide.n);
      gemm(A.e == Elem::kF32 ? narrow : A, ta, B.e == Elem::kF32 ? narrow : B, tb, C, m, n, k,
           alpha, beta);
      free(narrow);
      return;
    }
    const cudaDataType ab = A.e == Elem::kBf16 ? CUDA_R_16BF : CUDA_R_32F;
    const cudaDataType ct = C.e == Elem::kBf16 ? CUDA_R_16BF : CUDA_R_32F;
    check(cublasGemmEx(h_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                       &al, B.p, ab, tb ? k : n, A.p, ab, ta ? m : k, &be, C.p, ct, n,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  }
  void bias_add(Buf& y, const Buf& b, int rows, int cols) override {
    LAUNCH(k_bias_add, size_t(rows) * cols, y.p, b.p, int(y.e), rows, cols);
  }
  void bias_grad(const Buf& dy, Buf& db, int rows, int cols) override {
    LAUNCH(k_bias_grad, size_t(cols), dy.p, db.p, int(dy.e), rows, cols);
  }
  void norm_fwd(const Buf& x, const Buf& g, const Buf* b, Buf& y, int rows, int cols,
                double eps) override {
    LAUNCH(k_norm_fwd, size_t(rows), x.p, g.p, b ? b->p : nullptr, y.p, int(x.e), rows, cols,
           float(eps));
  }
  void norm_bwd(const Buf& x, const Buf& g, const Buf& dy, Buf& dx, Buf& dg, Buf* db, int rows,
                int cols, double eps) override {
    LAUNCH(k_norm_bwd_dx, size_t(rows), x.p, g.p, dy.p, dx.p, int(x.e), rows, cols, float(eps),
           db != nullptr);
    k_norm_bwd_dg<<<unsigned((cols + kNormThreads - 1) / kNormThreads), kNormThreads>>>(
        x.p, dy.p, dg.p, db ? db->p : nullptr, int(x.e), rows, cols, float(eps), db != nullptr);
    check(cudaGetLastError(), "k_norm_bwd_dg");
  }
  void dropout_mask(Buf& m, double p, std::uint64_t seed, std::uint64_t stream) override {
    LAUNCH(k_dropout_mask, m.n, static_cast<std::uint8_t*>(m.p), m.n, p, seed, stream);
  }
  void dropout_apply(const Buf& x, const Buf& m, Buf& y, double p) override {
    LAUNCH(k_dropout_apply, y.n, x.p, static_cast<const std::uint8_t*>(m.p), y.p, int(y.e), y.n,
           float(p));
  }
  void attn_probs(const Buf& q, const Buf& k, Buf& P, int B, int T, int A, int G, int D,
                  double scale) override {
    LAUNCH(k_attn_probs, size_t(B) * A * T, q.p, k.p, P.p, int(q.e), B, T, A, G, D, float(scale));
  }
  void attn_pv(const Buf& P, const Buf& v, Buf& ctx, int B, int T, int A, int G, int D) override {
    LAUNCH(k_causal_rows, size_t(B) * T * A * D, P.p, v.p, ctx.p, int(v.e), B, T, A, G, D);
  }
  void attn_dp_dv(const Buf& dctx, const Buf& P, const Buf& v, Buf& dP, Buf& dv, int B, int T,
                  int A, int G, int D) override {
    LAUNCH(k_attn_dp, size_t(B) * A * T * T, dctx.p, v.p, dP.p, int(v.e), B, T, A, G, D);
    LAUNCH(k_causal_cols, size_t(B) * T * G * D, P.p, dctx.p, dv.p, int(v.e), B, T, A, G, D);
  }
  void softmax_bwd(Buf& dP, const Buf& P, int rows, int cols, double scale) override {
    LAUNCH(k_softmax_bwd, size_t(rows), dP.p, P.p, int(P.e), size_t(rows), cols, float(scale));
  }
  void attn_dq(const Buf& dS, const Buf& k, Buf& dq, int B, int T, int A, int G, int D) override {
    LAUNCH(k_causal_rows, size_t(B) * T * A * D, dS.p, k.p, dq.p, int(k.e), B, T, A, G, D);
  }
  void attn_dk(const Buf& dS, const Buf& q, Buf& dk, int B, int T, int A, int G, int D) override {
    LAUNCH(k_causal_cols, size_t(B) * T * G * D, dS.p, q.p, dk.p, int(q.e), B, T, A, G, D);
  }
  void flash_fwd(const Buf& q, const Buf& k, const Buf& v, Buf& ctx, Buf& lse, int B, int T, int A,
                 int G, int D, double scale, double p, std::uint64_t seed,
                 std::uint64_t stream) override {
    if (D > kMaxD) throw std::invalid_argument("flash kernels support head_dim <= 256");
    LAUNCH(k_flash_fwd, size_t(B) * A * T, q.p, k.p, v.p, ctx.p, static_cast<float*>(lse.p),
           int(q.e), B, T, A, G, D, float(scale), p, seed, stream);
  }
  void flash_bwd(const Buf& q, const Buf& k, const Buf& v, const Buf& ctx, const Buf& dctx,
                 const Buf& lse, Buf& Dr, Buf& dq, Buf& dk, Buf& dv, int B, int T, int A, int G,
                 int D, double scale, double p, std::uint64_t seed, std::uint64_t stream) override {
    if (D > kMaxD) throw std::invalid_argument("flash kernels support head_dim <= 256");
    const auto* l = static_cast<const float*>(lse.p);
    auto* d = static_cast<float*>(Dr.p);
    LAUNCH(k_flash_D, size_t(B) * A * T, dctx.p, ctx.p, d, int(q.e), B, T, A, D);
    LAUNCH(k_flash_dq, size_t(B) * A * T, q.p, k.p, v.p, dctx.p, l, d, dq.p, int(q.e), B, T, A, G,
           D, float(scale), p, seed, stream);
    LAUNCH(k_flash_dkv, size_t(B) * G * T, q.p, k.p, v.p, dctx.p, l, d, dk.p, dv.p, int(q.e), B, T,
           A, G, D, float(scale), p, seed, stream);
  }
  void rope(Buf& x, int B, int T, int H, int D, bool inverse) override {
    LAUNCH(k_rope, size_t(B) * T * H * (D / 2), x.p, int(x.e), B, T, H, D, inverse ? -1.f : 1.f);
  }
  void gelu_fwd(const Buf& x, Buf& y) override { LAUNCH(k_gelu_fwd, y.n, x.p, y.p, int(y.e), y.n); }
  void gelu_bwd(Buf& dy, const Buf& x) override {
    LAUNCH(k_gelu_bwd, dy.n, dy.p, x.p, int(x.e), dy.n);
  }
  void glu_fwd(const Buf& x, Buf& y, int rows, int F, bool s) override {
    LAUNCH(k_glu_fwd, size_t(rows) * F, x.p, y.p, int(x.e), rows, F, s);
  }
  void glu_bwd(const Buf& dy, const Buf& x, Buf& dx, int rows, int F, bool s) override {
    LAUNCH(k_glu_bwd, size_t(rows) * F, dy.p, x.p, dx.p, int(x.e), rows, F, s);
  }
  void add(Buf& y, const Buf& x) override { LAUNCH(k_add, y.n, y.p, x.p, int(y.e), y.n); }
  void embed_fwd(const Buf& ids, const Buf& wte, const Buf* wpe, Buf& out, int BT, int T,
                 int C) override {
    LAUNCH(k_embed_fwd, size_t(BT) * C, static_cast<const int*>(ids.p), wte.p,
           wpe ? wpe->p : nullptr, out.p, int(out.e), BT, T, C);
  }
  void embed_bwd(const Buf& ids, const Buf& dout, Buf& dwte, Buf* dwpe, int BT, int T,
                 int C) override {
    LAUNCH(k_embed_bwd, size_t(C), static_cast<const int*>(ids.p), dout.p, dwte.p,
           dwpe ? dwpe->p : nullptr, int(dout.e), BT, T, C);
  }
  double xent_fwd(const Buf& logits, const Buf& tg, Buf& probs, int rows, int V) override {
    const double zero = 0;
    check(cudaMemcpyToSymbol(g_loss_sum, &zero, sizeof zero), "loss reset");
    LAUNCH(k_xent_fwd, size_t(rows), static_cast<const float*>(logits.p),
           static_cast<const int*>(tg.p), static_cast<float*>(probs.p), rows, V);
    double sum = 0;
    check(cudaMemcpyFromSymbol(&sum, g_loss_sum, sizeof sum), "loss read");
    return sum / rows;
  }
  void xent_bwd(const Buf& probs, const Buf& tg, Buf& dl, int rows, int V) override {
    LAUNCH(k_xent_bwd, size_t(rows) * V, static_cast<const float*>(probs.p),
           static_cast<const int*>(tg.p), static_cast<float*>(dl.p), rows, V);
  }

 protected:
  void* raw_alloc(std::size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // clear it: the tracker reports the failure by name
      return nullptr;
    }
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && tot - fr > max_used_) max_used_ = tot - fr;
    return p;
  }
  void raw_free(void* p) override { cudaFree(p); }
  void zero(void* p, std::size_t bytes) override { check(cudaMemset(p, 0, bytes), "cudaMemset"); }

 private:
  Elem e_;
  cublasHandle_t h_ = nullptr;
  Buf ws_;
  std::uint64_t base_used_ = 0, max_used_ = 0;
};

}  // namespace

bool cuda_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::string cuda_status() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  if (n == 0) return "no CUDA device";
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  return p.name;
}

std::unique_ptr<Device> make_cuda_device(Elem elem) {
  if (elem != Elem::kF32 && elem != Elem::kBf16)
    throw std::invalid_argument("the CUDA executor runs fp32 or bf16");
  return std::make_unique<CudaDevice>(elem);
}

}  // namespace actmem::exec

// The CPU reference device: every kernel as the textbook formula, in loops over row-major arrays,
// accumulating in double so the fp64 run is a reference for finite differences and for the GPU.
#include "cpu_device.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "rng.hpp"

namespace actmem::exec {

namespace {

constexpr double kGeluC = 0.7978845608028654;  // sqrt(2/pi), tanh GELU (Hendrycks & Gimpel 2016)

double gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(kGeluC * (x + 0.044715 * x * x * x)));
}
double gelu_grad(double x) {
  const double u = kGeluC * (x + 0.044715 * x * x * x);
  const double t = std::tanh(u);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kGeluC * (1.0 + 3.0 * 0.044715 * x * x);
}
double silu(double x) {
  return x / (1.0 + std::exp(-x));
}
double silu_grad(double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return s * (1.0 + x * (1.0 - s));
}

template <class Real>
class CpuDevice final : public Device {
 public:
  const char* name() const override { return sizeof(Real) == 8 ? "cpu-fp64" : "cpu-fp32"; }

  void upload(Buf& dst, const std::vector<double>& h) override {
    for (std::size_t i = 0; i < dst.n && i < h.size(); ++i) f(dst)[i] = static_cast<Real>(h[i]);
  }
  std::vector<double> download(const Buf& src) override {
    std::vector<double> h(src.n);
    if (src.e == Elem::kU8)
      for (std::size_t i = 0; i < src.n; ++i) h[i] = static_cast<const std::uint8_t*>(src.p)[i];
    else
      for (std::size_t i = 0; i < src.n; ++i) h[i] = cf(src)[i];
    return h;
  }
  void upload_i32(Buf& dst, const std::vector<std::int32_t>& h) override {
    std::memcpy(dst.p, h.data(), sizeof(std::int32_t) * std::min(dst.n, h.size()));
  }

  void gemm(const Buf& A, bool ta, const Buf& B, bool tb, Buf& C, int m, int n, int k, double alpha,
            double beta) override {
    const Real* a = cf(A);
    const Real* b = cf(B);
    Real* c = f(C);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double acc = 0;
        for (int p = 0; p < k; ++p)
          acc += static_cast<double>(ta ? a[p * m + i] : a[i * k + p]) *
                 static_cast<double>(tb ? b[j * k + p] : b[p * n + j]);
        const double prev = beta == 0.0 ? 0.0 : beta * static_cast<double>(c[i * n + j]);
        c[i * n + j] = static_cast<Real>(alpha * acc + prev);
      }
  }
  void bias_add(Buf& y, const Buf& bias, int rows, int cols) override {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) f(y)[r * cols + c] += cf(bias)[c];
  }
  void bias_grad(const Buf& dy, Buf& db, int rows, int cols) override {
    for (int c = 0; c < cols; ++c) {
      double acc = 0;
      for (int r = 0; r < rows; ++r) acc += cf(dy)[r * cols + c];
      f(db)[c] = static_cast<Real>(f(db)[c] + acc);
    }
  }
  // Row statistics: LayerNorm centres and scales; RMSNorm (Zhang & Sennrich 2019) only scales.
  void stats(const Real* x, int cols, bool center, double eps, double* mean, double* rstd) const {
    double mu = 0;
    if (center) {
      for (int c = 0; c < cols; ++c) mu += x[c];
      mu /= cols;
    }
    double var = 0;
    for (int c = 0; c < cols; ++c) var += (x[c] - mu) * (x[c] - mu);
    *mean = mu;
    *rstd = 1.0 / std::sqrt(var / cols + eps);
  }
  void norm_fwd(const Buf& x, const Buf& gamma, const Buf* beta, Buf& y, int rows, int cols,
                double eps) override {
    for (int r = 0; r < rows; ++r) {
      const Real* xr = cf(x) + static_cast<std::size_t>(r) * cols;
      double mu, rs;
      stats(xr, cols, beta != nullptr, eps, &mu, &rs);
      for (int c = 0; c < cols; ++c)
        f(y)[static_cast<std::size_t>(r) * cols + c] =
            static_cast<Real>((xr[c] - mu) * rs * cf(gamma)[c] + (beta ? cf(*beta)[c] : 0.0));
    }
  }
  void norm_bwd(const Buf& x, const Buf& gamma, const Buf& dy, Buf& dx, Buf& dgamma, Buf* dbeta,
                int rows, int cols, double eps) override {
    const bool ln = dbeta != nullptr;
    std::vector<double> xhat(cols), g(cols);
    for (int r = 0; r < rows; ++r) {
      const std::size_t o = static_cast<std::size_t>(r) * cols;
      double mu, rs;
      stats(cf(x) + o, cols, ln, eps, &mu, &rs);
      double sum_g = 0, sum_gx = 0;
      for (int c = 0; c < cols; ++c) {
        xhat[c] = (cf(x)[o + c] - mu) * rs;
        g[c] = cf(dy)[o + c] * static_cast<double>(cf(gamma)[c]);
        sum_g += g[c];
        sum_gx += g[c] * xhat[c];
        f(dgamma)[c] = static_cast<Real>(f(dgamma)[c] + cf(dy)[o + c] * xhat[c]);
        if (ln) f(*dbeta)[c] = static_cast<Real>(f(*dbeta)[c] + cf(dy)[o + c]);
      }
      for (int c = 0; c < cols; ++c) {
        const double d = ln ? rs * (g[c] - sum_g / cols - xhat[c] * sum_gx / cols)
                            : rs * (g[c] - xhat[c] * sum_gx / cols);
        f(dx)[o + c] = static_cast<Real>(f(dx)[o + c] + d);
      }
    }
  }
  void dropout_mask(Buf& mask, double p, std::uint64_t seed, std::uint64_t stream) override {
    auto* m = static_cast<std::uint8_t*>(mask.p);
    for (std::size_t i = 0; i < mask.n; ++i) m[i] = dropout_keep(seed, stream, i, p) ? 1 : 0;
  }
  void dropout_apply(const Buf& x, const Buf& mask, Buf& y, double p) override {
    const auto* m = static_cast<const std::uint8_t*>(mask.p);
    const double s = 1.0 / (1.0 - p);
    for (std::size_t i = 0; i < y.n; ++i) f(y)[i] = static_cast<Real>(m[i] ? cf(x)[i] * s : 0.0);
  }
  // Index helpers: q (B, T, A, D), k/v (B, T, G, D), P (B, A, T, T).
  static std::size_t qi(int b, int t, int h, int d, int T, int H, int D) {
    return ((static_cast<std::size_t>(b) * T + t) * H + h) * D + d;
  }
  static std::size_t pi(int b, int h, int i, int j, int A, int T) {
    return ((static_cast<std::size_t>(b) * A + h) * T + i) * T + j;
  }
  // The scaled causal scores of query row (b, h, i) into row[0..i], their max and the sum of
  // exp(score - max): the softmax row both attention forwards start from.
  void causal_scores(const Buf& q, const Buf& k, int b, int h, int i, int T, int A, int G, int D,
                     double scale, std::vector<double>& row, double* mx, double* z) const {
    const int g = h / (A / G);
    *mx = -INFINITY;
    for (int j = 0; j <= i; ++j) {
      double s = 0;
      for (int d = 0; d < D; ++d)
        s += static_cast<double>(cf(q)[qi(b, i, h, d, T, A, D)]) * cf(k)[qi(b, j, g, d, T, G, D)];
      row[j] = s * scale;
      *mx = std::max(*mx, row[j]);
    }
    *z = 0;
    for (int j = 0; j <= i; ++j) *z += std::exp(row[j] - *mx);
  }
  // out(b, i, h, :) = sum over j <= i of M(b, h, i, j) X(b, j, h's group, :): P V and dS K.
  // (M is zero above the diagonal, so the causal bound changes no bit.)
  void causal_rows(const Buf& M, const Buf& X, Buf& out, int B, int T, int A, int G, int D) {
    const int grp = A / G;
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < A; ++h)
        for (int i = 0; i < T; ++i)
          for (int d = 0; d < D; ++d) {
            double acc = 0;
            for (int j = 0; j <= i; ++j)
              acc += static_cast<double>(cf(M)[pi(b, h, i, j, A, T)]) *
                     cf(X)[qi(b, j, h / grp, d, T, G, D)];
            f(out)[qi(b, i, h, d, T, A, D)] = static_cast<Real>(acc);
          }
  }
  // out(b, j, g, :) = sum over the heads h of group g and i >= j of M(b, h, i, j) Y(b, i, h, :):
  // P^T dO and dS^T Q.
  void causal_cols(const Buf& M, const Buf& Y, Buf& out, int B, int T, int A, int G, int D) {
    const int grp = A / G;
    for (int b = 0; b < B; ++b)
      for (int g = 0; g < G; ++g)
        for (int j = 0; j < T; ++j)
          for (int d = 0; d < D; ++d) {
            double acc = 0;
            for (int h = g * grp; h < (g + 1) * grp; ++h)
              for (int i = j; i < T; ++i)
                acc += static_cast<double>(cf(M)[pi(b, h, i, j, A, T)]) *
                       cf(Y)[qi(b, i, h, d, T, A, D)];
            f(out)[qi(b, j, g, d, T, G, D)] = static_cast<Real>(acc);
          }
  }
  void attn_probs(const Buf& q, const Buf& k, Buf& P, int B, int T, int A, int G, int D,
                  double scale) override {
    std::vector<double> row(T);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < A; ++h)
        for (int i = 0; i < T; ++i) {
          double mx = 0, z = 0;
          causal_scores(q, k, b, h, i, T, A, G, D, scale, row, &mx, &z);
          for (int j = 0; j < T; ++j)
            f(P)[pi(b, h, i, j, A, T)] =
                static_cast<Real>(j <= i ? std::exp(row[j] - mx) / z : 0.0);
        }
  }
  void attn_pv(const Buf& P, const Buf& v, Buf& ctx, int B, int T, int A, int G, int D) override {
    causal_rows(P, v, ctx, B, T, A, G, D);
  }
  void attn_dp_dv(const Buf& dctx, const Buf& P, const Buf& v, Buf& dP, Buf& dv, int B, int T,
                  int A, int G, int D) override {
    const int grp = A / G;
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < A; ++h)
        for (int i = 0; i < T; ++i)
          for (int j = 0; j < T; ++j) {
            double acc = 0;
            for (int d = 0; d < D; ++d)
              acc += static_cast<double>(cf(dctx)[qi(b, i, h, d, T, A, D)]) *
                     cf(v)[qi(b, j, h / grp, d, T, G, D)];
            f(dP)[pi(b, h, i, j, A, T)] = static_cast<Real>(acc);
          }
    causal_cols(P, dctx, dv, B, T, A, G, D);
  }
  void softmax_bwd(Buf& dP, const Buf& P, int rows, int cols, double scale) override {
    for (int r = 0; r < rows; ++r) {
      const std::size_t o = static_cast<std::size_t>(r) * cols;
      double dot = 0;
      for (int c = 0; c < cols; ++c) dot += static_cast<double>(cf(dP)[o + c]) * cf(P)[o + c];
      for (int c = 0; c < cols; ++c)
        f(dP)[o + c] = static_cast<Real>(scale * cf(P)[o + c] * (cf(dP)[o + c] - dot));
    }
  }
  void attn_dq(const Buf& dS, const Buf& k, Buf& dq, int B, int T, int A, int G, int D) override {
    causal_rows(dS, k, dq, B, T, A, G, D);
  }
  void attn_dk(const Buf& dS, const Buf& q, Buf& dk, int B, int T, int A, int G, int D) override {
    causal_cols(dS, q, dk, B, T, A, G, D);
  }
  // Flash-style: one query row at a time, scores in a row-sized scratch on the stack side of the
  // host (not device memory: a fused kernel keeps its tile in registers and shared memory).
  void flash_fwd(const Buf& q, const Buf& k, const Buf& v, Buf& ctx, Buf& lse, int B, int T, int A,
                 int G, int D, double scale, double p, std::uint64_t seed,
                 std::uint64_t stream) override {
    const int grp = A / G;
    std::vector<double> row(T);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < A; ++h)
        for (int i = 0; i < T; ++i) {
          double mx = 0, z = 0;
          causal_scores(q, k, b, h, i, T, A, G, D, scale, row, &mx, &z);
          const double l = mx + std::log(z);
          f(lse)[(static_cast<std::size_t>(b) * A + h) * T + i] = static_cast<Real>(l);
          for (int d = 0; d < D; ++d) {
            double acc = 0;
            for (int j = 0; j <= i; ++j)
              acc += keep(seed, stream, pi(b, h, i, j, A, T), p) * std::exp(row[j] - l) *
                     cf(v)[qi(b, j, h / grp, d, T, G, D)];
            f(ctx)[qi(b, i, h, d, T, A, D)] = static_cast<Real>(acc);
          }
        }
  }
  void flash_bwd(const Buf& q, const Buf& k, const Buf& v, const Buf& ctx, const Buf& dctx,
                 const Buf& lse, Buf& Drows, Buf& dq, Buf& dk, Buf& dv, int B, int T, int A, int G,
                 int D, double scale, double p, std::uint64_t seed, std::uint64_t stream) override {
    const int grp = A / G;
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < A; ++h)
        for (int i = 0; i < T; ++i) {
          double acc = 0;
          for (int d = 0; d < D; ++d)
            acc += static_cast<double>(cf(dctx)[qi(b, i, h, d, T, A, D)]) *
                   cf(ctx)[qi(b, i, h, d, T, A, D)];
          f(Drows)[(static_cast<std::size_t>(b) * A + h) * T + i] = static_cast<Real>(acc);
        }
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < A; ++h) {
        const int g = h / grp;
        for (int i = 0; i < T; ++i) {
          const std::size_t r = (static_cast<std::size_t>(b) * A + h) * T + i;
          for (int j = 0; j <= i; ++j) {
            double s = 0, dpd = 0;
            for (int d = 0; d < D; ++d) {
              s += static_cast<double>(cf(q)[qi(b, i, h, d, T, A, D)]) *
                   cf(k)[qi(b, j, g, d, T, G, D)];
              dpd += static_cast<double>(cf(dctx)[qi(b, i, h, d, T, A, D)]) *
                     cf(v)[qi(b, j, g, d, T, G, D)];
            }
            const double P = std::exp(s * scale - cf(lse)[r]);
            const double m = keep(seed, stream, pi(b, h, i, j, A, T), p);
            // dV += (P * m) dO; dS = P * (m * dP - D) (Dao 2023, Alg. 2 with dropout).
            for (int d = 0; d < D; ++d)
              f(dv)[qi(b, j, g, d, T, G, D)] +=
                  static_cast<Real>(P * m * static_cast<double>(cf(dctx)[qi(b, i, h, d, T, A, D)]));
            const double dS = P * (m * dpd - cf(Drows)[r]) * scale;
            for (int d = 0; d < D; ++d) {
              f(dq)[qi(b, i, h, d, T, A, D)] +=
                  static_cast<Real>(dS * static_cast<double>(cf(k)[qi(b, j, g, d, T, G, D)]));
              f(dk)[qi(b, j, g, d, T, G, D)] +=
                  static_cast<Real>(dS * static_cast<double>(cf(q)[qi(b, i, h, d, T, A, D)]));
            }
          }
        }
      }
  }
  // Rotary embedding (Su et al. 2021) with the rotate-half pairing Llama uses, base 10000.
  void rope(Buf& x, int B, int T, int H, int D, bool inverse) override {
    const int half = D / 2;
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t)
        for (int h = 0; h < H; ++h)
          for (int i = 0; i < half; ++i) {
            const double ang = t * std::pow(10000.0, -2.0 * i / D) * (inverse ? -1.0 : 1.0);
            const double c = std::cos(ang), s = std::sin(ang);
            Real* px = f(x) + qi(b, t, h, 0, T, H, D);
            const double x1 = px[i], x2 = px[i + half];
            px[i] = static_cast<Real>(x1 * c - x2 * s);
            px[i + half] = static_cast<Real>(x2 * c + x1 * s);
          }
  }
  void gelu_fwd(const Buf& x, Buf& y) override {
    for (std::size_t i = 0; i < y.n; ++i) f(y)[i] = static_cast<Real>(gelu(cf(x)[i]));
  }
  void gelu_bwd(Buf& dy, const Buf& x) override {
    for (std::size_t i = 0; i < dy.n; ++i)
      f(dy)[i] = static_cast<Real>(f(dy)[i] * gelu_grad(cf(x)[i]));
  }
  void glu_fwd(const Buf& x, Buf& y, int rows, int F, bool use_silu) override {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < F; ++c) {
        const double g = cf(x)[static_cast<std::size_t>(r) * 2 * F + c];
        const double u = cf(x)[static_cast<std::size_t>(r) * 2 * F + F + c];
        f(y)[static_cast<std::size_t>(r) * F + c] =
            static_cast<Real>((use_silu ? silu(g) : gelu(g)) * u);
      }
  }
  void glu_bwd(const Buf& dy, const Buf& x, Buf& dx, int rows, int F, bool use_silu) override {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < F; ++c) {
        const std::size_t o = static_cast<std::size_t>(r) * 2 * F;
        const double g = cf(x)[o + c], u = cf(x)[o + F + c];
        const double d = cf(dy)[static_cast<std::size_t>(r) * F + c];
        f(dx)[o + c] = static_cast<Real>(d * u * (use_silu ? silu_grad(g) : gelu_grad(g)));
        f(dx)[o + F + c] = static_cast<Real>(d * (use_silu ? silu(g) : gelu(g)));
      }
  }
  void add(Buf& y, const Buf& x) override {
    for (std::size_t i = 0; i < y.n; ++i) f(y)[i] += cf(x)[i];
  }
  void embed_fwd(const Buf& ids, const Buf& wte, const Buf* wpe, Buf& out, int BT, int T,
                 int C) override {
    const auto* id = static_cast<const std::int32_t*>(ids.p);
    for (int r = 0; r < BT; ++r)
      for (int c = 0; c < C; ++c)
        f(out)[static_cast<std::size_t>(r) * C + c] =
            static_cast<Real>(cf(wte)[static_cast<std::size_t>(id[r]) * C + c] +
                              (wpe ? cf(*wpe)[static_cast<std::size_t>(r % T) * C + c] : 0.0));
  }
  void embed_bwd(const Buf& ids, const Buf& dout, Buf& dwte, Buf* dwpe, int BT, int T,
                 int C) override {
    const auto* id = static_cast<const std::int32_t*>(ids.p);
    for (int r = 0; r < BT; ++r)
      for (int c = 0; c < C; ++c) {
        const Real g = cf(dout)[static_cast<std::size_t>(r) * C + c];
        f(dwte)[static_cast<std::size_t>(id[r]) * C + c] += g;
        if (dwpe) f(*dwpe)[static_cast<std::size_t>(r % T) * C + c] += g;
      }
  }
  double xent_fwd(const Buf& logits, const Buf& targets, Buf& probs, int rows, int V) override {
    const auto* tg = static_cast<const std::int32_t*>(targets.p);
    double loss = 0;
    for (int r = 0; r < rows; ++r) {
      const Real* l = cf(logits) + static_cast<std::size_t>(r) * V;
      double mx = -INFINITY, z = 0;
      for (int c = 0; c < V; ++c) mx = std::max(mx, static_cast<double>(l[c]));
      for (int c = 0; c < V; ++c) z += std::exp(l[c] - mx);
      for (int c = 0; c < V; ++c)
        f(probs)[static_cast<std::size_t>(r) * V + c] = static_cast<Real>(std::exp(l[c] - mx) / z);
      loss += -(l[tg[r]] - mx - std::log(z));
    }
    return loss / rows;
  }
  void xent_bwd(const Buf& probs, const Buf& targets, Buf& dl, int rows, int V) override {
    const auto* tg = static_cast<const std::int32_t*>(targets.p);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < V; ++c) {
        const std::size_t o = static_cast<std::size_t>(r) * V + c;
        f(dl)[o] = static_cast<Real>((cf(probs)[o] - (c == tg[r] ? 1.0 : 0.0)) / rows);
      }
  }

 protected:
  void* raw_alloc(std::size_t bytes) override { return std::malloc(bytes); }
  void raw_free(void* p) override { std::free(p); }
  void zero(void* p, std::size_t bytes) override { std::memset(p, 0, bytes); }

 private:
  static double keep(std::uint64_t seed, std::uint64_t stream, std::size_t i, double p) {
    return p > 0.0 ? (dropout_keep(seed, stream, i, p) ? 1.0 / (1.0 - p) : 0.0) : 1.0;
  }
  static Real* f(Buf& b) { return static_cast<Real*>(b.p); }
  static const Real* cf(const Buf& b) { return static_cast<const Real*>(b.p); }
};

}  // namespace

std::unique_ptr<Device> make_cpu_device(Elem elem) {
  if (elem == Elem::kF64) return std::make_unique<CpuDevice<double>>();
  if (elem == Elem::kF32) return std::make_unique<CpuDevice<float>>();
  throw std::invalid_argument("the CPU executor runs fp32 or fp64");
}

}  // namespace actmem::exec

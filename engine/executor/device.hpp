// The executor's view of a device: typed buffers, a tracking allocator that every allocation goes
// through, and the kernel set a transformer layer's forward and backward needs (CPU or CUDA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace actmem::exec {

// Element types the executors store. f64 exists only on the CPU (the reference run).
enum class Elem : std::uint8_t { kF32, kF64, kBf16, kU8, kI32 };

constexpr std::size_t elem_bytes(Elem e) {
  return e == Elem::kF64 ? 8 : e == Elem::kBf16 ? 2 : e == Elem::kU8 ? 1 : 4;
}
const char* elem_name(Elem e);

// A device buffer: where it is, how many elements of which type, and the name the tracker knows
// it by (the engine's record id for a saved activation, e.g. "attn.softmax_out").
struct Buf {
  void* p = nullptr;
  std::size_t n = 0;
  Elem e = Elem::kF32;
  std::string name;
  std::size_t bytes() const { return n * elem_bytes(e); }
};

// What the allocator counts separately: model memory (what the engine predicts) and the input
// batch (token ids and targets, which the Korthikanti accounting leaves out).
enum class Category : std::uint8_t { kModel, kBatch };

// Counts every allocation: live bytes, the peak and where it happened, and the bytes each name
// holds. The measurement is what the kernels really allocate: nothing here reads the engine.
class Tracker {
 public:
  void on_alloc(const Buf& b, Category c);
  void on_free(const Buf& b, Category c);
  void phase(const std::string& label) { phase_ = label; }  // where the executor is now
  std::uint64_t live() const { return live_; }
  std::uint64_t peak() const { return peak_; }
  const std::string& peak_at() const { return peak_at_; }
  std::uint64_t batch_peak() const { return batch_peak_; }
  std::uint64_t allocations() const { return count_; }
  void reset_peak() { peak_ = live_, peak_at_ = phase_; }

 private:
  std::uint64_t live_ = 0, peak_ = 0, batch_ = 0, batch_peak_ = 0, count_ = 0;
  std::string phase_, peak_at_;
};

// The kernels. Shapes are row-major; comments give them as (B, T, C) in llm.c's style with
// B micro-batch, T tokens, A query heads, G key/value heads, D head dim, C hidden, F FFN width,
// V vocabulary. Element types may mix where noted (the logits are fp32 whatever the activations).
class Device {
 public:
  virtual ~Device() = default;
  virtual const char* name() const = 0;

  // Allocation goes through the tracker; `alloc` zero-fills.
  Buf alloc(std::size_t n, Elem e, const std::string& name, Category c = Category::kModel);
  void free(Buf& b, Category c = Category::kModel);
  Tracker& tracker() { return tracker_; }
  void clear(Buf& b) { zero(b.p, b.bytes()); }
  // GPU math libraries' scratch (cuBLAS workspace), allocated through the tracker; none on CPU.
  virtual void attach_workspace(std::size_t /*bytes*/) {}
  virtual void release_workspace() {}
  // The device's own view of memory in use (cudaMemGetInfo's total - free, the highest after any
  // allocation of the measured step, less what was in use before the executor allocated anything);
  // 0 where there is no such view.
  virtual std::uint64_t used_bytes_outside() { return 0; }
  virtual void reset_outside_peak() {}  // with Tracker::reset_peak: measure one step alone

  virtual void upload(Buf& dst, const std::vector<double>& host) = 0;
  virtual std::vector<double> download(const Buf& src) = 0;
  virtual void upload_i32(Buf& dst, const std::vector<std::int32_t>& host) = 0;
  virtual void sync() {}

  // C(m, n) = alpha * op(A) op(B) + beta * C, op(A) (m, k), op(B) (k, n); ta/tb transpose.
  virtual void gemm(const Buf& A, bool ta, const Buf& B, bool tb, Buf& C, int m, int n, int k,
                    double alpha, double beta) = 0;
  virtual void bias_add(Buf& y, const Buf& bias, int rows, int cols) = 0;     // y(r, c) += bias(c)
  virtual void bias_grad(const Buf& dy, Buf& dbias, int rows, int cols) = 0;  // db += colsum(dy)
  // LayerNorm (beta non-null) or RMSNorm (beta null) over rows of x (R, C); no statistics kept.
  virtual void norm_fwd(const Buf& x, const Buf& gamma, const Buf* beta, Buf& y, int rows, int cols,
                        double eps) = 0;
  // dx += dnorm(x, dy) with the statistics recomputed from x; dgamma/dbeta accumulate.
  virtual void norm_bwd(const Buf& x, const Buf& gamma, const Buf& dy, Buf& dx, Buf& dgamma,
                        Buf* dbeta, int rows, int cols, double eps) = 0;
  // Dropout with a counter-based mask: keep(i) is a pure function of (seed, stream, i), so a
  // recompute or a fused kernel regenerates the same mask. mask(n) u8; y = x * mask / (1 - p).
  virtual void dropout_mask(Buf& mask, double p, std::uint64_t seed, std::uint64_t stream) = 0;
  virtual void dropout_apply(const Buf& x, const Buf& mask, Buf& y, double p) = 0;  // y may be x
  // Attention, eager. q (B, T, A, D), k/v (B, T, G, D), P/dP (B, A, T, T), ctx (B, T, A, D).
  virtual void attn_probs(const Buf& q, const Buf& k, Buf& P, int B, int T, int A, int G, int D,
                          double scale) = 0;  // causal softmax(q k^T * scale)
  virtual void attn_pv(const Buf& P, const Buf& v, Buf& ctx, int B, int T, int A, int G, int D) = 0;
  virtual void attn_dp_dv(const Buf& dctx, const Buf& P, const Buf& v, Buf& dP, Buf& dv, int B,
                          int T, int A, int G, int D) = 0;
  virtual void softmax_bwd(Buf& dP, const Buf& P, int rows, int cols,
                           double scale) = 0;  // in place
  virtual void attn_dq(const Buf& dS, const Buf& k, Buf& dq, int B, int T, int A, int G, int D) = 0;
  virtual void attn_dk(const Buf& dS, const Buf& q, Buf& dk, int B, int T, int A, int G, int D) = 0;
  // Flash-style attention: ctx and the row log-sum-exp lse (B, A, T) only; dropout (p > 0) is
  // regenerated from (seed, stream) in both passes. D_rows (B, A, T) = rowsum(dctx * ctx).
  // dq, dk, dv arrive zeroed (fresh allocations) and leave holding the gradients.
  virtual void flash_fwd(const Buf& q, const Buf& k, const Buf& v, Buf& ctx, Buf& lse, int B, int T,
                         int A, int G, int D, double scale, double p, std::uint64_t seed,
                         std::uint64_t stream) = 0;
  virtual void flash_bwd(const Buf& q, const Buf& k, const Buf& v, const Buf& ctx, const Buf& dctx,
                         const Buf& lse, Buf& D_rows, Buf& dq, Buf& dk, Buf& dv, int B, int T,
                         int A, int G, int D, double scale, double p, std::uint64_t seed,
                         std::uint64_t stream) = 0;
  // RoPE on x (B, T, H, D) in place, rotating pairs (i, i + D/2); inverse = rotate back.
  virtual void rope(Buf& x, int B, int T, int H, int D, bool inverse) = 0;
  virtual void gelu_fwd(const Buf& x, Buf& y) = 0;   // tanh approximation
  virtual void gelu_bwd(Buf& dy, const Buf& x) = 0;  // in place: dy <- dy * gelu'(x)
  // GLU over x (R, 2F) = [gate | up]: y (R, F) = act(gate) * up; act silu or gelu.
  virtual void glu_fwd(const Buf& x, Buf& y, int rows, int F, bool silu) = 0;
  virtual void glu_bwd(const Buf& dy, const Buf& x, Buf& dx, int rows, int F, bool silu) = 0;
  virtual void add(Buf& y, const Buf& x) = 0;  // y += x
  // out (B*T, C) = wte[ids] (+ wpe[t]); backward scatters in token order (deterministic).
  virtual void embed_fwd(const Buf& ids, const Buf& wte, const Buf* wpe, Buf& out, int BT, int T,
                         int C) = 0;
  virtual void embed_bwd(const Buf& ids, const Buf& dout, Buf& dwte, Buf* dwpe, int BT, int T,
                         int C) = 0;
  // Cross-entropy over logits (R, V) fp32: probs <- softmax, returns the mean loss.
  virtual double xent_fwd(const Buf& logits, const Buf& targets, Buf& probs, int rows, int V) = 0;
  // dlogits = (probs - onehot) / rows.
  virtual void xent_bwd(const Buf& probs, const Buf& targets, Buf& dlogits, int rows, int V) = 0;

 protected:
  virtual void* raw_alloc(std::size_t bytes) = 0;
  virtual void raw_free(void* p) = 0;
  virtual void zero(void* p, std::size_t bytes) = 0;

 private:
  Tracker tracker_;
};

}  // namespace actmem::exec

// The executor: a stack of real transformer layers run forward and backward on a Device, keeping
// for backward exactly what the engine's recompute policy says a layer keeps, and nothing else.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "actmem/report/estimate.hpp"
#include "device.hpp"

namespace actmem::exec {

struct Param {
  std::string name;
  Buf w, g;
};

struct StepResult {
  double loss = 0;
  // Bytes each record of layer 0 held when its first forward finished (before the policy freed
  // what it does not keep), and the ids it kept (the checkpoint as ln1.in, the buffer it is).
  std::map<std::string, std::uint64_t> layer0_records;
  std::vector<std::string> layer0_kept;
};

class Runner {
 public:
  // `e` is the engine's estimate of this very configuration (single device: tp = pp = cp = 1).
  Runner(Device& dev, const Estimate& e, Elem act, std::uint64_t seed);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // One micro-batch: forward, loss, and (with `backward`) the backward with recompute. Gradients
  // are zeroed first and left in the parameters' gradient buffers.
  StepResult step(bool backward = true);
  std::vector<Param>& params() { return params_; }
  std::vector<std::vector<double>> gradients();  // per parameter, on the host

 private:
  struct Layer {
    std::size_t ln1_g, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo, ln2_g, ln2_b, w1, b1, w2, b2;
  };
  std::size_t add_param(const std::string& name, std::size_t n, double scale, double offset);
  Buf& rec(int l, const char* id, std::size_t n, Elem e);
  const Buf& has(int l, const char* id);
  Buf layer_forward(int l, bool need_output, const std::string& out_name);
  void regen_core(int l);
  void layer_backward(int l, Buf& dY);
  void free_layer(int l, const std::vector<std::string>* keep);
  Buf& W(std::size_t i) { return params_[i].w; }
  Buf& G(std::size_t i) { return params_[i].g; }
  bool present(std::size_t i) const { return i != kNone; }
  std::uint64_t stream(int l, int site) const { return static_cast<std::uint64_t>(l) * 8 + site; }

  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  Device& dev_;
  const Estimate& e_;
  Elem act_, stat_;
  std::uint64_t seed_;
  int B, T, C, A, G_, D, F, V, L;
  bool glu_, silu_, ln_, rope_, flash_;
  double p_attn_, p_hid_, eps_ = 1e-5;
  std::vector<Param> params_;
  std::vector<Layer> layers_;
  std::size_t wte_ = kNone, wpe_ = kNone, lnf_g_ = kNone, lnf_b_ = kNone, lm_ = kNone;
  std::vector<std::map<std::string, Buf>> recs_;
  Buf ids_, targets_;
};

}  // namespace actmem::exec

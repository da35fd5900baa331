// actmem-validate's checks: run the executor under the engine's policy, measure, compare.
#include "checks.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "../cli/args.hpp"
#include "actmem/json_io.hpp"
#include "cpu_device.hpp"
#include "rng.hpp"
#include "runner.hpp"

namespace actmem::exec {

using nlohmann::json;

namespace {

Error bad(const std::string& field, const std::string& msg) {
  return Error{"invalid_value", field, field + ": " + msg};
}

// The largest |gradient| of the whole model.
double global_max(const std::vector<std::vector<double>>& g) {
  double m = 0;
  for (const auto& t : g)
    for (double x : t) m = std::max(m, std::abs(x));
  return m;
}

// Error floor: 1e-3 of the model's largest gradient. A tensor whose gradient is zero by symmetry
// (the key bias: adding q.b_k to a whole score row leaves the softmax unchanged) would otherwise
// divide rounding noise by ~1e-18.
double floor_of(const std::vector<std::vector<double>>& ref) {
  return 1e-3 * global_max(ref);
}

// max over parameter tensors of max|a - ref| / max(max|ref|, floor).
double normwise(const std::vector<std::vector<double>>& a,
                const std::vector<std::vector<double>>& b) {
  const double fl = floor_of(b);
  double worst = 0;
  for (std::size_t p = 0; p < a.size(); ++p) {
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < a[p].size(); ++i)
      diff = std::max(diff, std::abs(a[p][i] - b[p][i])), ref = std::max(ref, std::abs(b[p][i]));
    if (std::max(ref, fl) > 0) worst = std::max(worst, diff / std::max(ref, fl));
  }
  return worst;
}

double max_abs_diff(const std::vector<std::vector<double>>& a,
                    const std::vector<std::vector<double>>& b) {
  double worst = 0;
  for (std::size_t p = 0; p < a.size(); ++p)
    for (std::size_t i = 0; i < a[p].size(); ++i)
      worst = std::max(worst, std::abs(a[p][i] - b[p][i]));
  return worst;
}

Result<Estimate> engine_estimate(const ModelSpec& m, const TrainConfig& c) {
  return estimate(m, c, nullptr, false);
}

// Multiply-adds of one forward of the executor's model, the measure of its work: per token and
// layer the q/k/v and output projections h·d·(2a + 2kv), the MLP (2, or 3 for a GLU)·h·f, the
// scores and their product with v 2·a·d·s; and the logits h·V per token. (The first measure,
// b·s·L·(h·(h+f) + a·d·s), left out the output layer and undercounted GLU MLPs 3x: the hostile
// run's round 3 found configurations inside it running 4-5 minutes.)
double step_work(const ModelSpec& m, const TrainConfig& c) {
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  const LayerKind& k = m.kinds[0];
  const double glu = is_gated(k.ffn) ? 3.0 : 2.0;
  const double per_token_layer =
      d(m.hidden) * d(k.head_dim) * (2.0 * d(k.heads) + 2.0 * d(k.kv_heads)) +
      glu * d(m.hidden) * d(k.ffn_hidden) + 2.0 * d(k.heads) * d(k.head_dim) * d(c.seq);
  return d(c.micro_batch) * d(c.seq) * (d(m.layers) * per_token_layer + d(m.hidden) * d(m.vocab));
}

}  // namespace

std::optional<Error> check_problem_size(const ModelSpec& m, const TrainConfig& c,
                                        const Options& o) {
  const bool cpu = o.executor == "cpu";
  const double work = step_work(m, c), limit = cpu ? kMaxValidatorWorkCpu : kMaxValidatorWorkCuda;
  char buf[160];
  if (work > limit) {
    std::snprintf(buf, sizeof buf,
                  "config.seq: one forward is %.4g multiply-adds, more than the %s "
                  "executor's %.0e; reduce seq, micro_batch or the layers",
                  work, o.executor.c_str(), limit);
    return Error{"too_large", "config.seq", buf};
  }
  if (cpu) {
    auto e = engine_estimate(m, c);
    if (!e.ok()) return e.error();
    const Bytes peak = e.value().worst().peak_bytes;
    if (peak > kMaxValidatorBytesCpu)
      return Error{"too_large", "config.seq",
                   "config.seq: the predicted peak, " + std::to_string(peak) +
                       " bytes, is more than the CPU executor's " +
                       std::to_string(kMaxValidatorBytesCpu) + "; reduce seq or micro_batch"};
  }
  return std::nullopt;
}

std::uint64_t fd_probe_limit(const ModelSpec& m, const TrainConfig& c) {
  const double per_probe = 4.0 * step_work(m, c);
  const double most = per_probe > 0 ? std::floor(kMaxFdWork / per_probe) : 0.0;
  return most >= static_cast<double>(kMaxFdProbes) ? kMaxFdProbes
                                                   : static_cast<std::uint64_t>(most);
}

FdProbe fd_probe(double fd_h, double fd_2h, double g, double rounding) {
  const double truncation = std::abs(fd_2h - fd_h) / 3.0;  // Richardson: fd(2h) - fd(h) = 3ch^2
  return FdProbe{std::abs(fd_h - g), kFdSafety * (rounding + truncation)};
}

double fd_rounding(const ModelSpec& m, const TrainConfig& c, double loss) {
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  const double n =
      d(m.layers) * (d(m.hidden) + d(m.kinds[0].ffn_hidden) + d(c.seq)) + d(m.vocab) + d(m.hidden);
  const double u = std::ldexp(1.0, -53);
  const double gamma = n * u / (1.0 - n * u);  // Higham's gamma_n
  return gamma * std::max(std::abs(loss), 1.0) / kFdStep;
}

bool Report::passed() const {
  return std::abs(peak_error_pct) <= peak_tolerance_pct && tensors_match && gradients_match &&
         (!has_reference || max_rel_error <= rel_error_bound) &&
         (fd_probes == 0 || (fd_worst_ratio <= 1.0 && fd_bound <= kFdMaxBound));
}

Result<std::pair<ModelSpec, TrainConfig>> executor_config(const json& req,
                                                          const std::string& executor) {
  if (executor != "cpu" && executor != "cuda")
    return bad("executor", cli::shown(executor) + " is not an executor; allowed: cpu, cuda");
  std::vector<std::string> warnings;
  Result<ModelSpec> m = Error{"missing_key", "preset", "preset: give --preset or --model"};
  if (req.contains("preset"))
    m = model_preset(req["preset"].get<std::string>(), &warnings);
  else if (req.contains("model"))
    m = model_from_json(req["model"], "custom", &warnings);
  if (!m.ok()) return m.error();
  json cfg = req.contains("config") ? req["config"] : json::object();
  // A GPU or a budget would be read and never used: the executor measures its own device.
  for (const char* k : {"gpu", "gpu_memory", "gpu_memory_bytes", "grad_bucket_bytes"})
    if (cfg.contains(k))
      return bad(std::string("config.") + k,
                 "not read by actmem-validate (the executor runs on its own device, one rank); "
                 "give it to actmem estimate");
  // What the executor is; a user value that disagrees is named, not silently replaced.
  const std::string act = executor == "cpu" ? "fp32" : "bf16";
  const json fixed = {
      {"profile", "megatron"},   {"optimizer", "sgd"},
      {"master_weights", false}, {"fragmentation_pct", 0},
      {"micro_batches", 1},      {"cublas_workspace_bytes", executor == "cpu" ? 0 : (32 << 20)}};
  for (auto it = fixed.begin(); it != fixed.end(); ++it) {
    if (cfg.contains(it.key()) && cfg[it.key()] != it.value())
      return bad("config." + it.key(), "the " + executor + " executor runs with " + it.key() +
                                           " = " + it.value().dump() +
                                           "; allowed: " + it.value().dump());
    cfg[it.key()] = it.value();
  }
  if (!cfg.contains("dtype")) cfg["dtype"] = act;
  const std::string dt = cfg["dtype"].is_string() ? cfg["dtype"].get<std::string>() : "";
  const bool dt_ok = executor == "cpu" ? dt == "fp32" : (dt == "fp32" || dt == "bf16");
  if (!dt_ok)
    return bad("config.dtype",
               cli::shown(dt) + " is not run by the " + executor +
                   " executor; allowed: " + (executor == "cpu" ? "fp32" : "fp32, bf16"));
  for (const char* k : {"param_dtype", "grad_dtype"}) {
    if (cfg.contains(k) && cfg[k] != cfg["dtype"])
      return bad(std::string("config.") + k,
                 "the executor keeps parameters and gradients in the "
                 "activation dtype; allowed: " +
                     dt);
    cfg[k] = cfg["dtype"];
  }
  Result<TrainConfig> c = config_from_json(cfg, TrainConfig{});
  if (!c.ok()) return c.error();
  const TrainConfig& t = c.value();
  const ModelSpec& mv = m.value();
  struct One {
    const char* field;
    std::uint64_t v;
  };
  for (const One& o :
       {One{"config.tp", t.par.tp}, One{"config.pp", t.par.pp}, One{"config.vpp", t.par.vpp},
        One{"config.cp", t.par.cp}, One{"config.dp", t.par.dp}, One{"config.ep", t.par.ep}})
    if (o.v != 1) return bad(o.field, "the executor runs one device; allowed: 1");
  if (mv.kinds.size() > 1)
    return bad("model.layer_stack", "the executor runs a stack of one layer kind; this model has " +
                                        std::to_string(mv.kinds.size()));
  if (mv.kinds[0].is_moe())
    return bad("model.num_local_experts", "the executor runs dense layers; allowed: 0");
  // Its program is an attention block and a GELU or GLU MLP (runner.cpp).
  if (!mv.kinds[0].has_attention() || !mv.kinds[0].has_ffn)
    return bad("model.model_type",
               "the executor runs layers of attention and an MLP; this model's layers are " +
                   std::string(mixer_name(mv.kinds[0].mixer)) +
                   (mv.kinds[0].has_ffn ? " with an MLP" : " without an MLP"));
  if (mv.kinds[0].ffn == FfnType::kRelu2)
    return bad("model.ffn_type", "the executor has no squared ReLU; allowed: gelu, swiglu, geglu");
  if (t.attention == Attention::kSdpaMath || t.attention == Attention::kSdpaCudnn)
    return bad("config.attention", std::string("'") + attention_name(t.attention) +
                                       "' is PyTorch's; allowed: eager, flash");
  if (t.recompute.offload)
    return bad("config.offload", "the executor keeps activations on the device; allowed: false");
  if (t.recompute.kind == RecomputeKind::kCustom ||
      (t.recompute.kind == RecomputeKind::kPattern &&
       t.recompute.pattern.find('X') != std::string::npos))
    return bad("config.recompute",
               "custom keep sets are not executed; allowed: none, selective, "
               "full, every:K, layers:PATTERN of K S C R");
  if (auto err = check_pattern_fits(mv, t)) return *err;
  if (mv.kinds[0].qk_norm)
    return bad("model.qk_norm", "the executor has no per-head q/k norm; allowed: false");
  // Gemma's layer parts are not in the executor's program: it would run another model.
  if (mv.sandwich_norm)
    return bad("model.sandwich_norm",
               "the executor has no post-attention or post-MLP norm; "
               "allowed: false");
  for (const LayerKind& k : mv.kinds)
    if (k.attn_sinks)
      return bad("model.attn_sinks", "the executor's softmax has no sink logits; allowed: false");
  if (mv.kinds[0].is_mla())
    return bad("model.kv_lora_rank", "the executor has no latent attention; allowed: 0");
  if (mv.block != BlockLayout::kSequential)
    return bad("model.block_layout", std::string("the executor runs sequential blocks; '") +
                                         block_name(mv.block) + "' is not allowed");
  if (mv.gemma_norm)
    return bad("model.gemma_norm", "the executor's RMSNorm is the standard one; allowed: false");
  if (mv.attn_softcap > 0 || mv.final_softcap > 0)
    return bad(
        mv.attn_softcap > 0 ? "model.attn_logit_softcapping" : "model.final_logit_softcapping",
        "the executor does not soft-cap; allowed: null");
  if (mv.pos == PosEncoding::kRope && mv.kinds[0].head_dim % 2 != 0)
    return bad("model.head_dim", "RoPE rotates pairs; allowed: an even head_dim");
  return std::make_pair(mv, t);
}

Result<Report> run_checks(const ModelSpec& m, const TrainConfig& c, const Options& o,
                          const DeviceFactory& device) {
  Report r;
  r.executor = o.executor;
  r.peak_tolerance_pct = o.executor == "cpu" ? 0.0 : 2.0;
  const Elem act = c.act_dtype == DType::kFp32 ? Elem::kF32 : Elem::kBf16;
  r.dtype = elem_name(act);
  r.policy = recompute_name(c.recompute);
  auto est = engine_estimate(m, c);
  if (!est.ok()) return est.error();
  const Estimate& e = est.value();
  r.predicted_peak_bytes = e.worst().peak_bytes;
  r.predicted_peak_at = e.worst().peak_at;
  r.predicted_overhead_pct = e.recompute_overhead_pct;
  TrainConfig none = c;
  none.recompute = Recompute{};
  auto est_none = engine_estimate(m, none);
  if (!est_none.ok()) return est_none.error();

  using clock = std::chrono::steady_clock;
  auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  std::vector<std::vector<double>> g_policy, g_none;
  {
    auto dev = device(act);
    r.device = dev->name();
    dev->attach_workspace(c.cublas_workspace);
    Runner run(*dev, e, act, o.seed);
    run.step();  // warm-up (CUDA context, cuBLAS heuristics); the measured step follows
    dev->tracker().reset_peak();
    dev->reset_outside_peak();
    const auto t0 = clock::now();
    StepResult s = run.step();
    dev->sync();
    r.step_ms = ms(t0, clock::now());
    r.loss = s.loss;
    r.measured_peak_bytes = dev->tracker().peak();
    r.measured_peak_at = dev->tracker().peak_at();
    r.batch_bytes = dev->tracker().batch_peak();
    r.device_used_bytes = dev->used_bytes_outside();
    g_policy = run.gradients();
    // Per tensor: every record of layer 0 against the engine's inventory, both ways.
    r.tensors_match = true;
    const std::vector<TensorRecord>& inv = e.kinds[0].inventory.tensors;
    for (const TensorRecord& t : inv) {
      const std::string id(t.id);
      TensorCheck tc{id, t.bytes, 0, false};
      auto it = s.layer0_records.find(id);
      if (it != s.layer0_records.end()) tc.measured = it->second;
      tc.kept = std::find(s.layer0_kept.begin(), s.layer0_kept.end(), t.id) != s.layer0_kept.end();
      r.tensors_match = r.tensors_match && tc.measured == tc.predicted;
      r.tensors.push_back(tc);
    }
    for (const auto& rec : s.layer0_records) {
      const std::string& id = rec.first;
      const bool known =
          std::any_of(inv.begin(), inv.end(), [&](const TensorRecord& t) { return t.id == id; });
      if (!known)
        r.tensors.push_back(TensorCheck{id, 0, rec.second, false}), r.tensors_match = false;
    }
    dev->release_workspace();
  }
  {
    auto dev = device(act);
    dev->attach_workspace(c.cublas_workspace);
    Runner run(*dev, est_none.value(), act, o.seed);
    run.step();
    const auto t0 = clock::now();
    run.step();
    dev->sync();
    r.baseline_step_ms = ms(t0, clock::now());
    g_none = run.gradients();
    dev->release_workspace();
  }
  r.max_grad_diff = max_abs_diff(g_policy, g_none);
  r.gradients_match = r.max_grad_diff == 0.0;
  r.measured_overhead_pct =
      r.baseline_step_ms > 0 ? 100.0 * (r.step_ms - r.baseline_step_ms) / r.baseline_step_ms : 0;
  r.peak_error_pct = r.predicted_peak_bytes ? 100.0 *
                                                  (static_cast<double>(r.measured_peak_bytes) -
                                                   static_cast<double>(r.predicted_peak_bytes)) /
                                                  static_cast<double>(r.predicted_peak_bytes)
                                            : 0;

  // The fp64 CPU reference: small configs only (its kernels are plain loops).
  const double work = step_work(m, c);
  r.has_reference = o.reference == 1 || (o.reference == -1 && work <= kMaxValidatorWorkCpu);
  if (r.has_reference) {
    auto ref = make_cpu_reference();
    Runner run(*ref, est_none.value(), Elem::kF64, o.seed);
    run.step();
    r.max_rel_error = normwise(g_policy, run.gradients());
    r.rel_error_bound = act == Elem::kF32 ? kBoundFp32 : kBoundBf16;
    // Finite differences on the fp64 run under the policy itself: the kept set suffices.
    if (o.fd_probes > 0) {
      auto fdev = make_cpu_reference();
      Runner fr(*fdev, e, Elem::kF64, o.seed);
      fr.step();
      const auto g = fr.gradients();
      auto& ps = fr.params();
      const double gnorm = std::max(global_max(g), 1e-300);
      const double rounding = fd_rounding(m, c, fr.step(false).loss);
      auto loss_at = [&](std::size_t p, std::size_t k, double w) {
        std::vector<double> v = fdev->download(ps[p].w);
        const double w0 = v[k];
        v[k] = w;
        fdev->upload(ps[p].w, v);
        const double l = fr.step(false).loss;
        v[k] = w0;
        fdev->upload(ps[p].w, v);
        return l;
      };
      for (int i = 0; i < o.fd_probes; ++i) {
        const std::size_t p = static_cast<std::size_t>(i) % ps.size();
        const std::size_t k = static_cast<std::size_t>(mix64(o.seed * 7919 + i) % ps[p].w.n);
        const double w0 = fdev->download(ps[p].w)[k], h = kFdStep;
        const double fd1 = (loss_at(p, k, w0 + h) - loss_at(p, k, w0 - h)) / (2 * h);
        const double fd2 = (loss_at(p, k, w0 + 2 * h) - loss_at(p, k, w0 - 2 * h)) / (4 * h);
        const FdProbe probe = fd_probe(fd1, fd2, g[p][k], rounding);
        const double allowed = probe.allowed, err = probe.error;
        r.fd_max_rel_error = std::max(r.fd_max_rel_error, err / gnorm);
        r.fd_bound = std::max(r.fd_bound, allowed / gnorm);
        const double ratio = allowed > 0 ? err / allowed : (err > 0 ? HUGE_VAL : 0.0);
        if (ratio >= r.fd_worst_ratio || r.fd_worst_probe.empty()) {
          r.fd_worst_ratio = ratio;
          r.fd_worst_probe = ps[p].name + "[" + std::to_string(k) + "]";
        }
      }
      r.fd_probes = o.fd_probes;
    }
  }
  return r;
}

json report_to_json(const Report& r) {
  json t = json::array();
  for (const TensorCheck& c : r.tensors)
    t.push_back({{"id", c.id},
                 {"predicted_bytes", c.predicted},
                 {"measured_bytes", c.measured},
                 {"kept", c.kept}});
  json j = {{"ok", true},
            {"executor", r.executor},
            {"device", r.device},
            {"dtype", r.dtype},
            {"policy", r.policy},
            {"predicted_peak_bytes", r.predicted_peak_bytes},
            {"predicted_peak_at", r.predicted_peak_at},
            {"measured_peak_bytes", r.measured_peak_bytes},
            {"measured_peak_at", r.measured_peak_at},
            {"peak_error_pct", r.peak_error_pct},
            {"peak_tolerance_pct", r.peak_tolerance_pct},
            {"device_used_bytes", r.device_used_bytes},
            {"batch_bytes", r.batch_bytes},
            {"tensors", t},
            {"tensors_match", r.tensors_match},
            {"gradients_match", r.gradients_match},
            {"max_grad_diff", r.max_grad_diff},
            {"loss", r.loss},
            {"step_ms", r.step_ms},
            {"baseline_step_ms", r.baseline_step_ms},
            {"predicted_recompute_overhead_pct", r.predicted_overhead_pct},
            {"measured_recompute_overhead_pct", r.measured_overhead_pct},
            {"passed", r.passed()}};
  if (r.has_reference) {
    j["max_rel_error"] = r.max_rel_error;
    j["rel_error_bound"] = r.rel_error_bound;
    j["fd_probes"] = r.fd_probes;
    j["fd_max_rel_error"] = r.fd_max_rel_error;
    j["fd_bound"] = r.fd_bound;
    j["fd_worst_ratio"] = r.fd_worst_ratio;
    j["fd_worst_probe"] = r.fd_worst_probe;
  } else {
    j["max_rel_error"] = nullptr;  // no reference run at this size
  }
  return j;
}

std::string report_table(const Report& r) {
  char buf[512];
  std::string s;
  std::snprintf(buf, sizeof buf, "executor      %s (%s, %s), policy %s\n", r.executor.c_str(),
                r.device.c_str(), r.dtype.c_str(), r.policy.c_str());
  s += buf;
  std::snprintf(buf, sizeof buf, "peak          predicted %llu B at %s\n",
                static_cast<unsigned long long>(r.predicted_peak_bytes),
                r.predicted_peak_at.c_str());
  s += buf;
  std::snprintf(buf, sizeof buf, "              measured  %llu B at %s  (%+.4f%%)\n",
                static_cast<unsigned long long>(r.measured_peak_bytes), r.measured_peak_at.c_str(),
                r.peak_error_pct);
  s += buf;
  std::snprintf(buf, sizeof buf, "batch         %llu B of token ids and targets (not modelled)\n",
                static_cast<unsigned long long>(r.batch_bytes));
  s += buf;
  s += "layer 0 tensors (predicted / measured bytes, kept under the policy):\n";
  for (const TensorCheck& c : r.tensors) {
    std::snprintf(buf, sizeof buf, "  %-24s %12llu %12llu  %s%s\n", c.id.c_str(),
                  static_cast<unsigned long long>(c.predicted),
                  static_cast<unsigned long long>(c.measured), c.kept ? "kept" : "dropped",
                  c.predicted == c.measured ? "" : "  MISMATCH");
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "gradients     policy vs no recompute: %s (max |diff| %.3g)\n",
                r.gradients_match ? "identical" : "DIFFER", r.max_grad_diff);
  s += buf;
  if (r.has_reference) {
    std::snprintf(buf, sizeof buf,
                  "              vs fp64 reference: max rel error %.3g (bound %.0e)\n",
                  r.max_rel_error, r.rel_error_bound);
    s += buf;
  }
  if (r.fd_probes > 0) {
    std::snprintf(buf, sizeof buf,
                  "              fp64 vs finite differences (%d probes): %.3g of the largest "
                  "gradient (bound %.3g); worst probe %s at %.2g of its bound%s\n",
                  r.fd_probes, r.fd_max_rel_error, r.fd_bound, r.fd_worst_probe.c_str(),
                  r.fd_worst_ratio,
                  r.fd_bound > kFdMaxBound ? " (bound too loose to vouch: over 1e-3)" : "");
    s += buf;
  }
  std::snprintf(buf, sizeof buf,
                "step          %.1f ms (no recompute %.1f ms): overhead %+.1f%%, engine predicts "
                "%+.1f%% FLOPs\n",
                r.step_ms, r.baseline_step_ms, r.measured_overhead_pct, r.predicted_overhead_pct);
  s += buf;
  s += r.passed() ? "result        PASS\n" : "result        FAIL\n";
  return s;
}

}  // namespace actmem::exec

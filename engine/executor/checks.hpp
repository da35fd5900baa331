// What actmem-validate checks: the engine's prediction against the executor's measurement, the
// recompute policy's gradients against the no-recompute run's, and the gradients against a
// reference (fp64 on the CPU) and against finite differences.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/report/estimate.hpp"
#include "device.hpp"

namespace actmem::exec {

using DeviceFactory = std::function<std::unique_ptr<Device>(Elem)>;

// Bounds on what the executor runs (docs/reliability.md, "Bounds").
// CPU, in forward multiply-adds (checks.cpp, step_work): the campaign's largest configuration
// (Llama, 8 layers, h = 256, f = 768, s = 128, b = 2: 1.76e9) ran its whole check, fp64 reference
// included, in 37 s; 2e9 admits it and refuses the hostile run's 4.6-minute one (h = 256,
// f = 2048, b = 4, s = 192: 2.98e9). The executor's plain loops run 2.4e8-5e8 multiply-adds a
// second depending on the shapes, so a run at the bound takes one to two minutes. Memory:
// the runs and the fp64 reference held 3.1x (that config: 96 MB predicted, 293 MB resident) to
// 4.6x (a vocabulary-dominated one: 116 MB, 539 MB) the predicted peak, so 100 MiB predicted keeps
// a run near 500 MB; the gpt2 preset at s = 16 (1.1 GB predicted, 7.0 GB resident, 247 s) is
// refused.
constexpr double kMaxValidatorWorkCpu = 2e9;
constexpr double kMaxValidatorWorkCuda = 1e14;
constexpr std::uint64_t kMaxValidatorBytesCpu = std::uint64_t{100} << 20;
constexpr std::uint64_t kMaxFdProbes = 4096;
// Finite differences: each probe runs four fp64 forwards on the CPU, so their total work is
// bounded: 4 x probes x forward work <= 1.5e10 (a vocabulary-heavy model at 2.5e10 took 62 s).
// The default 24 probes fit up to 1.56e8 per forward; beyond that the default shrinks (the
// campaign's largest configuration gets 2).
constexpr double kMaxFdWork = 1.5e10;

// The most finite-difference probes kMaxFdWork allows at this problem size (at most
// kMaxFdProbes).
std::uint64_t fd_probe_limit(const ModelSpec& m, const TrainConfig& c);

struct Options {
  std::string executor = "cpu";  // cpu | cuda
  std::uint64_t seed = 1;
  int fd_probes = 24;  // finite-difference probes (CPU fp64); 0 turns them off
  int reference = -1;  // -1: auto (small configs only), 0: off, 1: on
};

// Relative error bounds, normwise per parameter tensor: max|g - g_ref| / max|g_ref|.
// fp32: each stored intermediate rounds by <= 2^-24 (6e-8); a layer stores ~30 of them and the
// backward sums many products, so 1e-4 leaves three orders of magnitude for cancellation.
// bf16: 2^-8 (3.9e-3) per rounding with fp32 accumulation; 5e-2 is ~13 roundings' worth.
constexpr double kBoundFp32 = 1e-4;
constexpr double kBoundBf16 = 5e-2;

// Finite differences on the fp64 executor (central, step h = 1e-5), one bound per probe from an
// error analysis of what is computed (Higham, Accuracy and Stability of Numerical Algorithms,
// 2nd ed., sections 1.14 and 3.1):
//  - rounding: the loss is a chain of sums and products at most n = layers*(h + f + s) + V + h
//    terms deep (every matmul's inner dimension, the scores' s, the logits' V), so it carries a
//    relative error of at most gamma_n = n*u / (1 - n*u), u = 2^-53; the two evaluations' errors
//    do not cancel, so the difference quotient carries R = gamma_n*|L| / h;
//  - truncation: (h^2 / 6)*|L'''|, estimated a posteriori per probe by Richardson's comparison with
//    the step 2h: T = |fd(2h) - fd(h)| / 3 (which also absorbs part of the rounding noise).
// A probe passes when |fd - g| <= kFdSafety*(R + T). The report gives the error normwise, relative
// to the largest gradient of the model. A bound above kFdMaxBound of that norm cannot vouch for a
// gradient (the config is too large or too ill-conditioned for fp64 differences) and fails too.
constexpr double kFdStep = 1e-5;
constexpr double kFdSafety = 4.0;
constexpr double kFdMaxBound = 1e-3;

// One probe: the difference quotients at steps h and 2h, the backward's gradient g and the
// rounding term R. Returns |fd(h) - g| and its bound kFdSafety*(R + |fd(2h) - fd(h)|/3).
struct FdProbe {
  double error = 0, allowed = 0;
  bool passed() const { return error <= allowed; }
};
FdProbe fd_probe(double fd_h, double fd_2h, double g, double rounding);

// R for a model and config: gamma_n*max(|loss|, 1)/h with n the deepest accumulation chain.
double fd_rounding(const ModelSpec& m, const TrainConfig& c, double loss);

struct TensorCheck {
  std::string id;
  std::uint64_t predicted = 0, measured = 0;
  bool kept = false;
};

struct Report {
  std::string executor, device, dtype, policy;
  std::uint64_t predicted_peak_bytes = 0, measured_peak_bytes = 0;
  std::string predicted_peak_at, measured_peak_at;
  double peak_error_pct = 0;
  double peak_tolerance_pct = 0;        // CPU: exact; CUDA: the 2% goal
  std::uint64_t device_used_bytes = 0;  // CUDA: cudaMemGetInfo's view at the peak step (0 on CPU)
  std::uint64_t batch_bytes = 0;        // token ids and targets, outside the engine's accounting
  std::vector<TensorCheck> tensors;
  bool tensors_match = false;
  bool gradients_match = false;  // policy run vs no-recompute run, bitwise
  double max_grad_diff = 0;
  bool has_reference = false;
  double max_rel_error = 0, rel_error_bound = 0;
  int fd_probes = 0;
  double fd_max_rel_error = 0;  // max |fd - g| over the probes, / the largest |g| of the model
  double fd_bound = 0;          // the largest probe bound kFdSafety*(R + T), same scale
  double fd_worst_ratio = 0;    // max |fd - g| / its probe's bound: <= 1 passes
  std::string fd_worst_probe;   // "layer2.w1[1234]": the probe nearest (or past) its bound
  double loss = 0;
  double step_ms = 0, baseline_step_ms = 0;
  double predicted_overhead_pct = 0, measured_overhead_pct = 0;
  bool passed() const;
};

// Resolves the request (the CLI's flags as JSON: preset or model, config) into the executor's
// configuration: single device, the megatron profile, SGD without master weights (static memory
// is parameters + gradients in the activation dtype), no fragmentation allowance, and the cuBLAS
// workspace the CUDA executor really allocates (none on the CPU). Conflicting input is an error
// naming the field.
Result<std::pair<ModelSpec, TrainConfig>> executor_config(const nlohmann::json& request,
                                                          const std::string& executor);

// The executor's bound on work: one step's multiply-adds (checks.cpp, step_work) at most
// kMaxValidatorWorkCpu on the CPU (plain loops: about a minute) or kMaxValidatorWorkCuda on a GPU,
// and at most kMaxValidatorBytesCpu of predicted peak on the CPU. Beyond it the run is refused
// with the amounts, never started.
std::optional<Error> check_problem_size(const ModelSpec& m, const TrainConfig& c, const Options& o);

Result<Report> run_checks(const ModelSpec& m, const TrainConfig& c, const Options& o,
                          const DeviceFactory& device);

nlohmann::json report_to_json(const Report& r);
std::string report_table(const Report& r);

}  // namespace actmem::exec

// Answers on top of the simulated peak: the largest micro-batch and sequence that fit, the cheapest
// recompute policy that fits (with the memory/recompute Pareto front), and a peak-bytes sweep grid.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actmem/config/gpu.hpp"
#include "actmem/setup/setup.hpp"
#include "actmem/step/evaluation.hpp"

namespace actmem {

struct FitResult {
  Bytes capacity = 0;               // the GPU's capacity the device verdict compares with
  Bytes overhead_bytes = 0;         // its fixed costs (device_overheads)
  Bytes budget = 0;                 // capacity less the fixed costs: what the tensor search aims at
  std::uint64_t device_probes = 0;  // configurations whose device figure was simulated
  std::uint64_t max_micro_batch = 0;  // 0: not even one fits
  std::uint64_t max_seq = 0;          // at the configured micro-batch; 0: none fits
  std::uint64_t seq_step = 1;  // sequences are searched in multiples of this (cp, tp with SP)
  std::uint64_t probes = 0;    // configurations simulated
  // Each search's upper bound (kMaxFitMicroBatch; kMaxFitSeq or the learned position table) and
  // whether the answer reached it: then at least that many fit, and the search stopped there.
  std::uint64_t micro_batch_limit = 0, seq_limit = 0;
  bool micro_batch_at_limit = false, seq_at_limit = false;
  bool seq_limit_is_positions = false;  // the bound is max_position_embeddings, not the search's
};

// The largest micro-batch and sequence length whose device figure fits the GPU (device.hpp):
// searched on the simulated tensor peak, which grows with both, then settled on the device
// figure from there. `fits_as_given`: the device verdict of `c` itself on the same stage, where
// the caller has it (the view's estimate): a probe of c's own micro-batch or sequence length
// takes it instead of replaying the step again.
Result<FitResult> fit(const ModelSpec& m, const TrainConfig& c, const GpuSpec& gpu,
                      std::optional<bool> fits_as_given = std::nullopt);

constexpr std::size_t kMaxPlanDeviceChecks = 16;
// The longest stride of per-layer offload plan tries (every q-th layer of a chunk offloaded).
constexpr std::uint64_t kMaxOffloadStride = 8;

struct PlanPoint {
  std::string
      policy;  // a recompute string estimate accepts ("selective", "every:4", "layers:KKSCRR")
  bool offload = false;  // some layer's kept bytes live in host memory
  Bytes peak_bytes = 0;
  double recompute_overhead_pct = 0;
  bool fits = false;
  // Offload points on a GPU whose FLOPs and host link are known (offload.hpp): whether the copies
  // hide behind the forwards, and the copy time per step they do not hide.
  bool offload_timing_known = false;
  bool offload_hidden = false;
  double offload_exposed_s = 0;
  double offload_exposed_pct = 0;  // offload_exposed_pct (offload.hpp): of the stage's ideal step
  // Every layer offloads (the config's offload switch; policy then names the recompute alone);
  // else a lower-case pattern in policy says which layers do.
  bool offload_all = false;
  // Its offloaded bytes against the host memory per GPU, when the GPU preset gives it.
  bool offload_host_known = false;
  bool offload_host_fits = false;
};

struct Plan {
  Bytes capacity = 0;        // the GPU's capacity the device verdict compares with
  Bytes overhead_bytes = 0;  // its fixed costs
  Bytes budget = 0;  // capacity less the fixed costs: what candidates' peaks are screened by
  std::uint64_t device_checks = 0;  // candidates whose device figure was simulated
  bool found = false;
  PlanPoint best;  // the least extra FLOPs among candidates whose peak fits
  // The least extra FLOPs among candidates whose tensor peak passes the screen, before the device
  // figure decides (best, when the device takes it).
  PlanPoint screened_best;
  std::vector<PlanPoint>
      pareto;  // non-dominated on-GPU (peak, overhead) points, by increasing overhead
  std::vector<PlanPoint> offload;  // offload variants (no extra FLOPs; PCIe traffic instead)
  std::uint64_t evaluated = 0;     // candidate policies simulated
};

// Candidates: none, selective, full, every:k for every k, offload of each, and per-layer patterns
// K^a S^b followed by checkpointed segments of equal length (Chen et al. 2016; segment count chosen
// per (a, b) as Griewank & Walther's binomial/Revolve analysis suggests for one recompute level),
// simulated in order of increasing recompute FLOPs until one fits.
// The chosen policy's device figure fits (at most kMaxPlanDeviceChecks candidates are checked).
// Which recompute policies a plan may choose: any, or only those a launcher can say.
// kMegatronLm: Megatron-LM's arguments (none, selective, full, every:K, and the first k layers of
// each chunk fully recomputed: --recompute-method block). kTorchtitan: torchtitan's
// activation_checkpoint (none, full, every N-th block: layers:K..KC, and its op list).
enum class PolicyFamily { kAny, kMegatronLm, kTorchtitan };
Result<Plan> plan(const ModelSpec& m, const TrainConfig& c, const GpuSpec& gpu,
                  PolicyFamily family = PolicyFamily::kAny);

struct Sweep {
  std::vector<std::uint64_t> micro_batches;
  std::vector<std::uint64_t> seqs;
  std::vector<std::vector<std::int64_t>> peak_bytes;  // [micro_batch][seq]; -1 where invalid
};

Result<Sweep> sweep(const ModelSpec& m, const TrainConfig& c,
                    const std::vector<std::uint64_t>& micro_batches,
                    const std::vector<std::uint64_t>& seqs);

}  // namespace actmem

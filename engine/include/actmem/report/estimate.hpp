// The estimate: the report of one request (per-stage activations, static memory, the simulated
// peak, KV cache, explanations), built from a Setup and its Evaluation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actmem/config/config.hpp"
#include "actmem/config/gpu.hpp"
#include "actmem/core/error.hpp"
#include "actmem/device/device.hpp"
#include "actmem/report/explanation.hpp"
#include "actmem/report/timeline.hpp"
#include "actmem/setup/setup.hpp"
#include "actmem/step/evaluation.hpp"
#include "actmem/step/offload.hpp"

namespace actmem {

// One pipeline rank as the report shows it: its layers and per-layer recompute choices (from the
// setup and the policy), and its evaluated activations, static memory and simulated peak.
struct Stage {
  std::uint64_t index = 0;
  std::uint64_t chunk_layers = 0;    // layers of this rank's first chunk (L/(pp·vpp) when even)
  std::vector<LayerChoice> choices;  // recompute choice of each layer of the first chunk
  std::vector<std::uint64_t> chunk_sizes;               // layers of each of the rank's v chunks
  std::vector<std::uint64_t> chunk_first;               // global index of each chunk's first layer
  std::vector<std::vector<LayerChoice>> chunk_choices;  // per chunk, per layer
  std::uint64_t layers = 0;            // layers this pipeline rank owns (all its virtual chunks)
  std::uint64_t in_flight = 0;         // micro-batches (x chunks) whose activations coexist
  std::uint64_t kept_layer_slots = 0;  // layers' worth of kept activations at the peak
  StageActivations act;
  StaticMemory stat;
  // The static lines live at the peak's event (step/static_at.hpp): `stat` but for a line a
  // framework makes or frees within the step (FSDP2 at one stage: its sharded gradients before
  // the first backward).
  StaticMemory peak_stat;
  Bytes total_bytes = 0;  // activations + static (the closed-form sum)
  Bytes peak_bytes = 0;   // the simulated peak of the step (timeline), what must fit
  std::string peak_at;
  Bytes peak_activations = 0, peak_recompute = 0, peak_transients = 0, peak_fragmentation = 0;
  // Each phase's highest event (issue 36: "the optimizer step peaks 3.1 GiB above backward"), in
  // step order, the phases this rank runs only; the phase of the peak; and the peak's three
  // largest lines (peak's JSON keys, largest first, the first of equals in the peak's order).
  std::vector<PhaseFigure> phases;
  StepPhase peak_phase = StepPhase::kForward;
  struct Contributor {
    const char* key;    // the line's key in "peak"
    const char* label;  // ... as the table and the page say it
    Bytes bytes = 0;
  };
  std::vector<Contributor> peak_top;
};

// The report of one request: the setup (model, normalized config, kinds, ranks), the evaluation
// of the config's policy, and what a reader needs (per-stage view, layer 0's kept records,
// explanations, warnings). Built by estimate(); the engine's searches use Setup + evaluate().
struct Estimate : Setup {
  Evaluation eval;
  std::vector<TensorRecord> kept;  // what layer 0 of stage 0 keeps under the recompute policy
  Bytes per_layer_full_bytes = 0;
  Bytes per_layer_kept_bytes = 0;
  Bytes per_layer_linear_bytes = 0;     // of the kept bytes, the part linear in s
  Bytes per_layer_quadratic_bytes = 0;  // of the kept bytes, the part quadratic in s
  std::vector<Stage> stages;
  std::size_t worst_stage = 0;  // the stage with the largest simulated peak
  bool has_gpu = false;
  GpuSpec gpu;
  bool fits = false;
  std::int64_t headroom_bytes =
      0;  // gpu memory minus the worst stage's simulated peak (may be negative)
  double recompute_overhead_pct = 0;
  // The step through the allocator model with the fixed costs (the full report only: estimate()
  // with explain).
  bool has_device = false;
  DeviceMemory device;
  // With offload and a GPU: whether the copies hide behind compute (offload.hpp).
  bool has_offload_timing = false;
  OffloadTiming offload;
  std::vector<Explanation> explain;
  std::vector<std::string> warnings;

  const Stage& worst() const { return stages[worst_stage]; }
};

// Validates the model and config (field-named errors) and computes everything.
// `explain` = false skips writing the explanation strings (the planner's and sweeps' inner loops).
Result<Estimate> estimate(const ModelSpec& m, const TrainConfig& c, const GpuSpec* gpu,
                          bool explain = true);

}  // namespace actmem

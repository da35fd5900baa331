// The estimate: inventory, per-stage activations, static memory, totals, KV cache and explanations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actmem/config.hpp"
#include "actmem/error.hpp"
#include "actmem/flops.hpp"
#include "actmem/inventory.hpp"
#include "actmem/model.hpp"
#include "actmem/params.hpp"
#include "actmem/policy.hpp"

namespace actmem {

struct GpuSpec {
  std::string id;
  std::string name;
  Bytes memory_bytes = 0;
  std::string source;
};

struct StageActivations {
  Bytes layers_bytes = 0;             // kept by this stage's layers for all in-flight micro-batches
  Bytes input_layer_bytes = 0;        // embedding side (first stage)
  Bytes output_layer_bytes = 0;       // final norm, logits, loss (last stage)
  Bytes recompute_working_bytes = 0;  // what one backward recompute regenerates at a time
  Bytes host_bytes = 0;               // kept bytes moved to host under offload
  Bytes total_bytes = 0;              // on the GPU
};

// One layer kind resolved on one GPU: built once per estimate and shared by every layer of the
// kind.
struct KindEstimate {
  LayerGeometry geometry;
  LayerInventory inventory;
  LayerCosts costs;          // bytes and FLOPs per layer by recompute choice
  LayerFlops flops;          // one layer's forward FLOPs on one GPU
  std::uint64_t layers = 0;  // layers of this kind in the model
  Bytes param_bytes = 0;     // one layer's parameters on one GPU (what ZeRO-3 gathers per layer)
  Bytes largest_param = 0;   // elements of its largest parameter tensor on one GPU
};

struct Stage {
  std::uint64_t index = 0;
  std::uint64_t chunk_layers = 0;    // layers of this rank's first chunk (L/(pp·vpp) when even)
  std::vector<LayerChoice> choices;  // recompute choice of each layer of the first chunk
  std::vector<std::uint64_t> chunk_sizes;               // layers of each of the rank's v chunks
  std::vector<std::uint64_t> chunk_first;               // global index of each chunk's first layer
  std::vector<std::vector<LayerChoice>> chunk_choices;  // per chunk, per layer
  std::vector<Bytes> chunk_kept;                        // kept bytes of one pass through each chunk
  std::uint64_t layers = 0;            // layers this pipeline rank owns (all its virtual chunks)
  std::uint64_t in_flight = 0;         // micro-batches (x chunks) whose activations coexist
  std::uint64_t kept_layer_slots = 0;  // layers' worth of kept activations at the peak
  StageActivations act;
  StaticMemory stat;
  Bytes total_bytes = 0;  // activations + static (the closed-form sum)
  Bytes peak_bytes = 0;   // the simulated peak of the step (timeline), what must fit
  std::string peak_at;
  Bytes peak_activations = 0, peak_recompute = 0, peak_transients = 0, peak_fragmentation = 0;
};

struct KvCache {
  Bytes total_bytes = 0;    // whole model, one sequence batch: 2 * p * L * kv * d * s * b
  Bytes per_gpu_bytes = 0;  // divided by TP (kv heads) and PP (layers)
};

// A total written out as a student would: the symbolic formula, the numbers substituted, the value.
struct Explanation {
  std::string id;
  std::string title;
  std::string formula;
  std::string substituted;
  Bytes bytes = 0;
  std::string source;
};

struct Estimate {
  ModelSpec model;
  TrainConfig config;               // normalized (dropouts resolved, grad_accum resolved)
  std::vector<KindEstimate> kinds;  // one per model.kinds entry; kinds[0] is layer 0's kind
  double logits_flops = 0;          // forward FLOPs of the output projection on one GPU
  std::vector<TensorRecord> kept;   // what layer 0 of stage 0 keeps under the recompute policy
  Bytes per_layer_full_bytes = 0;
  Bytes per_layer_kept_bytes = 0;
  Bytes per_layer_linear_bytes = 0;     // of the kept bytes, the part linear in s
  Bytes per_layer_quadratic_bytes = 0;  // of the kept bytes, the part quadratic in s
  std::uint64_t model_params = 0;
  std::vector<Stage> stages;
  std::size_t worst_stage = 0;  // the stage with the largest simulated peak
  KvCache kv_cache;
  bool has_gpu = false;
  GpuSpec gpu;
  bool fits = false;
  std::int64_t headroom_bytes =
      0;  // gpu memory minus the worst stage's simulated peak (may be negative)
  double recompute_overhead_pct = 0;
  std::vector<Explanation> explain;
  std::vector<std::string> warnings;

  const Stage& worst() const { return stages[worst_stage]; }
  const KindEstimate& kind_at(std::uint64_t layer) const { return kinds[model.kind_index(layer)]; }
  // The embedding-side and output-layer records (model-wide, carried by every kind's inventory).
  const LayerInventory& io() const { return kinds[0].inventory; }
};

// Validates the model and config (field-named errors) and computes everything.
// `explain` = false skips writing the explanation strings (the planner's and sweeps' inner loops).
Result<Estimate> estimate(const ModelSpec& m, const TrainConfig& c, const GpuSpec* gpu,
                          bool explain = true);

// Re-derives everything that depends on config.recompute (per-layer choices, kept activations,
// the simulated peak, fits) on an estimate whose model, config and static memory are already
// built: what the planner calls for each candidate policy.
std::optional<Error> apply_recompute(Estimate& e);

// Structural validation alone (also used by the JSON readers).
std::optional<Error> validate(const ModelSpec& m, const TrainConfig& c);

}  // namespace actmem

// Per-layer recompute choices: the one place a recompute policy decides what a layer keeps,
// what backward regenerates, and what that costs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actmem/config/config.hpp"
#include "actmem/core/checked.hpp"
#include "actmem/inventory/inventory.hpp"

namespace actmem {

// kKeep: every record; kSelective: all but the attention core (Korthikanti et al. 2022, Sec. 5);
// kCheckpoint: only the layer input, and the layer starts a recompute segment (Chen et al. 2016);
// kRecompute: nothing, regenerated with the segment of the nearest checkpoint below it;
// kCustom: the layer input plus a named set of records (Recompute::custom_keep).
enum class LayerChoice : std::uint8_t { kKeep, kSelective, kCheckpoint, kRecompute, kCustom };
// The letter of each choice in layers:PATTERN, in LayerChoice order. The lower-case k, s, c, x
// are the same choices with the layer's kept bytes offloaded to host memory (R keeps nothing).
constexpr const char kChoiceLetters[] = "KSCRX";
constexpr const char kOffloadLetters[] = "kscx";

// The choice of layer j of a chunk under a policy (a chunk's first layer starts a recompute
// segment: kRecompute there becomes kCheckpoint), and the choices of a chunk of n layers.
LayerChoice choice_at(const Recompute& r, std::uint64_t j);
std::vector<LayerChoice> layer_choices(const Recompute& r, std::uint64_t n);
// The letter of K S C R X (config's layers:PATTERN) as a choice; k s c x as K S C X.
LayerChoice pattern_choice(char letter);
// Whether layer j of a chunk keeps its bytes in host memory: every layer under the policy-wide
// offload, or a lower-case letter of layers:PATTERN (per-layer offload).
bool offloaded_at(const Recompute& r, std::uint64_t j);
// Whether any layer offloads (the policy-wide switch or a lower-case pattern letter).
bool any_offload(const Recompute& r);

// One layer's byte and FLOP accounting, from its inventory.
struct LayerCosts {
  Bytes full = 0;        // every record (no recompute)
  Bytes checkpoint = 0;  // the layer input a checkpoint keeps
  Bytes alias = 0;       // bytes of the record that is the layer input itself (0 if none)
  Bytes core = 0;        // the attention-core records
  Bytes custom = 0;      // records named in custom_keep
  bool custom_has_input = false;
  bool custom_drops_non_core = false;
  // Op-level policies (recompute op:...): the saved ops' outputs, and the recompute's FLOPs
  // without the saved ops.
  bool by_ops = false;
  Bytes custom_ops = 0;
  double ops_regen_flops = 0;
  Bytes grad_peak = 0;  // the most gradient bytes alive at one step of the layer's backward
  std::string_view grad_peak_at;  // that step (LayerInventory::backward_grads)
  double flops_fwd = 0;           // one forward of the layer (multiply-add = 2 FLOPs)
  double flops_core = 0;          // of which the attention core (QK^T, softmax-V)
};

// Whether an op-level policy saves this op's outputs (op:torchtitan, or named by op:LIST).
bool op_saved(const OpOutput& op, const Recompute& r);

LayerCosts layer_costs(const LayerInventory& inv, const Recompute& r, double flops_fwd,
                       double flops_core);

// Bytes a layer keeps for backward, and bytes backward regenerates for it.
Bytes kept_bytes(LayerChoice c, const LayerCosts& k);
Bytes regen_bytes(LayerChoice c, const LayerCosts& k);
double regen_flops(LayerChoice c, const LayerCosts& k);

// The records a layer keeps under a choice (the checkpoint record stands for the layer input).
std::vector<const TensorRecord*> kept_tensors(const LayerInventory& inv, LayerChoice c,
                                              const Recompute& r);

// What backward regenerates just before layer j's backward: at the top layer of a checkpointed
// segment the whole segment [*first, j] (Chen et al. 2016); for a selective or custom layer with
// dropped records, layer j alone. False when nothing is regenerated there.
bool regenerates_before(const std::vector<LayerChoice>& chunk, const std::vector<Bytes>& regen,
                        std::size_t j, std::size_t* first);
// The same over a chunk of n layers held in arrays (the step walker's scratch).
bool regenerates_before(const LayerChoice* chunk, const Bytes* regen, std::size_t n, std::size_t j,
                        std::size_t* first);

// "none", "selective", "full", "every:K", "custom", or a compact per-layer string ("KKSSCRRR").
std::string policy_name(const std::vector<LayerChoice>& chunk, const Recompute& r);

}  // namespace actmem

// The static lines live at an event (static_at.hpp).
#include "actmem/step/static_at.hpp"

#include "actmem/config/sharding.hpp"

namespace actmem {

// FSDP2 at one stage, measured on an H200 (docs/validation.md 4.6, torchtitan 9dec370's step on
// torch 2.11): zero_grad at the step's start frees the sharded gradients and each group's
// reduce-scatter makes them again in backward (torch 2.6.0 _fsdp_collectives.py foreach_reduce),
// so a step of one micro-batch has none in its forward and loss, and in backward those of the
// groups done (grads_made_at); every group is resharded at its post-backward, the root and the
// last block too, so the optimizer step holds no gathered parameters (the measured phase:
// 20,148,265,472 B). With more micro-batches the gradients of the first stay through the later
// ones' forwards, which are the higher: the line is kept.
// verl's FSDP1 (fsdp1_grads_in_backward) likewise: zero_grad at the mini-batch's start, each
// unit's shard made at its post-backward; it keeps nothing gathered.
StaticMemory static_at(const TrainConfig& c, const StaticMemory& stat, StepEvent::Kind kind) {
  if (!fsdp2_per_parameter(c) && !fsdp1_grads_in_backward(c)) return stat;
  StaticMemory s = stat;
  if (grads_in_backward(c) && kind != StepEvent::kOptimizer) {
    s.total_bytes -= s.grads_bytes;
    s.grads_bytes = 0;
  }
  if (kind == StepEvent::kOptimizer) {
    s.total_bytes -= s.gathered_params_bytes;
    s.gathered_params_bytes = 0;
  }
  return s;
}

Bytes grads_made_at(const Setup& s, const StepEvent& at) {
  if (s.grads_made_before.empty()) return 0;
  if (root_post_backward(at)) return s.grads_made_root;
  const bool backward = at.kind == StepEvent::kBwd || at.kind == StepEvent::kRecompute ||
                        at.kind == StepEvent::kBwdInput || at.kind == StepEvent::kBwdWeight;
  // A recompute segment runs before its top layer's backward: the layers above it are done.
  const std::uint64_t g = at.kind == StepEvent::kRecompute ? at.hi : at.lo;
  return backward && g < s.grads_made_before.size() ? s.grads_made_before[g] : 0;
}

}  // namespace actmem

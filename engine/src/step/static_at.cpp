// The static lines live at an event (static_at.hpp).
#include "actmem/step/static_at.hpp"

#include "actmem/config/sharding.hpp"

namespace actmem {

// FSDP2 at one stage, measured on an H200 (docs/validation.md 4.6, torchtitan 9dec370's step on
// torch 2.11): zero_grad at the step's start frees the sharded gradients and each group's
// reduce-scatter makes them again in backward (torch 2.6.0 _fsdp_collectives.py foreach_reduce),
// so a step of one micro-batch has none in its forward and loss; every group is resharded at
// its post-backward, the root and the last block too, so the optimizer step holds no gathered
// parameters (the measured phase: 20,148,265,472 B). With more micro-batches the gradients of
// the first stay through the later ones' forwards, which are the higher: the line is kept.
// verl's FSDP1 (fsdp1_grads_in_backward) likewise: zero_grad at the mini-batch's start, each
// unit's shard made at its post-backward; it keeps nothing gathered.
StaticMemory static_at(const TrainConfig& c, const StaticMemory& stat, StepEvent::Kind kind) {
  if (!fsdp2_per_parameter(c) && !fsdp1_grads_in_backward(c)) return stat;
  StaticMemory s = stat;
  const bool before_backward =
      kind == StepEvent::kFwd || kind == StepEvent::kLossFwd || kind == StepEvent::kLossBwd;
  if (before_backward && default_micro_batches(c) == 1) {
    s.total_bytes -= s.grads_bytes;
    s.grads_bytes = 0;
  }
  if (kind == StepEvent::kOptimizer) {
    s.total_bytes -= s.gathered_params_bytes;
    s.gathered_params_bytes = 0;
  }
  return s;
}

}  // namespace actmem

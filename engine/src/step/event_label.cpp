// An event of the step walk written as the timeline and the estimate's peak name it ("F mb3 c1
// L12", "loss bwd mb0"): one wording for both (evaluation.hpp); and the phase each event is in.
#include <string>

#include "actmem/step/evaluation.hpp"

namespace actmem {

std::string event_label(const StepEvent& k) {
  const std::string where = " mb" + std::to_string(k.mb) + " c" + std::to_string(k.chunk);
  switch (k.kind) {
    case StepEvent::kFwd:
      return "F" + where + (forward_start(k) ? " groups" : " L" + std::to_string(k.lo));
    case StepEvent::kBwd:
      return "B" + where + (root_post_backward(k) ? " root" : " L" + std::to_string(k.lo));
    case StepEvent::kBwdInput:
      return "I" + where + " L" + std::to_string(k.lo);
    case StepEvent::kBwdWeight:
      return "W" + where + " L" + std::to_string(k.lo);
    case StepEvent::kRecompute:
      return "R" + where + " L" + std::to_string(k.lo) +
             (k.hi != k.lo ? "-L" + std::to_string(k.hi) : "");
    case StepEvent::kLossFwd:
      return "loss fwd mb" + std::to_string(k.mb);
    case StepEvent::kLossBwd:
      return "loss bwd mb" + std::to_string(k.mb);
    case StepEvent::kOptimizer:
      return "optimizer step";
  }
  return "?";
}

const char* phase_id(StepPhase p) {
  static const char* const kIds[kStepPhases] = {"forward", "loss", "backward", "optimizer_step"};
  return kIds[static_cast<std::size_t>(p)];
}

const char* phase_label(StepPhase p) {
  static const char* const kLabels[kStepPhases] = {"forward", "loss", "backward", "optimizer step"};
  return kLabels[static_cast<std::size_t>(p)];
}

}  // namespace actmem

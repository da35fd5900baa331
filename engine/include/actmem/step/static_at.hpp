// What of a rank's static memory is on the GPU at each kind of event of the step: all of it,
// except where a framework makes or frees a static line within the step (FSDP2 at one stage:
// config/sharding.hpp fsdp2_per_parameter; verl's FSDP1, fsdp1_grads_in_backward). The walk's
// totals and the report's peak lines both come from this one function, so the peak's lines still
// add up to its bytes.
#pragma once

#include "actmem/config/config.hpp"
#include "actmem/inventory/params.hpp"
#include "actmem/setup/setup.hpp"
#include "actmem/step/evaluation.hpp"

namespace actmem {

StaticMemory static_at(const TrainConfig& c, const StaticMemory& stat, StepEvent::Kind kind);

// The gradients made by the event, where static_at leaves them out of backward
// (grads_in_backward): the walk counts them in the event's transient, the report as the
// gradients line of the peak.
Bytes grads_made_at(const Setup& s, const StepEvent& at);

}  // namespace actmem

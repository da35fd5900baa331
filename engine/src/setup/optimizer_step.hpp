// Internal: the optimizer step's transient on each pipeline rank (optimizer_step.cpp), what the
// step's last phase allocates beyond the states, gradients and parameters that persist.
#pragma once

#include <string>
#include <vector>

#include "actmem/core/checked.hpp"
#include "actmem/inventory/params.hpp"
#include "actmem/setup/setup.hpp"

namespace actmem::detail {

// Sets each rank's opt_temp and the setup's (the largest), from the rank's static memory and
// trainable tensors (`embed`, `head`: the parameters outside the layers).
void set_optimizer_step(Setup& e, const std::vector<ParamRecord>& embed,
                        const std::vector<ParamRecord>& head, Checked& ck);

// What the step allocates and why, for the named transient "optimizer.step_temp".
std::string optimizer_step_source(const TrainConfig& c);

}  // namespace actmem::detail

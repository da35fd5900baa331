// actmem-validate's command line: its own flags (executor, seed, probes, reference), the model and
// config flags of `actmem estimate`, and the executor's bounds on what it will run. No execution:
// the fuzzer drives this whole path.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "actmem/core/error.hpp"
#include "actmem/report/estimate.hpp"
#include "checks.hpp"

namespace actmem::exec {

struct ValidateArgs {
  Options options;
  bool json = false;
  bool help = false;
  ModelSpec model;
  TrainConfig config;
};

// Parses argv (without the program name) and resolves the model and config the executor will run,
// within its bounds (limits.hpp). The error is one field-named line.
Result<ValidateArgs> parse_validate_args(const std::vector<std::string>& argv);

}  // namespace actmem::exec

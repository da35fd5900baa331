// libFuzzer target: actmem-validate's arguments (and a --model/--config file, fuzz_input.hpp's
// layout) up to the decision to run: its own flags, the CLI's flags, the executor's configuration
// and its problem-size bounds. Nothing is executed. Every input is accepted or refused with one
// clean field-named line; an accepted one is within the bounds.
#include <cstdlib>

#include "../engine/executor/validate_args.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = actmem::fuzz::split_argv(data, size, 64);
  if (in.skip) return 0;
  const auto r = actmem::exec::parse_validate_args(in.argv);
  if (!r.ok()) {
    if (!actmem::fuzz::one_clean_line(r.error().message + "\n") || r.error().field.empty())
      std::abort();
    return 0;
  }
  if (!r.value().help &&
      actmem::exec::check_problem_size(r.value().model, r.value().config, r.value().options))
    std::abort();
  return 0;
}

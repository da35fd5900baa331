// actmem-validate: runs real transformer layers (CPU, or CUDA when built with ACTMEM_CUDA) under
// the engine's recompute policy and reports predicted vs measured memory and gradient checks.
// Exit 0: every check passed; 1: a check failed; 2: bad input.
#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../cli/table.hpp"
#include "checks.hpp"
#include "cpu_device.hpp"
#include "validate_args.hpp"
#if defined(ACTMEM_HAVE_CUDA)
#include "cuda_device.hpp"
#endif

namespace {
constexpr const char* kUsage =
    "usage: actmem-validate --executor cpu|cuda [--seed N] [--fd-probes N] [--reference "
    "auto|on|off]\n"
    "                       [--json] <the model and config flags of `actmem estimate`>\n"
    "Runs the model's layers forward and backward under the recompute policy and compares the\n"
    "measured peak with the engine's prediction (exact on the CPU, 2% on CUDA), the gradients\n"
    "with the no-recompute run (bitwise), with an fp64 CPU reference and with finite differences.\n"
    "The executor fixes: profile megatron, optimizer sgd, no master weights, one device.\n";
}

int main(int argc, char** argv) {
  using namespace actmem;
  const std::vector<std::string> args(argv + 1, argv + argc);
  const bool json_out = std::find(args.begin(), args.end(), "--json") != args.end();
  auto fail = [&](const std::string& msg) {
    if (json_out)
      std::cout << nlohmann::json{{"ok", false}, {"error", {{"message", msg}}}}.dump(
                       -1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    std::cerr << "actmem-validate: error: " << cli::printable(msg) << "\n";
    return 2;
  };
  auto parsed = exec::parse_validate_args(args);
  if (!parsed.ok()) return fail(parsed.error().message);
  const exec::ValidateArgs& a = parsed.value();
  if (a.help) {
    std::cout << kUsage;
    return 0;
  }
  exec::DeviceFactory factory;
  if (a.options.executor == "cpu") {
    factory = [](exec::Elem e) { return exec::make_cpu_device(e); };
  } else {
#if defined(ACTMEM_HAVE_CUDA)
    if (!exec::cuda_available()) {
      std::cerr << "actmem-validate: no CUDA device: " << exec::cuda_status() << "\n";
      return 77;  // ctest's skip code (SKIP_RETURN_CODE)
    }
    factory = [](exec::Elem e) { return exec::make_cuda_device(e); };
#else
    return fail("executor: 'cuda' is not built in; configure with -DACTMEM_CUDA=ON; allowed: cpu");
#endif
  }
  try {
    auto r = exec::run_checks(a.model, a.config, a.options, factory);
    if (!r.ok()) return fail(r.error().message);
    if (a.json)
      std::cout << exec::report_to_json(r.value()).dump(2) << "\n";
    else
      std::cout << exec::report_table(r.value());
    return r.value().passed() ? 0 : 1;
  } catch (const std::exception& ex) {
    std::cerr << "actmem-validate: executor failed: " << cli::printable(ex.what()) << "\n";
    return 1;
  }
}

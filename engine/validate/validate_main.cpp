// actmem-validate: runs real transformer layers (CPU, or CUDA when built with ACTMEM_CUDA) under
// the engine's recompute policy and reports predicted vs measured memory and gradient checks.
// Exit 0: every check passed; 1: a check failed; 2: bad input.
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../cli/args.hpp"
#include "checks.hpp"
#include "cpu_device.hpp"
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
  std::vector<std::string> rest;
  exec::Options o;
  bool json_out = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(std::string(flag) + ": needs a value");
      return argv[++i];
    };
    try {
      if (a == "--executor") {
        o.executor = next("--executor");
      } else if (a == "--seed") {
        o.seed = std::stoull(next("--seed"));
      } else if (a == "--fd-probes") {
        o.fd_probes = std::stoi(next("--fd-probes"));
        if (o.fd_probes < 0) throw std::invalid_argument("--fd-probes: allowed: 0 or more");
      } else if (a == "--reference") {
        const std::string v = next("--reference");
        if (v != "auto" && v != "on" && v != "off")
          throw std::invalid_argument("--reference: '" + v + "'; allowed: auto, on, off");
        o.reference = v == "auto" ? -1 : v == "on" ? 1 : 0;
      } else if (a == "--json") {
        json_out = true;
      } else if (a == "--help" || a == "-h") {
        std::cout << kUsage;
        return 0;
      } else {
        rest.push_back(a);
      }
    } catch (const std::exception& ex) {
      std::cerr << "actmem-validate: error: " << ex.what() << "\n";
      return 2;
    }
  }
  cli::Options opt;
  rest.insert(rest.begin(), "estimate");
  const std::string err = cli::parse_args(rest, &opt);
  auto fail = [&](const std::string& msg) {
    if (json_out)
      std::cout << nlohmann::json{{"ok", false}, {"error", {{"message", msg}}}}.dump() << "\n";
    std::cerr << "actmem-validate: error: " << msg << "\n";
    return 2;
  };
  if (!err.empty()) return fail(err);
  auto cfg = exec::executor_config(opt.request, o.executor);
  if (!cfg.ok()) return fail(cfg.error().message);
  exec::DeviceFactory factory;
  if (o.executor == "cpu") {
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
    auto r = exec::run_checks(cfg.value().first, cfg.value().second, o, factory);
    if (!r.ok()) return fail(r.error().message);
    if (json_out)
      std::cout << exec::report_to_json(r.value()).dump(2) << "\n";
    else
      std::cout << exec::report_table(r.value());
    return r.value().passed() ? 0 : 1;
  } catch (const std::exception& ex) {
    std::cerr << "actmem-validate: executor failed: " << ex.what() << "\n";
    return 1;
  }
}

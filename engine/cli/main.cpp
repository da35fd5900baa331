// actmem: the command-line client of the engine (estimate, explain, presets); exit 2 on bad input.
#include <iostream>
#include <string>
#include <vector>

#include "actmem/json_io.hpp"
#include "args.hpp"
#include "table.hpp"

int main(int argc, char** argv) {
  using namespace actmem;
  std::vector<std::string> args(argv + 1, argv + argc);
  cli::Options opt;
  const std::string err = cli::parse_args(args, &opt);
  if (!err.empty()) {
    std::cerr << "actmem: error: " << err << "\n";
    return 2;
  }
  if (opt.help) {
    std::cout << cli::kUsage;
    return 0;
  }
  const nlohmann::json r = evaluate_json(opt.request);
  if (!r.value("ok", false)) {
    if (opt.json) std::cout << r.dump() << "\n";
    std::cerr << "actmem: error: " << r["error"]["message"].get<std::string>() << "\n";
    return 2;
  }
  if (opt.json) {
    std::cout << r.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (opt.command == "timeline") {
    std::cout << (opt.csv ? cli::render_timeline_csv(r) : cli::render_timeline(r));
  } else if (opt.command == "fit") {
    std::cout << cli::render_fit(r);
  } else if (opt.command == "plan") {
    std::cout << cli::render_plan(r);
  } else if (opt.command == "sweep") {
    std::cout << cli::render_sweep(r);
  } else if (opt.command == "presets") {
    std::cout << cli::render_presets(r);
  } else if (opt.command == "explain") {
    std::cout << cli::render_explain(r);
  } else {
    std::cout << cli::render_estimate(r);
  }
  return 0;
}

// actmem: the command-line client of the engine (estimate, explain, presets); exit 2 on bad input.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "actmem/json_io.hpp"
#include "args.hpp"
#include "table.hpp"

int main(int argc, char** argv) {
  using namespace actmem;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "requests") {
    // The page's own requests, one JSON per line ("-" reads stdin): each answer is evaluate()'s
    // text verbatim, the bytes the page receives (tests compare the two).
    if (args.size() != 2) {
      std::cerr << "actmem: error: requests: needs one file of JSON requests, one per line\n";
      return 2;
    }
    std::ifstream file;
    if (args[1] != "-") {
      std::error_code ec;
      if (std::filesystem::is_directory(args[1], ec)) {
        std::cerr << "actmem: error: requests: " << nlohmann::json(args[1]).dump(-1, ' ', true)
                  << " is a directory; allowed: a file of JSON requests, one per line, or -\n";
        return 2;
      }
      file.open(args[1], std::ios::binary);
      if (!file) {
        std::cerr << "actmem: error: requests: cannot read "
                  << nlohmann::json(args[1]).dump(-1, ' ', true) << "\n";
        return 2;
      }
    }
    std::istream& in = args[1] == "-" ? std::cin : file;
    // Lines are read with a bound (kMaxJsonTextBytes): /dev/zero or a file without newlines
    // stops at the bound with an error instead of filling memory.
    std::string line;
    for (int c; (c = in.get()) != EOF;) {
      if (c != '\n') {
        if (line.size() >= kMaxJsonTextBytes) {
          std::cerr << "actmem: error: requests: a line is longer than " << kMaxJsonTextBytes
                    << " bytes (the most one request may have)\n";
          return 2;
        }
        line += static_cast<char>(c);
        continue;
      }
      if (!line.empty()) std::cout << evaluate(line) << "\n";
      line.clear();
    }
    if (!line.empty()) std::cout << evaluate(line) << "\n";
    return 0;
  }
  cli::Options opt;
  const std::string err = cli::parse_args(args, &opt);
  if (!err.empty()) {
    std::cerr << "actmem: error: " << cli::printable(err) << "\n";
    return 2;
  }
  if (opt.help) {
    std::cout << cli::kUsage;
    return 0;
  }
  const nlohmann::json r = evaluate_json(opt.request);
  if (!r.value("ok", false)) {
    if (opt.json) std::cout << r.dump() << "\n";
    std::cerr << "actmem: error: " << cli::printable(r["error"]["message"].get<std::string>())
              << "\n";
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

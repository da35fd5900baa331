// actmem-validate's flags: integers parsed strictly (digits only, checked against their range),
// the rest handed to the CLI's parser, then the executor's configuration and problem-size bound.
#include "validate_args.hpp"

#include <nlohmann/json.hpp>

#include "../cli/args.hpp"
#include "actmem/setup.hpp"

namespace actmem::exec {

namespace {

using cli::shown;

// A decimal integer in [lo, hi]: digits only (no sign, space, hex or exponent), no wrap.
bool parse_uint(const std::string& s, std::uint64_t lo, std::uint64_t hi, std::uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  std::uint64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    if (__builtin_mul_overflow(v, 10, &v) ||
        __builtin_add_overflow(v, static_cast<std::uint64_t>(ch - '0'), &v))
      return false;
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

Error bad(const std::string& field, const std::string& msg) {
  return Error{"invalid_value", field, field + ": " + msg};
}

}  // namespace

Result<ValidateArgs> parse_validate_args(const std::vector<std::string>& argv) {
  ValidateArgs a;
  std::vector<std::string> rest{"estimate"};
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& f = argv[i];
    const bool valued =
        f == "--executor" || f == "--seed" || f == "--fd-probes" || f == "--reference";
    if (!valued) {
      if (f == "--json")
        a.json = true;
      else if (f == "--help" || f == "-h")
        a.help = true;
      else
        rest.push_back(f);
      continue;
    }
    if (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0)
      return bad(f, "needs a value" +
                        (i + 1 < argv.size() ? ", got the option " + shown(argv[i + 1]) : ""));
    const std::string& v = argv[++i];
    std::uint64_t n = 0;
    if (f == "--executor") {
      a.options.executor = v;
    } else if (f == "--seed") {
      if (!parse_uint(v, 0, UINT64_MAX, &n))
        return bad(f, shown(v) + " is not a seed; allowed: an integer from 0 to 2^64-1");
      a.options.seed = n;
    } else if (f == "--fd-probes") {
      if (!parse_uint(v, 0, kMaxFdProbes, &n))
        return bad(f, shown(v) + " is not allowed; allowed: an integer from 0 to " +
                          std::to_string(kMaxFdProbes));
      a.options.fd_probes = static_cast<int>(n);
    } else {
      if (v != "auto" && v != "on" && v != "off")
        return bad(f, shown(v) + " is not allowed; allowed: auto, on, off");
      a.options.reference = v == "auto" ? -1 : v == "on" ? 1 : 0;
    }
  }
  if (a.help) return a;
  cli::Options opt;
  const std::string err = cli::parse_args(rest, &opt);
  if (!err.empty()) return Error{"invalid_value", "args", err};
  auto cfg = executor_config(opt.request, a.options.executor);
  if (!cfg.ok()) return cfg.error();
  a.model = cfg.value().first;
  // The config as the engine resolves it (seq 0 becomes 2048, micro-batches filled in), so the
  // bounds and the reference's size test see the sequence that will run.
  auto setup = make_setup(a.model, cfg.value().second);
  if (!setup.ok()) return setup.error();
  a.config = setup.value().config;
  if (auto e = check_problem_size(a.model, a.config, a.options)) return *e;
  return a;
}

}  // namespace actmem::exec

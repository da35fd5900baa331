// actmem-validate's flags: integers parsed strictly (digits only, checked against their range),
// the rest handed to the CLI's parser, then the executor's configuration and problem-size bound.
#include "validate_args.hpp"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "../cli/args.hpp"
#include "actmem/setup/setup.hpp"

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
  std::vector<std::string> seen;  // the validator's own valued flags, each at most once
  bool fd_given = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    // "--flag=value" is "--flag value", as in actmem's own parser.
    std::string f = argv[i];
    std::optional<std::string> inline_value;
    const std::size_t eq = f.find('=');
    if (f.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = f.substr(eq + 1);
      f = f.substr(0, eq);
    }
    const bool valued =
        f == "--executor" || f == "--seed" || f == "--fd-probes" || f == "--reference";
    if (!valued) {
      if ((f == "--json" || f == "--help" || f == "-h") && inline_value)
        return bad(f,
                   "takes no value, got " + shown(argv[i].substr(eq)) + "; give " + f + " alone");
      if (f == "--json")
        a.json = true;
      else if (f == "--help" || f == "-h")
        a.help = true;
      else
        rest.push_back(argv[i]);
      continue;
    }
    if (!inline_value && (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0))
      return bad(f, "needs a value" +
                        (i + 1 < argv.size() ? ", got the option " + shown(argv[i + 1]) : ""));
    const std::string v = inline_value ? *inline_value : argv[++i];
    // A second value would replace the first without a word: refused (an equal repeat too, as
    // one of the two was probably meant as another flag).
    for (const std::string& s : seen)
      if (s == f) return bad(f, "given twice; give it once");
    seen.push_back(f);
    std::uint64_t n = 0;
    if (f == "--executor") {
      if (v != "cpu" && v != "cuda")
        return bad(f, shown(v) + " is not allowed; allowed: cpu, cuda");
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
      fd_given = true;
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
  // Each probe is four fp64 forwards on the CPU: the probes are bounded by their work
  // (kMaxFdWork). The default shrinks to fit; an explicit count past it is refused.
  const std::uint64_t most = fd_probe_limit(a.model, a.config);
  if (!fd_given) {
    a.options.fd_probes = static_cast<int>(std::min<std::uint64_t>(a.options.fd_probes, most));
  } else if (static_cast<std::uint64_t>(a.options.fd_probes) > most) {
    return Error{"too_large", "--fd-probes",
                 "--fd-probes: " + std::to_string(a.options.fd_probes) +
                     " probes at this problem size are more than the " + std::to_string(most) +
                     " the finite-difference work bound allows; give at most " +
                     std::to_string(most)};
  }
  return a;
}

}  // namespace actmem::exec

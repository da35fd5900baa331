// `actmem`'s commands: parse, ask the engine, print; exit 2 on bad input (one escaped line).
#include "run.hpp"

#include <filesystem>
#include <fstream>
#include <istream>
#include <ostream>

#include "actmem/compare/pickle.hpp"
#include "actmem/json_io.hpp"
#include "args.hpp"
#include "table.hpp"

namespace actmem::cli {

namespace {

// A line of JSON whitespace only (RFC 8259 section 2: space, tab, CR, LF) holds no request: skipped
// like an empty line, so a CRLF file or a trailing "   " is not an error answer.
bool blank(const std::string& line) {
  return line.find_first_not_of(" \t\r") == std::string::npos;
}

// A file's bytes, at most `limit` of them; "" or the reason it cannot be read.
std::string read_bounded(const std::string& path, std::uint64_t limit, std::string* out) {
  const std::string name =
      nlohmann::json(path).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return name + " is not a readable file";
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot read " + name;
  char piece[1 << 16];
  out->clear();
  while (f) {
    f.read(piece, sizeof piece);
    out->append(piece, static_cast<std::size_t>(f.gcount()));
    if (out->size() > limit)
      return name + " is larger than the " + std::to_string(limit) + " bytes read";
  }
  return "";
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
            std::ostream& errs) {
  if (!args.empty() && args[0] == "requests") {
    // The page's own requests, one JSON per line ("-" reads stdin): each answer is evaluate()'s
    // text verbatim, the bytes the page receives (tests compare the two).
    if (args.size() != 2) {
      errs << "actmem: error: requests: needs one file of JSON requests, one per line\n";
      return 2;
    }
    std::ifstream file;
    if (args[1] != "-") {
      std::error_code ec;
      if (std::filesystem::is_directory(args[1], ec)) {
        errs << "actmem: error: requests: "
             << nlohmann::json(args[1]).dump(-1, ' ', true,
                                             nlohmann::json::error_handler_t::replace)
             << " is a directory; allowed: a file of JSON requests, one per line, or -\n";
        return 2;
      }
      file.open(args[1], std::ios::binary);
      if (!file) {
        errs << "actmem: error: requests: cannot read "
             << nlohmann::json(args[1]).dump(-1, ' ', true,
                                             nlohmann::json::error_handler_t::replace)
             << "\n";
        return 2;
      }
    }
    std::istream& src = args[1] == "-" ? in : file;
    // Lines are read with a bound (kMaxJsonTextBytes): /dev/zero or a file without newlines
    // stops at the bound with an error instead of filling memory.
    std::string line;
    for (int c; (c = src.get()) != EOF;) {
      if (c != '\n') {
        if (line.size() >= kMaxJsonTextBytes) {
          errs << "actmem: error: requests: a line is longer than " << kMaxJsonTextBytes
               << " bytes (the most one request may have)\n";
          return 2;
        }
        line += static_cast<char>(c);
        continue;
      }
      if (!blank(line)) out << evaluate(line) << "\n";
      line.clear();
    }
    if (!blank(line)) out << evaluate(line) << "\n";
    return 0;
  }
  Options opt;
  const std::string err = parse_args(args, &opt);
  if (!err.empty()) {
    errs << "actmem: error: " << printable(err) << "\n";
    return 2;
  }
  if (opt.help) {
    out << kUsage;
    return 0;
  }
  // The timeline table prints no events: do not ask for them.
  if (opt.command == "timeline" && !opt.json && !opt.csv) opt.request["events"] = "none";
  nlohmann::json r;
  if (opt.command == "compare") {
    std::string snapshot;
    if (const std::string e = read_bounded(opt.snapshot_path, kMaxSnapshotBytes, &snapshot);
        !e.empty()) {
      errs << "actmem: error: compare: " << printable(e) << "\n";
      return 2;
    }
    if (!opt.stats_path.empty()) {
      std::string text;
      if (const std::string e = read_bounded(opt.stats_path, kMaxJsonTextBytes, &text);
          !e.empty()) {
        errs << "actmem: error: --stats: " << printable(e) << "\n";
        return 2;
      }
      auto stats = parse_json_text(text, "stats");
      if (!stats.ok()) {
        errs << "actmem: error: " << printable(stats.error().message) << "\n";
        return 2;
      }
      opt.request["stats"] = stats.value();
    }
    r = compare_json(opt.request, snapshot);
  } else {
    r = evaluate_json(opt.request);
  }
  if (!r.value("ok", false)) {
    if (opt.json)
      out << terminal_safe_json(r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
          << "\n";
    errs << "actmem: error: " << printable(r["error"]["message"].get<std::string>()) << "\n";
    return 2;
  }
  // Emitted text line by line through printable (a model name from a user's file is in it).
  auto printable_lines = [](const std::string& t) {
    std::string o;
    for (std::size_t a = 0; a < t.size();) {
      const std::size_t nl = t.find('\n', a);
      const std::size_t end = nl == std::string::npos ? t.size() : nl;
      o += printable(t.substr(a, end - a));
      if (nl != std::string::npos) o += '\n';
      a = end + 1;
    }
    return o;
  };
  const bool emit = opt.request.contains("emit");
  if (emit && !opt.json) {
    // The emitted text alone (estimate, plan), or after advise's table for its first layout: what
    // a launch script or a training file takes.
    if (opt.command == "advise") {
      out << render_advice(r) << render_warnings(r);
      if (!r["layouts"].empty())
        out << "\n# layout 1 (" << opt.request["emit"].get<std::string>() << "):\n"
            << printable_lines(r["layouts"][0]["emit"].get<std::string>());
    } else {
      out << printable_lines(r[opt.command == "plan" ? "emit" : "text"].get<std::string>());
    }
    return 0;
  }
  if (opt.json) {
    out << terminal_safe_json(r.dump(2, ' ', false, nlohmann::json::error_handler_t::replace))
        << "\n";
  } else if (opt.command == "timeline") {
    out << (opt.csv ? render_timeline_csv(r) : render_timeline(r));
    if (!opt.csv) out << render_warnings(r);
  } else if (opt.command == "fit") {
    out << render_fit(r) << render_warnings(r);
  } else if (opt.command == "plan") {
    out << render_plan(r) << render_warnings(r);
  } else if (opt.command == "sweep") {
    out << render_sweep(r);
  } else if (opt.command == "presets") {
    out << render_presets(r);
  } else if (opt.command == "explain") {
    out << render_explain(r);
  } else if (opt.command == "compare") {
    out << render_compare(r);
  } else if (opt.command == "advise") {
    out << render_advice(r) << render_warnings(r);
  } else if (opt.command == "data") {
    out << render_data(r) << render_warnings(r);
  } else if (opt.command == "rl") {
    out << render_rl(r) << render_warnings(r);
  } else {
    out << render_estimate(r);
  }
  return 0;
}

}  // namespace actmem::cli

// Human-readable rendering of engine responses (formatting only; every number comes from the
// engine).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace actmem::cli {

// s with control characters (C0, DEL, C1) and invalid UTF-8 bytes written as \xNN / \u00NN.
std::string printable(const std::string& s);
std::string format_bytes(unsigned long long bytes);  // "67,108,864 B (64.00 MiB)"
std::string render_estimate(const nlohmann::json& r);
std::string render_explain(const nlohmann::json& r);
std::string render_compare(const nlohmann::json& r);
std::string render_presets(const nlohmann::json& r);
std::string render_timeline(const nlohmann::json& r);
std::string render_timeline_csv(const nlohmann::json& r);
std::string render_fit(const nlohmann::json& r);
std::string render_plan(const nlohmann::json& r);
std::string render_advice(const nlohmann::json& r);
std::string render_data(const nlohmann::json& r);
std::string render_rl(const nlohmann::json& r);
// The answer's "warnings" (what was not read, what was assumed), one "note:" line each.
std::string render_warnings(const nlohmann::json& r);
std::string render_sweep(const nlohmann::json& r);

}  // namespace actmem::cli

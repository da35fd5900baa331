// Reads training configs and GPU specs, and resolves preset ids against the compiled-in presets.
#include <cstring>

#include "actmem/json_io.hpp"
#include "actmem/names.hpp"
#include "actmem/presets.hpp"
#include "actmem/size.hpp"
#include "json_read.hpp"

namespace actmem {

using detail::json;

namespace {

const char* const kConfigKeys[] = {"micro_batch",
                                   "seq",
                                   "grad_accum",
                                   "dtype",
                                   "param_dtype",
                                   "grad_dtype",
                                   "master_weights",
                                   "optimizer",
                                   "dropout",
                                   "attention_dropout",
                                   "hidden_dropout",
                                   "attention",
                                   "profile",
                                   "tp",
                                   "sp",
                                   "pp",
                                   "vpp",
                                   "cp",
                                   "dp",
                                   "zero",
                                   "ep",
                                   "recompute",
                                   "offload",
                                   "gpu",
                                   "gpu_memory_bytes",
                                   "gpu_memory",
                                   "schedule",
                                   "micro_batches",
                                   "layer_split",
                                   "fragmentation_pct",
                                   "custom_keep",
                                   "cublas_workspace_bytes",
                                   "grad_bucket_bytes"};
constexpr std::size_t kNumConfigKeys = sizeof(kConfigKeys) / sizeof(kConfigKeys[0]);

}  // namespace

Result<TrainConfig> config_from_json(const json& j, TrainConfig c) {
  if (!j.is_object())
    return make_error("wrong_type", "config",
                      "config: must be a JSON object, got " + detail::kind_of(j));
  ACTMEM_TRY(detail::check_keys(j, "config", kConfigKeys, kNumConfigKeys));
  auto u = [&](const char* k, std::uint64_t* out, bool allow_zero = false) -> std::optional<Error> {
    if (!j.contains(k)) return std::nullopt;
    return detail::read_uint(j[k], std::string("config.") + k, out, allow_zero);
  };
  auto b = [&](const char* k, bool* out) -> std::optional<Error> {
    if (!j.contains(k)) return std::nullopt;
    return detail::read_bool(j[k], std::string("config.") + k, out);
  };
  auto choice = [&](const char* k, auto parse, auto* out,
                    const std::string& allowed) -> std::optional<Error> {
    if (!j.contains(k)) return std::nullopt;
    const std::string field = std::string("config.") + k;
    std::string s;
    ACTMEM_TRY(detail::read_string(j[k], field, &s));
    if (!parse(s, out))
      return make_error(
          "invalid_value", field,
          field + ": '" + detail::key_text(s) + "' is not allowed; allowed: " + allowed);
    return std::nullopt;
  };
  auto prob = [&](const char* k, double* out) -> std::optional<Error> {
    if (!j.contains(k)) return std::nullopt;
    const std::string field = std::string("config.") + k;
    ACTMEM_TRY(detail::read_double(j[k], field, out));
    if (*out < 0.0 || *out >= 1.0)
      return make_error("invalid_value", field,
                        field + ": must be in [0, 1), got " + detail::short_dump(j[k]));
    return std::nullopt;
  };
  ACTMEM_TRY(u("micro_batch", &c.micro_batch));
  ACTMEM_TRY(u("seq", &c.seq));
  ACTMEM_TRY(u("grad_accum", &c.grad_accum));
  ACTMEM_TRY(choice("dtype", parse_float_dtype, &c.act_dtype, float_dtype_table().list()));
  ACTMEM_TRY(choice("param_dtype", parse_float_dtype, &c.param_dtype, float_dtype_table().list()));
  ACTMEM_TRY(choice("grad_dtype", parse_float_dtype, &c.grad_dtype, float_dtype_table().list()));
  ACTMEM_TRY(b("master_weights", &c.master_weights));
  ACTMEM_TRY(choice("optimizer", parse_optimizer, &c.optimizer, optimizer_table().list()));
  double dropout = -1.0;
  ACTMEM_TRY(prob("dropout", &dropout));
  if (dropout >= 0.0) c.attention_dropout = c.hidden_dropout = dropout;
  ACTMEM_TRY(prob("attention_dropout", &c.attention_dropout));
  ACTMEM_TRY(prob("hidden_dropout", &c.hidden_dropout));
  ACTMEM_TRY(choice("attention", parse_attention, &c.attention, attention_table().list()));
  ACTMEM_TRY(choice("profile", parse_profile, &c.profile, profile_table().list()));
  ACTMEM_TRY(u("tp", &c.par.tp));
  ACTMEM_TRY(b("sp", &c.par.sp));
  ACTMEM_TRY(u("pp", &c.par.pp));
  ACTMEM_TRY(u("vpp", &c.par.vpp));
  ACTMEM_TRY(u("cp", &c.par.cp));
  ACTMEM_TRY(u("dp", &c.par.dp));
  std::uint64_t zero = static_cast<std::uint64_t>(c.par.zero);
  ACTMEM_TRY(u("zero", &zero, true));
  if (zero > 3)
    return make_error(
        "invalid_value", "config.zero",
        "config.zero: " + std::to_string(zero) + " is not a ZeRO stage; allowed: 0, 1, 2, 3");
  c.par.zero = static_cast<int>(zero);
  ACTMEM_TRY(u("ep", &c.par.ep));
  ACTMEM_TRY(choice("recompute", parse_recompute, &c.recompute, recompute_names()));
  ACTMEM_TRY(b("offload", &c.recompute.offload));
  if (j.contains("gpu")) {
    ACTMEM_TRY(detail::read_string(j["gpu"], "config.gpu", &c.gpu_id));
    if (!find_preset("gpus", c.gpu_id))
      return make_error("unknown_preset", "config.gpu",
                        "config.gpu: unknown GPU '" + detail::key_text(c.gpu_id) +
                            "'; allowed: " + preset_ids("gpus"));
  }
  ACTMEM_TRY(u("gpu_memory_bytes", &c.gpu_bytes));
  if (c.gpu_bytes > kMaxBytes)
    return make_error(
        "invalid_value", "config.gpu_memory_bytes",
        "config.gpu_memory_bytes: " + std::to_string(c.gpu_bytes) + " exceeds 2^63-1 bytes");
  // gpu_memory: a size as text ("80GiB"), parsed exactly (size.hpp); one of the two keys.
  if (j.contains("gpu_memory")) {
    if (j.contains("gpu_memory_bytes"))
      return make_error("invalid_value", "config.gpu_memory",
                        "config.gpu_memory: give gpu_memory or gpu_memory_bytes, not both");
    std::string text;
    ACTMEM_TRY(detail::read_string(j["gpu_memory"], "config.gpu_memory", &text));
    if (!parse_size(text, &c.gpu_bytes))
      return make_error("invalid_value", "config.gpu_memory",
                        "config.gpu_memory: '" + detail::key_text(text) +
                            "' is not a size; allowed: " + kSizeAllowed);
  }
  ACTMEM_TRY(choice("schedule", parse_schedule, &c.schedule, schedule_table().list()));
  ACTMEM_TRY(u("micro_batches", &c.grad_accum));  // the pipeline name for grad_accum
  if (j.contains("grad_accum") && j.contains("micro_batches") &&
      j["grad_accum"] != j["micro_batches"])
    return make_error(
        "invalid_value", "config.micro_batches",
        "config.micro_batches: " + detail::short_dump(j["micro_batches"]) +
            " conflicts with config.grad_accum: " + detail::short_dump(j["grad_accum"]) +
            " (two names for the micro-batches per step); give one");
  // Fixed per-GPU buffers: bounded so that the sums they join cannot overflow and blame another
  // field; a petabyte is a million times any real workspace or bucket.
  for (auto [k, out] :
       {std::pair<const char*, Bytes*>{"cublas_workspace_bytes", &c.cublas_workspace},
        {"grad_bucket_bytes", &c.grad_bucket}}) {
    ACTMEM_TRY(u(k, out, true));
    if (*out > kMaxBufferBytes)
      return make_error("invalid_value", std::string("config.") + k,
                        std::string("config.") + k + ": " + std::to_string(*out) +
                            " is more than the 2^50 bytes (1 PiB) allowed");
  }
  if (j.contains("fragmentation_pct")) {
    ACTMEM_TRY(detail::read_double(j["fragmentation_pct"], "config.fragmentation_pct",
                                   &c.fragmentation_pct));
    if (c.fragmentation_pct < 0 || c.fragmentation_pct > 100)
      return make_error("invalid_value", "config.fragmentation_pct",
                        "config.fragmentation_pct: must be between 0 and 100");
  }
  if (j.contains("layer_split")) {
    const json& a = j["layer_split"];
    if (!a.is_array() || a.size() > kMaxLayerSplitEntries)
      return make_error(
          "wrong_type", "config.layer_split",
          "config.layer_split: must be an array of layer counts, one per pipeline stage (at most " +
              std::to_string(kMaxLayerSplitEntries) + ")");
    c.layer_split.clear();
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::uint64_t n = 0;
      ACTMEM_TRY(detail::read_uint(a[i], "config.layer_split[" + std::to_string(i) + "]", &n));
      c.layer_split.push_back(n);
    }
  }
  if (j.contains("custom_keep")) {
    const json& a = j["custom_keep"];
    if (!a.is_array() || a.size() > kMaxCustomKeep)
      return make_error("wrong_type", "config.custom_keep",
                        "config.custom_keep: must be an array of at most " +
                            std::to_string(kMaxCustomKeep) + " tensor ids such as \"attn.qkv_in\"");
    c.recompute.custom_keep.clear();
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::string id;
      ACTMEM_TRY(detail::read_string(a[i], "config.custom_keep[" + std::to_string(i) + "]", &id));
      c.recompute.custom_keep.push_back(id);
    }
  }
  return c;
}

Result<GpuSpec> gpu_from_json(const json& j, const std::string& id) {
  if (!j.is_object()) return make_error("wrong_type", "gpu", "gpu: must be a JSON object");
  static const char* const kKeys[] = {"name",   "memory_bytes",      "memory_note",
                                      "source", "bf16_dense_tflops", "memory_bandwidth_gbs"};
  ACTMEM_TRY(detail::check_keys(j, "gpu", kKeys, sizeof(kKeys) / sizeof(kKeys[0])));
  GpuSpec g;
  g.id = id;
  g.name = id;
  if (j.contains("name")) ACTMEM_TRY(detail::read_string(j["name"], "gpu.name", &g.name));
  if (!j.contains("memory_bytes"))
    return make_error("missing_key", "gpu.memory_bytes", "gpu.memory_bytes: required");
  ACTMEM_TRY(detail::read_uint(j["memory_bytes"], "gpu.memory_bytes", &g.memory_bytes));
  if (g.memory_bytes > kMaxBytes)
    return make_error("invalid_value", "gpu.memory_bytes", "gpu.memory_bytes: exceeds 2^63-1");
  if (j.contains("source")) ACTMEM_TRY(detail::read_string(j["source"], "gpu.source", &g.source));
  return g;
}

const PresetText* find_preset(const std::string& kind, const std::string& id) {
  for (const auto& p : all_presets())
    if (kind == p.kind && id == p.id) return &p;
  return nullptr;
}

std::string preset_ids(const std::string& kind) {
  std::string s;
  for (const auto& p : all_presets())
    if (kind == p.kind) s += (s.empty() ? "" : ", ") + std::string(p.id);
  return s;
}

namespace {

// How deep the text nests objects and arrays (brackets inside strings skipped), stopping early
// once past `limit`: checked before parsing, so no client ever builds, copies or walks a tree
// deeper than the limit (a recursive copy of 100,000 nested objects overflowed the CLI's stack).
std::size_t nesting(const std::string& text, std::size_t limit) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) break;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

Result<json> parse_json_text(const std::string& text, const std::string& field) {
  if (text.size() > kMaxJsonTextBytes)
    return make_error("too_large", field,
                      field + ": " + std::to_string(text.size()) + " bytes is more than the " +
                          std::to_string(kMaxJsonTextBytes) +
                          " bytes a request, model or config may have");
  if (nesting(text, kMaxJsonDepth) > kMaxJsonDepth)
    return make_error("too_deep", field,
                      field + ": nests objects and arrays more than " +
                          std::to_string(kMaxJsonDepth) + " levels deep");
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    // Re-run with a SAX handler that records where the parse stopped, for a useful message.
    struct Where : json::json_sax_t {
      std::size_t pos = 0;
      bool null() override { return true; }
      bool boolean(bool) override { return true; }
      bool number_integer(number_integer_t) override { return true; }
      bool number_unsigned(number_unsigned_t) override { return true; }
      bool number_float(number_float_t, const string_t&) override { return true; }
      bool string(string_t&) override { return true; }
      bool binary(binary_t&) override { return true; }
      bool start_object(std::size_t) override { return true; }
      bool key(string_t&) override { return true; }
      bool end_object() override { return true; }
      bool start_array(std::size_t) override { return true; }
      bool end_array() override { return true; }
      bool parse_error(std::size_t p, const std::string&,
                       const nlohmann::detail::exception&) override {
        pos = p;
        return false;
      }
    } where;
    json::sax_parse(text, &where, json::input_format_t::json, false);
    return make_error("malformed_json", field,
                      field + ": malformed JSON near byte " + std::to_string(where.pos) +
                          " (NaN, Infinity, comments and trailing commas are not JSON)");
  }
  return j;
}

namespace {

// Each model preset parsed once: the presets are compiled in and never change, so every request
// naming one reuses its ModelSpec (and the warnings reading it gave). Built on first use, then
// read only.
struct ParsedPreset {
  std::string id;
  Result<ModelSpec> model;
  std::vector<std::string> warnings;
};

const std::vector<ParsedPreset>& parsed_presets() {
  static const std::vector<ParsedPreset> all = [] {
    std::vector<ParsedPreset> v;
    for (const PresetText& p : all_presets()) {
      if (std::string(p.kind) != "models") continue;
      std::vector<std::string> w;
      auto j = parse_json_text(p.json, "preset");
      Result<ModelSpec> m = j.ok() ? model_from_json(j.value(), p.id, &w) : j.error();
      v.push_back(ParsedPreset{p.id, std::move(m), std::move(w)});
    }
    return v;
  }();
  return all;
}

}  // namespace

Result<ModelSpec> model_preset(const std::string& id, std::vector<std::string>* warnings) {
  for (const ParsedPreset& p : parsed_presets())
    if (p.id == id) {
      if (warnings) warnings->insert(warnings->end(), p.warnings.begin(), p.warnings.end());
      return p.model;
    }
  return make_error(
      "unknown_preset", "preset",
      "preset: unknown model '" + detail::key_text(id) + "'; allowed: " + preset_ids("models"));
}

Result<GpuSpec> gpu_preset(const std::string& id) {
  const PresetText* p = find_preset("gpus", id);
  if (!p)
    return make_error(
        "unknown_preset", "config.gpu",
        "config.gpu: unknown GPU '" + detail::key_text(id) + "'; allowed: " + preset_ids("gpus"));
  auto j = parse_json_text(p->json, "gpu");
  if (!j.ok()) return j.error();
  return gpu_from_json(j.value(), id);
}

}  // namespace actmem

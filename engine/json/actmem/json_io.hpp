// The JSON adapter (clients that speak JSON: the CLI, the page's bindings, the fuzzers, the tests):
// model specs (ours or a Hugging Face config.json), training configs and GPUs from JSON, the
// answers as JSON. The engine's own headers (engine/include/actmem/) do not expose nlohmann; the
// string entry point is actmem/api.hpp.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actmem/api/api.hpp"
#include "actmem/config/config.hpp"
#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"
#include "actmem/report/estimate.hpp"

namespace actmem {

// Parses text without exceptions; a syntax error names `field` and the byte offset; text over
// kMaxJsonTextBytes or nested deeper than kMaxJsonDepth is refused before parsing.
Result<nlohmann::json> parse_json_text(const std::string& text, const std::string& field);

// JSON text made safe for a terminal: DEL (0x7F) and the C1 controls (U+0080-U+009F, UTF-8
// C2 80-C2 9F; U+009B is a one-byte CSI) are legal raw inside JSON strings, so a name from a
// user's file could reach `actmem --json | less` as an escape sequence. They only occur inside
// strings, so writing them as \u00XX keeps the text the same JSON value.
std::string terminal_safe_json(std::string text);

// A model object. With "model_type" it is read as a Hugging Face config.json (keys that do not
// change memory are ignored, unknown ones reported in `warnings`); without it, strictly.
Result<ModelSpec> model_from_json(const nlohmann::json& j, const std::string& id,
                                  std::vector<std::string>* warnings);

// A training config object layered over `base`; unknown keys are errors.
Result<TrainConfig> config_from_json(const nlohmann::json& j, TrainConfig base);
// Every key config_from_json reads, in its table's order (the page's key-coverage check).
std::vector<const char*> config_keys();

Result<GpuSpec> gpu_from_json(const nlohmann::json& j, const std::string& id);

// The estimate answer as text (streamed; evaluate_json parses it), and the headline answer of a
// "summary": true request.
std::string estimate_text(const Estimate& e);
std::string summary_text(const Estimate& e);
nlohmann::json error_to_json(const Error& e);
// compact: each event as [label, live_bytes, activations, recompute, transients] (the page's
// chart).
nlohmann::json timeline_to_json(const Estimate& e, const struct Timeline& t, bool compact = false);
nlohmann::json fit_to_json(const struct FitResult& f);
nlohmann::json plan_to_json(const struct Plan& p);
nlohmann::json sweep_to_json(const struct Sweep& s);
nlohmann::json compare_to_json(const struct Comparison& c);
nlohmann::json advice_to_json(const struct Advice& a);
nlohmann::json data_to_json(const struct DataAnswer& a);
nlohmann::json rl_to_json(const struct RlAnswer& a);
// The "view" answer: the page's whole screen for one configuration (view.hpp), streamed, with the
// estimate answer's text (and a worked example's checks, when given) nested in it.
std::string view_text(const struct View& v, const std::string& estimate_answer,
                      const std::string& example_answer);

// A Megatron-LM launch's arguments (the request's "megatron_args"; text as in a launch script:
// whitespace-separated, `\` continuations, `#` comments, `--arg value` or `--arg=value`) as
// config keys (`config`), the global batch (`global_batch`, 0 when not given: the caller turns it
// into micro-batches with its dp) and what was not read (`warnings`). Model-defining arguments
// must match `m`; arguments that change memory in ways not modelled are errors naming them.
struct MegatronArgs {
  nlohmann::json config = nlohmann::json::object();
  std::uint64_t global_batch = 0;
  std::vector<std::string> warnings;
};
Result<MegatronArgs> read_megatron_args(const std::string& text, const ModelSpec& m);

// A torchtitan job config TOML (the request's "torchtitan_toml"; the layout of torchtitan 9dec370's
// train_configs/*.toml, the version whose defaults framework torchtitan follows) as config keys
// (`config`, with framework torchtitan). data_parallel_shard_degree -1, torchtitan's default,
// takes the ranks the job leaves: then `dp_from_job` is set and the caller needs config.dp.
// Model-defining keys must match `m`; keys that change memory in ways not modelled are errors
// naming them; keys not read are `warnings`.
struct TorchtitanToml {
  nlohmann::json config = nlohmann::json::object();
  bool dp_from_job = false;
  // training.mixed_precision_param as a dtype ("bf16", "fp32"): FSDP2's compute dtype, which
  // applies only when the layout shards (dp_shard x cp > 1); the caller checks it then.
  std::string mixed_precision = "bf16";
  std::vector<std::string> warnings;
};
Result<TorchtitanToml> read_torchtitan_toml(const std::string& text, const ModelSpec& m);

// evaluate() (api.hpp) on a parsed request.
nlohmann::json evaluate_json(const nlohmann::json& request);

// The compare command: `request` as for estimate (model, config, GPU) with "command": "compare"
// and optionally "stats" (the run's torch.cuda.memory_stats() object); `snapshot` the bytes of a
// torch.cuda.memory._snapshot() pickle (at most kMaxSnapshotBytes).
nlohmann::json compare_json(const nlohmann::json& request, std::string_view snapshot);

}  // namespace actmem

// A torchtitan job config TOML read as a training config (the request's "torchtitan_toml", the
// CLI's --torchtitan-toml FILE): the degrees, batch, precision, pipeline schedule and split,
// activation checkpointing and float8 become config keys under framework torchtitan; model keys
// are checked against the model; keys that change memory in ways the engine does not model are
// refused by name; keys not read are reported. Keys, types and defaults: torchtitan 9dec370
// (2024-12-26) torchtitan/config_manager.py l.55-605, the version framework.cpp's torchtitan
// defaults follow; what each key does: the parallelisms/ files of the same commit, cited below.
#include <algorithm>
#include <map>
#include <optional>

#include "actmem/core/checked.hpp"
#include "actmem/json_io.hpp"
#include "read/json_read.hpp"
#include "read/toml.hpp"

namespace actmem {

using nlohmann::json;

namespace {

constexpr const char* kField = "torchtitan_toml";

Error bad(const std::string& msg) {
  return make_error("invalid_value", kField, std::string(kField) + ": " + msg);
}

// What a key does to memory: nothing actmem counts (logging, data, checkpoints, the model's name,
// learning rate), read into the config, or read and refused unless it keeps torchtitan's default.
enum class Use { kHarmless, kRead };
enum class Type { kBool, kInt, kNumber, kString, kStringList };

struct Key {
  const char* section;
  const char* name;
  Type type;
  Use use;
};

// config_manager.py at 9dec370, section by section.
const Key kKeys[] = {
    {"job", "config_file", Type::kString, Use::kHarmless},
    {"job", "dump_folder", Type::kString, Use::kHarmless},
    {"job", "description", Type::kString, Use::kHarmless},
    {"job", "use_for_integration_test", Type::kBool, Use::kHarmless},
    {"job", "print_args", Type::kBool, Use::kHarmless},
    {"profiling", "enable_profiling", Type::kBool, Use::kHarmless},
    {"profiling", "save_traces_folder", Type::kString, Use::kHarmless},
    {"profiling", "profile_freq", Type::kInt, Use::kHarmless},
    {"profiling", "enable_memory_snapshot", Type::kBool, Use::kHarmless},
    {"profiling", "save_memory_snapshot_folder", Type::kString, Use::kHarmless},
    {"metrics", "log_freq", Type::kInt, Use::kHarmless},
    {"metrics", "enable_tensorboard", Type::kBool, Use::kHarmless},
    {"metrics", "disable_color_printing", Type::kBool, Use::kHarmless},
    {"metrics", "save_tb_folder", Type::kString, Use::kHarmless},
    {"metrics", "rank_0_only", Type::kBool, Use::kHarmless},
    {"metrics", "enable_wandb", Type::kBool, Use::kHarmless},
    {"model", "name", Type::kString, Use::kRead},
    {"model", "flavor", Type::kString, Use::kRead},
    {"model", "norm_type", Type::kString, Use::kRead},
    {"model", "tokenizer_path", Type::kString, Use::kHarmless},
    {"optimizer", "name", Type::kString, Use::kRead},
    {"optimizer", "lr", Type::kNumber, Use::kHarmless},
    {"optimizer", "fused", Type::kBool, Use::kRead},
    {"optimizer", "early_step_in_backward", Type::kBool, Use::kRead},
    {"training", "dataset", Type::kString, Use::kHarmless},
    {"training", "dataset_path", Type::kString, Use::kHarmless},
    {"training", "batch_size", Type::kInt, Use::kRead},
    {"training", "seq_len", Type::kInt, Use::kRead},
    {"training", "warmup_steps", Type::kInt, Use::kHarmless},
    {"training", "max_norm", Type::kNumber, Use::kHarmless},
    {"training", "steps", Type::kInt, Use::kHarmless},
    {"training", "data_parallel_replicate_degree", Type::kInt, Use::kRead},
    {"training", "data_parallel_shard_degree", Type::kInt, Use::kRead},
    {"training", "enable_cpu_offload", Type::kBool, Use::kRead},
    {"training", "tensor_parallel_degree", Type::kInt, Use::kRead},
    {"training", "disable_loss_parallel", Type::kBool, Use::kRead},
    {"training", "mixed_precision_param", Type::kString, Use::kRead},
    {"training", "mixed_precision_reduce", Type::kString, Use::kRead},
    {"training", "compile", Type::kBool, Use::kRead},
    {"training", "gc_freq", Type::kInt, Use::kHarmless},
    {"training", "seed", Type::kInt, Use::kHarmless},
    {"training", "deterministic", Type::kBool, Use::kHarmless},
    {"experimental", "enable_async_tensor_parallel", Type::kBool, Use::kRead},
    {"experimental", "pipeline_parallel_degree", Type::kInt, Use::kRead},
    {"experimental", "pipeline_parallel_split_points", Type::kStringList, Use::kRead},
    {"experimental", "pipeline_parallel_schedule", Type::kString, Use::kRead},
    {"experimental", "pipeline_parallel_schedule_csv", Type::kString, Use::kRead},
    {"experimental", "pipeline_parallel_microbatches", Type::kInt, Use::kRead},
    {"experimental", "enable_compiled_autograd", Type::kBool, Use::kRead},
    {"experimental", "context_parallel_degree", Type::kInt, Use::kRead},
    {"experimental", "context_parallel_rotate_method", Type::kString, Use::kRead},
    {"checkpoint", "enable_checkpoint", Type::kBool, Use::kHarmless},
    {"checkpoint", "folder", Type::kString, Use::kHarmless},
    {"checkpoint", "interval_type", Type::kString, Use::kHarmless},
    {"checkpoint", "interval", Type::kInt, Use::kHarmless},
    {"checkpoint", "model_weights_only", Type::kBool, Use::kHarmless},
    {"checkpoint", "export_dtype", Type::kString, Use::kHarmless},
    {"checkpoint", "create_seed_checkpoint", Type::kBool, Use::kHarmless},
    {"checkpoint", "async_mode", Type::kString, Use::kHarmless},
    {"checkpoint", "keep_latest_k", Type::kInt, Use::kHarmless},
    {"checkpoint", "load_step", Type::kInt, Use::kHarmless},
    {"activation_checkpoint", "mode", Type::kString, Use::kRead},
    {"activation_checkpoint", "selective_ac_option", Type::kString, Use::kRead},
    {"float8", "enable_float8_linear", Type::kBool, Use::kRead},
    {"float8", "enable_fsdp_float8_all_gather", Type::kBool, Use::kRead},
    {"float8", "precompute_float8_dynamic_scale_for_fsdp", Type::kBool, Use::kHarmless},
    {"float8", "scaling_type_input", Type::kString, Use::kRead},
    {"float8", "scaling_type_weight", Type::kString, Use::kRead},
    {"float8", "scaling_type_grad_output", Type::kString, Use::kRead},
    {"comm", "init_timeout_seconds", Type::kInt, Use::kHarmless},
    {"comm", "train_timeout_seconds", Type::kInt, Use::kHarmless},
    {"comm", "trace_buf_size", Type::kInt, Use::kHarmless},
    {"memory_estimation", "enabled", Type::kBool, Use::kHarmless},
    {"memory_estimation", "disable_fake_mode", Type::kBool, Use::kHarmless}};

// Sections of torchtitan's later layout (2025: [parallelism], [compile], [quantize], ...), whose
// keys and defaults are not 9dec370's.
const char* const kLaterSections[] = {"parallelism", "compile", "quantize", "lr_scheduler",
                                      "fault_tolerance"};

const char* type_name(Type t) {
  switch (t) {
    case Type::kBool:
      return "true or false";
    case Type::kInt:
      return "an integer";
    case Type::kNumber:
      return "a number";
    case Type::kString:
      return "a string";
    case Type::kStringList:
      return "an array of strings";
  }
  return "?";
}

bool has_type(const json& v, Type t) {
  switch (t) {
    case Type::kBool:
      return v.is_boolean();
    case Type::kInt:
      return v.is_number_integer();
    case Type::kNumber:
      return v.is_number() || (v.is_string() && (v == "inf" || v == "-inf" || v == "nan"));
    case Type::kString:
      return v.is_string();
    case Type::kStringList:
      return v.is_array() &&
             std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); });
  }
  return false;
}

// Llama 3's flavors at 9dec370 (torchtitan/models/llama/__init__.py l.13-42), the only model
// torchtitan/models/__init__.py builds: hidden size, layers.
struct Flavor {
  const char* name;
  std::uint64_t dim, layers;
};
const Flavor kLlama3Flavors[] = {
    {"debugmodel", 256, 8}, {"8B", 4096, 32}, {"70B", 8192, 80}, {"405B", 16384, 126}};

// The keys read, by "section.key", each of its type; torchtitan's defaults for those absent.
struct Values {
  std::map<std::string, json> values;
  bool has(const char* k) const { return values.count(k) != 0; }
  json& operator[](const std::string& k) { return values[k]; }
  bool flag(const char* k) { return has(k) && values[k].get<bool>(); }
  std::string str(const char* k, const char* dflt) {
    return has(k) ? values[k].get<std::string>() : std::string(dflt);
  }
  // An integer key, at least `least`, with torchtitan's default when absent.
  std::optional<Error> integer(const char* k, std::int64_t dflt, std::int64_t least,
                               std::int64_t* x) {
    *x = has(k) ? values[k].get<std::int64_t>() : dflt;
    if (*x < least)
      return bad(std::string(k) + " " + std::to_string(*x) + ": must be at least " +
                 std::to_string(least));
    return std::nullopt;
  }
};

// The values, each checked against its type; what is not a known key is reported.
std::optional<Error> collect_values(const json& root, Values* values,
                                    std::vector<std::string>* warnings) {
  std::map<std::string, json>& v = values->values;  // "section.key"
  for (auto s = root.begin(); s != root.end(); ++s) {
    const std::string& sec = s.key();
    if (std::find(std::begin(kLaterSections), std::end(kLaterSections), sec) !=
        std::end(kLaterSections))
      return bad("[" + shown_text(sec) +
                 "] is torchtitan's later layout; actmem reads 9dec370's (degrees in [training] "
                 "and [experimental]), the version framework torchtitan's defaults follow");
    if (!s.value().is_object()) {
      warnings->push_back(std::string(kField) + ": " + detail::short_dump(json(sec)) +
                          " is not a table torchtitan reads; check that it does not change "
                          "memory");
      continue;
    }
    for (auto k = s.value().begin(); k != s.value().end(); ++k) {
      const std::string name = sec + "." + k.key();
      const Key* key = nullptr;
      for (const Key& x : kKeys)
        if (sec == x.section && k.key() == x.name) key = &x;
      if (key == nullptr) {
        warnings->push_back(std::string(kField) + ": " + detail::short_dump(json(name)) +
                            " is not read by actmem; check that it does not change memory");
        continue;
      }
      if (!has_type(k.value(), key->type))
        return bad(shown_text(name) + " " + detail::short_dump(k.value()) + ": must be " +
                   type_name(key->type) + " (torchtitan 9dec370 config_manager.py)");
      if (key->use == Use::kRead) v[name] = k.value();
    }
  }
  return std::nullopt;
}

// Keys torchtitan reads that change memory in ways actmem does not model: refused when set.
std::optional<Error> refuse_unmodelled(Values& v) {
  const std::pair<const char*, const char*> unmodelled[] = {
      {"experimental.enable_compiled_autograd", "compiled autograd is not modelled"},
      {"training.enable_cpu_offload",
       "FSDP2's CPU offload of parameters, gradients and optimizer states is not modelled"},
      {"optimizer.early_step_in_backward",
       "stepping the optimizer in backward frees gradients early, which is not modelled"}};
  for (const auto& [k, why] : unmodelled)
    if (v.flag(k))
      return bad(std::string(k) + " = true: " + why + "; remove it to estimate the run without it");
  if (v.has("experimental.pipeline_parallel_schedule_csv") &&
      !v["experimental.pipeline_parallel_schedule_csv"].get<std::string>().empty())
    return bad(
        "experimental.pipeline_parallel_schedule_csv: a schedule read from a CSV file is not "
        "modelled; allowed: empty, with pipeline_parallel_schedule naming the schedule");
  return std::nullopt;
}

// The model: torchtitan 9dec370 builds Llama 3 (models/llama); its flavor must be this one.
std::optional<Error> check_model(Values& v, const ModelSpec& m) {
  for (const LayerKind& k : m.kinds)
    if (!k.has_attention() || k.is_moe() || k.is_mla())
      return bad(
          "torchtitan 9dec370 trains Llama 3 models (torchtitan/models/llama); this model "
          "has " +
          std::string(k.is_moe()   ? "MoE"
                      : k.is_mla() ? "multi-head latent attention"
                                   : "Mamba") +
          " layers");
  // A name or flavor given must be one torchtitan builds (models/__init__.py models_config:
  // llama3 only) and describe the request's model.
  if (v.has("model.name") && v["model.name"] != "llama3")
    return bad("model.name " + detail::short_dump(v["model.name"]) +
               ": torchtitan 9dec370 builds llama3 only (models/__init__.py); allowed: llama3");
  if (v.has("model.flavor")) {
    const std::string fl = v["model.flavor"].get<std::string>();
    const Flavor* hit = nullptr;
    for (const Flavor& f : kLlama3Flavors)
      if (fl == f.name) hit = &f;
    if (hit == nullptr)
      return bad("model.flavor " + detail::short_dump(v["model.flavor"]) +
                 ": not a flavor of torchtitan 9dec370's llama3; allowed: debugmodel, 8B, 70B, "
                 "405B");
    if (hit->dim != m.hidden || hit->layers != m.layers)
      return bad("model.flavor \"" + fl + "\" describes another model: Llama 3 " + fl +
                 " has dim " + std::to_string(hit->dim) + " and " + std::to_string(hit->layers) +
                 " layers, this one hidden_size=" + std::to_string(m.hidden) +
                 " and num_hidden_layers=" + std::to_string(m.layers));
  }
  // norms.py build_norm: rmsnorm is the eager RMSNorm the pytorch profile measures.
  const std::string norm = v.str("model.norm_type", "rmsnorm");
  if (norm != "rmsnorm")
    return bad("model.norm_type " + detail::short_dump(json(norm)) +
               ": only rmsnorm (the eager RMSNorm, models/norms.py) is modelled; allowed: "
               "rmsnorm");
  return std::nullopt;
}

// The parallel degrees as torchtitan reads them.
struct Degrees {
  std::int64_t tp = 1, pp = 1, cp = 1, rep = 1, shard = -1;
};

// The degrees (parallel_dims.py l.27-40): each at least 1, dp_shard -1 the ranks left.
std::optional<Error> read_degrees(Values& v, Degrees* d, TorchtitanToml* out) {
  json& c = out->config;
  std::int64_t &tp = d->tp, &pp = d->pp, &cp = d->cp, &rep = d->rep, &shard = d->shard;
  ACTMEM_TRY(v.integer("training.tensor_parallel_degree", 1, 1, &tp));
  ACTMEM_TRY(v.integer("experimental.pipeline_parallel_degree", 1, 1, &pp));
  ACTMEM_TRY(v.integer("experimental.context_parallel_degree", 1, 1, &cp));
  ACTMEM_TRY(v.integer("training.data_parallel_replicate_degree", 1, 1, &rep));
  ACTMEM_TRY(v.integer("training.data_parallel_shard_degree", -1, -1, &shard));
  if (shard == 0)
    return bad(
        "training.data_parallel_shard_degree 0: must be -1 (the ranks left) or at least 1 "
        "(parallel_dims.py l.38)");
  c["tp"] = tp;
  c["pp"] = pp;
  c["cp"] = cp;
  // torchtitan's TP plan shards the norms' sequence (SequenceParallel, parallelize_llama.py
  // l.117-178): sequence parallelism whenever tp > 1.
  c["sp"] = tp > 1;
  c["dp_replicate"] = rep;
  if (shard == -1) {
    out->dp_from_job = true;
  } else {
    Checked ck;
    c["dp"] = ck.mul(static_cast<std::uint64_t>(shard), static_cast<std::uint64_t>(rep), "dp");
    if (ck.overflowed()) return bad("the data-parallel degrees overflow");
    // DDP (replicate without shard or cp) runs on a 1-D mesh only (parallelize_llama.py l.110).
    if (shard == 1 && cp == 1 && rep > 1 && (tp > 1 || pp > 1))
      return bad(
          "data_parallel_replicate_degree > 1 without sharding is DDP, which torchtitan runs "
          "without other parallelisms ('DDP has not supported > 1D parallelism')");
  }
  if (tp > 1 && v.flag("training.disable_loss_parallel"))
    return bad(
        "training.disable_loss_parallel = true: replicated logits under tensor parallelism are "
        "not modelled (the loss is vocab-parallel); remove it");
  // Async TP (parallelize_llama.py l.53-58: torchtitan asserts compile; its symmetric-memory
  // workspace lies outside the caching allocator, docs/frameworks.md "Async TP").
  if (tp > 1 && v.flag("experimental.enable_async_tensor_parallel")) {
    if (!v.flag("training.compile"))
      return bad(
          "experimental.enable_async_tensor_parallel = true needs training.compile = true "
          "(torchtitan: 'Async TP requires --training.compile')");
    c["async_tp"] = true;
  }
  const std::string rotate = v.str("experimental.context_parallel_rotate_method", "allgather");
  if (rotate != "allgather")
    return bad("experimental.context_parallel_rotate_method " + detail::short_dump(json(rotate)) +
               ": only allgather, the default, is modelled; allowed: allgather");
  return std::nullopt;
}

// The stages: split points "layers.N" (each stage's first layer) or torchtitan's own split;
// each stage but the first as the index of its first layer.
Result<std::vector<std::uint64_t>> stage_cuts(Values& v, std::uint64_t L, std::int64_t pp,
                                              bool looped) {
  std::vector<std::uint64_t> cuts;
  if (v.has("experimental.pipeline_parallel_split_points") &&
      !v["experimental.pipeline_parallel_split_points"].empty()) {
    for (const json& p : v["experimental.pipeline_parallel_split_points"]) {
      const std::string s = p.get<std::string>();
      const std::string digits = s.size() > 7 && s.rfind("layers.", 0) == 0 ? s.substr(7) : "";
      std::uint64_t n = 0;
      // Module names: layers.8, never layers.08 (no module is named so).
      const bool num =
          !digits.empty() && digits.size() <= 9 && digits[0] != '0' &&
          std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
      if (num) n = std::stoull(digits);
      if (!num || n == 0 || n >= L || (!cuts.empty() && n <= cuts.back()))
        return bad("experimental.pipeline_parallel_split_points " + detail::short_dump(p) +
                   ": each must be \"layers.N\", N increasing from 1 to " + std::to_string(L - 1));
      cuts.push_back(n);
    }
  } else {
    const std::uint64_t stages = static_cast<std::uint64_t>(pp) * (looped ? 2 : 1);
    if (stages > L)
      return bad(std::to_string(stages) + " pipeline stages for " + std::to_string(L) +
                 " layers ('Total stages cannot be greater than the number of layers')");
    const std::uint64_t base = L / stages;
    std::uint64_t extra = L % stages, at = 0;
    for (std::uint64_t i = 0; i + 1 < stages; ++i) {
      at += i == 0 ? base : base + (extra > 0 ? 1 : 0);
      if (i > 0 && extra > 0) --extra;
      cuts.push_back(at);
    }
  }
  return cuts;
}

// The stages over the ranks: one per rank, or (looped) equal stages, vpp per rank.
std::optional<Error> read_stages(Values& v, const ModelSpec& m, std::int64_t pp,
                                 const std::string& sched, bool looped, std::int64_t mbs, json& c) {
  const std::uint64_t L = m.layers;
  auto found = stage_cuts(v, L, pp, looped);
  if (!found.ok()) return found.error();
  const std::vector<std::uint64_t>& cuts = found.value();
  const std::uint64_t stages = cuts.size() + 1;
  std::vector<std::uint64_t> split;
  for (std::uint64_t i = 0; i < stages; ++i)
    split.push_back((i + 1 < stages ? cuts[i] : L) - (i > 0 ? cuts[i - 1] : 0));
  const std::uint64_t P = static_cast<std::uint64_t>(pp);
  if (!looped && stages != P)
    return bad(std::to_string(stages) + " pipeline stages from the split points for " + sched +
               " on pipeline_parallel_degree " + std::to_string(pp) +
               ": a single-stage schedule needs one stage per rank");
  if (looped && (stages % P != 0 || stages / P < 2))
    return bad(std::to_string(stages) + " pipeline stages from the split points for " + sched +
               " on pipeline_parallel_degree " + std::to_string(pp) +
               ": a looped schedule needs a multiple of the degree, at least two per rank");
  const bool even =
      std::all_of(split.begin(), split.end(), [&](std::uint64_t x) { return x == split.front(); });
  if (looped) {
    if (!even)
      return bad("the " + std::to_string(stages) + " stages of " + sched +
                 " are uneven; actmem's interleaved schedule needs equal stages (layer_split "
                 "is for one stage per rank)");
    if (mbs % pp != 0)
      return bad("pipeline_parallel_microbatches " + std::to_string(mbs) +
                 " is not a multiple of pipeline_parallel_degree; torch's Interleaved1F1B "
                 "then runs rounds the interleaved schedule here does not model");
    c["vpp"] = stages / P;
  } else if (!even) {
    c["layer_split"] = split;
  }
  return std::nullopt;
}

// The batch and sequence: batch_size sequences per data-parallel rank per step (no gradient
// accumulation at 9dec370), split into pipeline micro-batches under PP.
std::optional<Error> read_batch_and_pipeline(Values& v, const ModelSpec& m, std::int64_t pp,
                                             TorchtitanToml* out) {
  json& c = out->config;
  std::int64_t batch = 8, seq = 2048;
  ACTMEM_TRY(v.integer("training.batch_size", 8, 1, &batch));
  ACTMEM_TRY(v.integer("training.seq_len", 2048, 1, &seq));
  c["seq"] = seq;
  // The pipeline: schedule (torch 2.6 get_schedule_class, case-insensitive), stages per rank and
  // split (pipelining_utils.py l.18-55), micro-batches (l.79-81).
  std::string sched = v.str("experimental.pipeline_parallel_schedule", "1F1B");
  std::string lower = sched;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch + 32) : ch; });
  if (pp == 1) {
    if (v.has("experimental.pipeline_parallel_microbatches") ||
        v.has("experimental.pipeline_parallel_split_points"))
      out->warnings.push_back(std::string(kField) +
                              ": pipeline_parallel_microbatches and _split_points are read with "
                              "pipeline_parallel_degree > 1; torchtitan ignores them here");
    c["micro_batch"] = batch;
    c["micro_batches"] = 1;
    return std::nullopt;
  }
  const bool looped = lower == "interleaved1f1b";
  if (lower == "1f1b")
    c["schedule"] = "1f1b";
  else if (lower == "gpipe")
    c["schedule"] = "gpipe";
  else if (looped)
    c["schedule"] = "interleaved";
  else
    return bad("experimental.pipeline_parallel_schedule " + detail::short_dump(json(sched)) +
               ": allowed: 1F1B, GPipe, Interleaved1F1B (torch 2.6's other schedules are not "
               "modelled as torch runs them)");
  std::int64_t mbs = pp;
  ACTMEM_TRY(v.integer("experimental.pipeline_parallel_microbatches", pp, 1, &mbs));
  if (batch % mbs != 0)
    return bad("training.batch_size " + std::to_string(batch) + " is not " + std::to_string(mbs) +
               " equal pipeline micro-batches");
  c["micro_batch"] = batch / mbs;
  c["micro_batches"] = mbs;
  return read_stages(v, m, pp, sched, looped, mbs, c);
}

// Activation checkpointing (parallelize_llama.py l.225-292): none, full (every block), or
// selective: 'op' (torchtitan's op list) or N (every N-th block of a rank's chunks, counted on
// across them; 0 or 1 every block).
std::optional<Error> read_activation_checkpoint(Values& v, const ModelSpec& m, std::int64_t pp,
                                                json& c) {
  const std::string mode = v.str("activation_checkpoint.mode", "selective");
  const std::string option = v.str("activation_checkpoint.selective_ac_option", "2");
  if (mode == "none") {
    c["recompute"] = "none";
  } else if (mode == "full") {
    c["recompute"] = "full";
  } else if (mode == "selective") {
    const bool digits =
        !option.empty() && option.size() <= 6 &&
        std::all_of(option.begin(), option.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (option == "op") {
      c["recompute"] = "op:torchtitan";
    } else if (digits) {
      const std::uint64_t k = std::stoull(option);
      if (k <= 1) {
        c["recompute"] = "full";
      } else {
        // The count runs on from one chunk of a rank to its next: the pattern restarts with each
        // chunk only when a chunk's layers are a multiple of k.
        const std::uint64_t vpp = c.value("vpp", std::uint64_t{1});
        std::uint64_t chunk = m.layers / (static_cast<std::uint64_t>(pp) * vpp);
        if (c.contains("layer_split"))
          for (const json& x : c["layer_split"]) chunk = std::max(chunk, x.get<std::uint64_t>());
        if (vpp == 1 && k > chunk) {
          // The count never reaches k on any rank: no block is checkpointed.
          c["recompute"] = "none";
        } else if (vpp > 1 && chunk % k != 0) {
          return bad("activation_checkpoint.selective_ac_option \"" + option + "\" with " +
                     std::to_string(vpp) + " chunks of " + std::to_string(chunk) +
                     " layers per rank: the block count runs on across chunks, a pattern "
                     "layers:PATTERN cannot repeat it");
        } else {
          c["recompute"] = "layers:" + std::string(k - 1, 'K') + "C";
        }
      }
    } else {
      return bad("activation_checkpoint.selective_ac_option " + detail::short_dump(json(option)) +
                 ": allowed: 'op' or a non-negative integer (every N-th block)");
    }
  } else {
    return bad("activation_checkpoint.mode " + detail::short_dump(json(mode)) +
               ": allowed: none, selective, full");
  }
  return std::nullopt;
}

// Precision (parallelize_llama.py l.79-94): FSDP's MixedPrecisionPolicy; without FSDP the run
// is fp32 (framework torchtitan's defaults). Only the parameter dtype is a choice.
std::optional<Error> read_precision(Values& v, TorchtitanToml* out) {
  const std::string mp = v.str("training.mixed_precision_param", "bfloat16");
  out->mixed_precision = mp == "float32" ? "fp32" : "bf16";
  if (mp == "float32")
    out->config["dtype"] = "fp32";
  else if (mp != "bfloat16")
    return bad("training.mixed_precision_param " + detail::short_dump(json(mp)) +
               ": allowed: bfloat16, float32 (config_manager.py l.378-382)");
  const std::string reduce = v.str("training.mixed_precision_reduce", "float32");
  if (reduce != "float32")
    return bad("training.mixed_precision_reduce " + detail::short_dump(json(reduce)) +
               ": allowed: float32 (config_manager.py l.388-392)");
  return std::nullopt;
}

// The optimizer (optimizer.py l.30-45): Adam and AdamW keep the same two states; l.132-138:
// fused = optimizer.fused, foreach = not fused (the step's transient, setup/optimizer_step.cpp).
std::optional<Error> read_optimizer(Values& v, json& c) {
  const std::string opt = v.str("optimizer.name", "AdamW");
  if (opt != "AdamW" && opt != "Adam")
    return bad("optimizer.name " + detail::short_dump(json(opt)) + ": allowed: AdamW, Adam");
  c["optimizer"] = "adamw";
  c["optimizer_impl"] = v.flag("optimizer.fused") ? "fused" : "foreach";
  // train.py / parallelize_llama.py apply_compile: each TransformerBlock under torch.compile
  // (the engine's compile key says where its saved tensors are measured, and refuses the rest).
  if (v.flag("training.compile")) c["compile"] = true;
  return std::nullopt;
}

// Float8 (float8.py l.40-75, torchao eab345c): dynamic tensorwise scaling; the all-gather in
// e4m3 when FSDP shards (dp_shard > 1).
std::optional<Error> read_float8(Values& v, std::int64_t shard, json& c) {
  if (!v.flag("float8.enable_float8_linear")) return std::nullopt;
  for (const char* k : {"float8.scaling_type_input", "float8.scaling_type_weight",
                        "float8.scaling_type_grad_output"})
    if (v.str(k, "dynamic") != "dynamic")
      return bad(std::string(k) + " " + detail::short_dump(v[k]) +
                 ": delayed scaling is not modelled; allowed: dynamic");
  c["float8"] = "tensorwise";
  if (v.flag("float8.enable_fsdp_float8_all_gather") && (shard == -1 || shard > 1))
    c["float8_all_gather"] = true;
  return std::nullopt;
}

}  // namespace

Result<TorchtitanToml> read_torchtitan_toml(const std::string& text, const ModelSpec& m) {
  auto doc = detail::parse_toml(text, kField);
  if (!doc.ok()) return doc.error();
  TorchtitanToml out;
  Values v;
  ACTMEM_TRY(collect_values(doc.value(), &v, &out.warnings));
  ACTMEM_TRY(refuse_unmodelled(v));
  ACTMEM_TRY(check_model(v, m));
  out.config["framework"] = "torchtitan";
  Degrees d;
  ACTMEM_TRY(read_degrees(v, &d, &out));
  ACTMEM_TRY(read_batch_and_pipeline(v, m, d.pp, &out));
  ACTMEM_TRY(read_activation_checkpoint(v, m, d.pp, out.config));
  ACTMEM_TRY(read_precision(v, &out));
  ACTMEM_TRY(read_optimizer(v, out.config));
  ACTMEM_TRY(read_float8(v, d.shard, out.config));
  return out;
}

}  // namespace actmem

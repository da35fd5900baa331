// Reads training configs and GPU specs, and resolves preset ids against the compiled-in presets.
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "actmem/core/size.hpp"
#include "actmem/json_io.hpp"
#include "actmem/names/names.hpp"
#include "actmem/read/presets.hpp"
#include "read/json_read.hpp"

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
                                   "moe_imbalance",
                                   "mtp",
                                   "custom_keep",
                                   "cublas_workspace_bytes",
                                   "grad_bucket_bytes",
                                   "optimizer_dtype",
                                   "alloc_conf",
                                   "cuda_context_bytes",
                                   "nccl_comm_bytes",
                                   "gpus_per_node",
                                   "device_stages",
                                   "framework",
                                   "shard_group",
                                   "dp_replicate",
                                   "reshard_after_forward",
                                   "fsdp_version",
                                   "accumulate_unsharded",
                                   "loss",
                                   "optimizer_offload",
                                   "lora_rank",
                                   "lora_targets",
                                   "lora_dropout",
                                   "lora_dtype",
                                   "qlora",
                                   "float8",
                                   "ddp_bucket_view",
                                   "async_tp",
                                   "float8_all_gather",
                                   "fp8_amax_history",
                                   "optimizer_impl",
                                   "compile",
                                   "activation_memory_budget",
                                   "response_len"};
constexpr std::size_t kNumConfigKeys = sizeof(kConfigKeys) / sizeof(kConfigKeys[0]);

}  // namespace

namespace {

// One config object read into a TrainConfig (config_from_json applies a framework's defaults
// around it), key group by key group in the order the keys have always been read, so the first
// error a config meets does not depend on how the reading is split.
class ConfigReader {
 public:
  ConfigReader(const json& j, TrainConfig c) : j_(j), c_(std::move(c)) {}

  Result<TrainConfig> read() {
    ACTMEM_TRY(read_batch_and_precision());
    ACTMEM_TRY(read_dropout());
    ACTMEM_TRY(read_parallel());
    ACTMEM_TRY(read_switches());
    ACTMEM_TRY(read_lora());
    ACTMEM_TRY(read_policy());
    ACTMEM_TRY(read_gpu());
    ACTMEM_TRY(read_schedule_and_micro_batches());
    ACTMEM_TRY(read_buffers());
    ACTMEM_TRY(read_device());
    ACTMEM_TRY(read_layer_split());
    ACTMEM_TRY(read_custom_keep());
    return c_;
  }

 private:
  std::optional<Error> uint(const char* k, std::uint64_t* out, bool allow_zero = false) const {
    if (!j_.contains(k)) return std::nullopt;
    return detail::read_uint(j_[k], std::string("config.") + k, out, allow_zero);
  }
  std::optional<Error> flag(const char* k, bool* out) const {
    if (!j_.contains(k)) return std::nullopt;
    return detail::read_bool(j_[k], std::string("config.") + k, out);
  }
  // A name parsed by `parse` (names.hpp), refused with the list of what is allowed.
  template <typename Parse, typename T>
  std::optional<Error> choice(const char* k, Parse parse, T* out,
                              const std::string& allowed) const {
    if (!j_.contains(k)) return std::nullopt;
    return detail::read_choice(j_[k], std::string("config.") + k, parse, out, allowed);
  }
  std::optional<Error> prob(const char* k, double* out) const {
    if (!j_.contains(k)) return std::nullopt;
    return detail::read_prob(j_[k], std::string("config.") + k, out);
  }

  std::optional<Error> read_batch_and_precision();
  std::optional<Error> read_dropout();
  std::optional<Error> read_parallel();
  std::optional<Error> read_switches();
  std::optional<Error> read_lora();
  std::optional<Error> read_lora_targets();
  std::optional<Error> read_policy();
  std::optional<Error> read_gpu();
  std::optional<Error> read_schedule_and_micro_batches();
  std::optional<Error> read_buffers();
  std::optional<Error> read_device();
  std::optional<Error> read_layer_split();
  std::optional<Error> read_custom_keep();

  const json& j_;
  TrainConfig c_;
};

// The batch, precisions and optimizer.
std::optional<Error> ConfigReader::read_batch_and_precision() {
  ACTMEM_TRY(uint("micro_batch", &c_.micro_batch));
  ACTMEM_TRY(uint("seq", &c_.seq));
  ACTMEM_TRY(uint("response_len", &c_.response_len, true));  // 0: the whole sequence
  ACTMEM_TRY(uint("grad_accum", &c_.grad_accum));
  ACTMEM_TRY(choice("dtype", parse_float_dtype, &c_.act_dtype, float_dtype_table().list()));
  ACTMEM_TRY(choice("param_dtype", parse_float_dtype, &c_.param_dtype, float_dtype_table().list()));
  ACTMEM_TRY(choice("grad_dtype", parse_float_dtype, &c_.grad_dtype, float_dtype_table().list()));
  ACTMEM_TRY(flag("master_weights", &c_.master_weights));
  ACTMEM_TRY(choice("optimizer", parse_optimizer, &c_.optimizer, optimizer_table().list()));
  ACTMEM_TRY(choice("optimizer_impl", parse_optimizer_impl, &c_.optimizer_impl,
                    optimizer_impl_table().list()));
  ACTMEM_TRY(flag("compile", &c_.compile));
  if (j_.contains("activation_memory_budget"))
    ACTMEM_TRY(detail::read_double(j_["activation_memory_budget"],
                                   "config.activation_memory_budget",
                                   &c_.activation_memory_budget));
  return std::nullopt;
}

// dropout sets both rates; a specific rate given beside it with another value would silently
// win over it, so the two are a conflict naming both (as grad_accum and micro_batches are).
std::optional<Error> ConfigReader::read_dropout() {
  double dropout = -1.0;
  ACTMEM_TRY(prob("dropout", &dropout));
  if (dropout >= 0.0) c_.attention_dropout = c_.hidden_dropout = dropout;
  ACTMEM_TRY(prob("attention_dropout", &c_.attention_dropout));
  ACTMEM_TRY(prob("hidden_dropout", &c_.hidden_dropout));
  // dropout sets both rates: a specific rate given beside it with another value would silently
  // win over it, so the two are a conflict naming both (as grad_accum and micro_batches are).
  for (const char* k : {"attention_dropout", "hidden_dropout"})
    if (dropout >= 0.0 && j_.contains(k) && j_[k] != j_["dropout"])
      return make_error("invalid_value", std::string("config.") + k,
                        std::string("config.") + k + ": " + detail::short_dump(j_[k]) +
                            " conflicts with config.dropout: " + detail::short_dump(j_["dropout"]) +
                            " (dropout sets both rates); give one");
  return std::nullopt;
}

// Attention, the accounting profile and the parallel degrees.
std::optional<Error> ConfigReader::read_parallel() {
  ACTMEM_TRY(choice("attention", parse_attention, &c_.attention, attention_table().list()));
  ACTMEM_TRY(choice("profile", parse_profile, &c_.profile, profile_table().list()));
  ACTMEM_TRY(uint("tp", &c_.par.tp));
  ACTMEM_TRY(flag("sp", &c_.par.sp));
  ACTMEM_TRY(uint("pp", &c_.par.pp));
  ACTMEM_TRY(uint("vpp", &c_.par.vpp));
  ACTMEM_TRY(uint("cp", &c_.par.cp));
  ACTMEM_TRY(uint("dp", &c_.par.dp));
  std::uint64_t zero = static_cast<std::uint64_t>(c_.par.zero);
  ACTMEM_TRY(uint("zero", &zero, true));
  if (zero > 3)
    return make_error(
        "invalid_value", "config.zero",
        "config.zero: " + std::to_string(zero) + " is not a ZeRO stage; allowed: 0, 1, 2, 3");
  c_.par.zero = static_cast<int>(zero);
  ACTMEM_TRY(uint("ep", &c_.par.ep));
  ACTMEM_TRY(choice("framework", parse_framework, &c_.framework, framework_table().list()));
  ACTMEM_TRY(
      choice("shard_group", parse_shard_group, &c_.par.shard_group, shard_group_table().list()));
  ACTMEM_TRY(uint("dp_replicate", &c_.par.dp_replicate));
  return std::nullopt;
}

// The switches through which a framework changes memory (FSDP residency, ZeRO-Offload, DDP's
// buckets, async TP, float8).
std::optional<Error> ConfigReader::read_switches() {
  ACTMEM_TRY(flag("reshard_after_forward", &c_.reshard_after_forward));
  ACTMEM_TRY(uint("fsdp_version", &c_.fsdp_version));
  ACTMEM_TRY(flag("accumulate_unsharded", &c_.accumulate_unsharded));
  ACTMEM_TRY(flag("optimizer_offload", &c_.optimizer_offload));
  ACTMEM_TRY(flag("ddp_bucket_view", &c_.ddp_bucket_view));
  ACTMEM_TRY(flag("async_tp", &c_.async_tp));
  ACTMEM_TRY(flag("float8_all_gather", &c_.float8_all_gather));
  ACTMEM_TRY(uint("fp8_amax_history", &c_.fp8_amax_history));
  if (c_.fp8_amax_history > (std::uint64_t{1} << 20))
    return make_error("invalid_value", "config.fp8_amax_history",
                      "config.fp8_amax_history: " + std::to_string(c_.fp8_amax_history) +
                          " is more than the 1048576 allowed");
  ACTMEM_TRY(choice("float8", parse_float8, &c_.float8, float8_table().list()));
  return std::nullopt;
}

// LoRA: the rank turns it on; the targets are linear names (docs/frameworks.md, LoRA).
std::optional<Error> ConfigReader::read_lora() {
  // LoRA: the rank turns it on; the targets are linear names (docs/frameworks.md, LoRA).
  ACTMEM_TRY(uint("lora_rank", &c_.lora.rank, true));
  if (c_.lora.rank > (std::uint64_t{1} << 20))
    return make_error(
        "invalid_value", "config.lora_rank",
        "config.lora_rank: " + std::to_string(c_.lora.rank) + " is more than the 1048576 allowed");
  ACTMEM_TRY(read_lora_targets());
  ACTMEM_TRY(prob("lora_dropout", &c_.lora.dropout));
  ACTMEM_TRY(choice("lora_dtype", parse_float_dtype, &c_.lora.dtype, float_dtype_table().list()));
  ACTMEM_TRY(flag("qlora", &c_.lora.qlora));
  return std::nullopt;
}

// lora_targets: linear names, each at most once.
std::optional<Error> ConfigReader::read_lora_targets() {
  if (!j_.contains("lora_targets")) return std::nullopt;
  static const char* const kLinears[] = {"q_proj",  "k_proj",    "v_proj", "o_proj", "gate_proj",
                                         "up_proj", "down_proj", "fc1",    "fc2"};
  const json& a = j_["lora_targets"];
  if (!a.is_array() || a.size() > 9)
    return make_error("wrong_type", "config.lora_targets",
                      "config.lora_targets: must be an array of at most 9 linear names such as "
                      "\"q_proj\"");
  c_.lora.targets.clear();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string field = "config.lora_targets[" + std::to_string(i) + "]";
    std::string id;
    ACTMEM_TRY(detail::read_string(a[i], field, &id));
    bool known = false;
    for (const char* k : kLinears) known = known || id == k;
    if (!known)
      return make_error("invalid_value", field,
                        field + ": '" + shown_text(id) +
                            "' is not allowed; allowed: q_proj, k_proj, v_proj, o_proj, "
                            "gate_proj, up_proj, down_proj, fc1, fc2");
    if (c_.lora.targets_linear(id))
      return make_error("invalid_value", field, field + ": '" + id + "' is listed twice");
    c_.lora.targets.push_back(id);
  }
  return std::nullopt;
}

// The loss, the recompute policy, offload and multi-token prediction.
std::optional<Error> ConfigReader::read_policy() {
  ACTMEM_TRY(choice("loss", parse_loss, &c_.loss, loss_names()));
  ACTMEM_TRY(choice("recompute", parse_recompute, &c_.recompute, recompute_names()));
  ACTMEM_TRY(flag("offload", &c_.recompute.offload));
  ACTMEM_TRY(flag("mtp", &c_.mtp));
  return std::nullopt;
}

// The GPU: a preset, and/or its memory as bytes or as a size ("80GiB", parsed exactly:
// size.hpp), one of the two keys.
std::optional<Error> ConfigReader::read_gpu() {
  if (j_.contains("gpu")) {
    ACTMEM_TRY(detail::read_string(j_["gpu"], "config.gpu", &c_.gpu_id));
    if (!find_preset("gpus", c_.gpu_id))
      return make_error("unknown_preset", "config.gpu",
                        "config.gpu: unknown GPU '" + shown_text(c_.gpu_id) +
                            "'; allowed: " + preset_ids("gpus"));
  }
  ACTMEM_TRY(uint("gpu_memory_bytes", &c_.gpu_bytes));
  if (c_.gpu_bytes > kMaxBytes)
    return make_error(
        "invalid_value", "config.gpu_memory_bytes",
        "config.gpu_memory_bytes: " + std::to_string(c_.gpu_bytes) + " exceeds 2^63-1 bytes");
  // gpu_memory: a size as text ("80GiB"), parsed exactly (size.hpp); one of the two keys.
  if (j_.contains("gpu_memory")) {
    if (j_.contains("gpu_memory_bytes"))
      return make_error("invalid_value", "config.gpu_memory",
                        "config.gpu_memory: give gpu_memory or gpu_memory_bytes, not both");
    std::string text;
    ACTMEM_TRY(detail::read_string(j_["gpu_memory"], "config.gpu_memory", &text));
    if (!parse_size(text, &c_.gpu_bytes))
      return make_error(
          "invalid_value", "config.gpu_memory",
          "config.gpu_memory: '" + shown_text(text) + "' is not a size; allowed: " + kSizeAllowed);
  }
  return std::nullopt;
}

// The pipeline schedule and micro_batches, the pipeline name for grad_accum.
std::optional<Error> ConfigReader::read_schedule_and_micro_batches() {
  ACTMEM_TRY(choice("schedule", parse_schedule, &c_.schedule, schedule_table().list()));
  ACTMEM_TRY(uint("micro_batches", &c_.grad_accum));  // the pipeline name for grad_accum
  if (j_.contains("grad_accum") && j_.contains("micro_batches") &&
      j_["grad_accum"] != j_["micro_batches"])
    return make_error(
        "invalid_value", "config.micro_batches",
        "config.micro_batches: " + detail::short_dump(j_["micro_batches"]) +
            " conflicts with config.grad_accum: " + detail::short_dump(j_["grad_accum"]) +
            " (two names for the micro-batches per step); give one");
  return std::nullopt;
}

// Fixed per-GPU buffers and the fixed costs' overrides (device.hpp).
std::optional<Error> ConfigReader::read_buffers() {
  // Fixed per-GPU buffers: bounded so that the sums they join cannot overflow and blame another
  // field; a petabyte is a million times any real workspace or bucket.
  for (auto [k, out] :
       {std::pair<const char*, Bytes*>{"cublas_workspace_bytes", &c_.cublas_workspace},
        {"grad_bucket_bytes", &c_.grad_bucket}}) {
    ACTMEM_TRY(uint(k, out, true));
    if (*out > kMaxBufferBytes)
      return make_error("invalid_value", std::string("config.") + k,
                        std::string("config.") + k + ": " + std::to_string(*out) +
                            " is more than the 2^50 bytes (1 PiB) allowed");
  }
  // The fixed costs' overrides (device.hpp); absent, the documented defaults.
  for (auto [k, out] :
       {std::pair<const char*, Bytes*>{"cuda_context_bytes", &c_.cuda_context_bytes},
        {"nccl_comm_bytes", &c_.nccl_comm_bytes}}) {
    if (!j_.contains(k)) continue;
    Bytes v = 0;
    ACTMEM_TRY(uint(k, &v, true));
    if (v > kMaxBufferBytes)
      return make_error("invalid_value", std::string("config.") + k,
                        std::string("config.") + k + ": " + std::to_string(v) +
                            " is more than the 2^50 bytes (1 PiB) allowed");
    *out = v;
  }
  if (j_.contains("device_stages")) {
    std::string which;
    ACTMEM_TRY(detail::read_string(j_["device_stages"], "config.device_stages", &which));
    if (which != "worst" && which != "all")
      return make_error("invalid_value", "config.device_stages",
                        "config.device_stages: '" + shown_text(which) +
                            "' is not allowed; allowed: worst (the most loaded stage), all");
    c_.device_all_stages = which == "all";
  }
  ACTMEM_TRY(uint("gpus_per_node", &c_.gpus_per_node));
  if (c_.gpus_per_node > kMaxGpusPerNode)
    return make_error("invalid_value", "config.gpus_per_node",
                      "config.gpus_per_node: " + std::to_string(c_.gpus_per_node) +
                          " is more than the " + std::to_string(kMaxGpusPerNode) + " allowed");
  return std::nullopt;
}

// What the device replay walks and how the allocator and fragmentation are set.
std::optional<Error> ConfigReader::read_device() {
  ACTMEM_TRY(choice("optimizer_dtype", parse_float_dtype, &c_.optimizer_dtype,
                    float_dtype_table().list()));
  if (j_.contains("alloc_conf")) {
    std::string text;
    ACTMEM_TRY(detail::read_string(j_["alloc_conf"], "config.alloc_conf", &text));
    const std::string err = parse_alloc_conf(text, &c_.alloc);
    if (!err.empty())
      return make_error("invalid_value", "config.alloc_conf", "config.alloc_conf: " + err);
  }
  if (j_.contains("fragmentation_pct")) {
    ACTMEM_TRY(detail::read_double(j_["fragmentation_pct"], "config.fragmentation_pct",
                                   &c_.fragmentation_pct));
    if (c_.fragmentation_pct < 0 || c_.fragmentation_pct > 100)
      return make_error("invalid_value", "config.fragmentation_pct",
                        "config.fragmentation_pct: must be between 0 and 100");
  }
  if (j_.contains("moe_imbalance"))
    ACTMEM_TRY(detail::read_double(j_["moe_imbalance"], "config.moe_imbalance", &c_.moe_imbalance));
  return std::nullopt;
}

// layer_split: layer counts, one per pipeline stage.
std::optional<Error> ConfigReader::read_layer_split() {
  if (j_.contains("layer_split")) {
    const json& a = j_["layer_split"];
    if (!a.is_array() || a.size() > kMaxLayerSplitEntries)
      return make_error(
          "wrong_type", "config.layer_split",
          "config.layer_split: must be an array of layer counts, one per pipeline stage (at most " +
              std::to_string(kMaxLayerSplitEntries) + ")");
    c_.layer_split.clear();
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::uint64_t n = 0;
      ACTMEM_TRY(detail::read_uint(a[i], "config.layer_split[" + std::to_string(i) + "]", &n));
      c_.layer_split.push_back(n);
    }
  }
  return std::nullopt;
}

// custom_keep: tensor ids, unless the recompute policy names its ops itself.
std::optional<Error> ConfigReader::read_custom_keep() {
  if (j_.contains("custom_keep") && (c_.recompute.ops || !c_.recompute.op_policy.empty()) &&
      !(j_["custom_keep"].is_array() && j_["custom_keep"].empty()))
    return make_error("invalid_value", "config.custom_keep",
                      "config.custom_keep: recompute " + detail::short_dump(j_["recompute"]) +
                          " names the ops it saves; give the ids there, not in custom_keep");
  if (j_.contains("custom_keep") && !c_.recompute.ops && c_.recompute.op_policy.empty()) {
    const json& a = j_["custom_keep"];
    if (!a.is_array() || a.size() > kMaxCustomKeep)
      return make_error("wrong_type", "config.custom_keep",
                        "config.custom_keep: must be an array of at most " +
                            std::to_string(kMaxCustomKeep) + " tensor ids such as \"attn.qkv_in\"");
    c_.recompute.custom_keep.clear();
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::string id;
      ACTMEM_TRY(detail::read_string(a[i], "config.custom_keep[" + std::to_string(i) + "]", &id));
      c_.recompute.custom_keep.push_back(id);
    }
  }
  return std::nullopt;
}

}  // namespace

namespace {

// ZB-V and DualPipeV always place two chunks per rank in a V (PyTorch 2.6 ScheduleZBVZeroBubble;
// deepseek-ai/DualPipe 3da1bbea DualPipeV): a config naming one without a vpp of its own takes 2,
// listed in the answer beside the framework's defaults; another vpp given is refused by validate().
Result<TrainConfig> with_v_chunks(const json& j, Result<TrainConfig> r) {
  if (!r.ok() || !is_v_shape(r.value().schedule) || j.contains("vpp") || r.value().par.vpp != 1)
    return r;
  r.value().par.vpp = 2;
  r.value().framework_filled.push_back(
      FrameworkDefault{"vpp", "2",
                       "the schedule's two chunks per rank in a V (zb-v: PyTorch 2.6 "
                       "ScheduleZBVZeroBubble; dualpipev: deepseek-ai/DualPipe DualPipeV)"});
  return r;
}

}  // namespace

std::vector<const char*> config_keys() {
  return std::vector<const char*>(kConfigKeys, kConfigKeys + kNumConfigKeys);
}

Result<TrainConfig> config_from_json(const json& j, TrainConfig c) {
  if (!j.is_object())
    return make_error("wrong_type", "config",
                      "config: must be a JSON object, got " + detail::kind_of(j));
  ACTMEM_TRY(detail::check_keys(j, "config", kConfigKeys, kNumConfigKeys));
  auto first = ConfigReader(j, c).read();
  if (!first.ok()) return first;
  // A framework fills the keys the user left out with its documented defaults (framework.cpp),
  // read by the same reader; the user's keys win.
  const auto defaults =
      framework_defaults(first.value(), [&](const char* k) { return j.contains(k); });
  if (defaults.empty()) return with_v_chunks(j, std::move(first));
  json merged = j;
  std::vector<FrameworkDefault> filled;
  for (const FrameworkDefault& d : defaults)
    if (!j.contains(d.key)) {
      merged[d.key] = json::parse(d.value);
      filled.push_back(d);
    }
  auto out = ConfigReader(merged, c).read();
  if (out.ok()) out.value().framework_filled = filled;
  return with_v_chunks(j, std::move(out));
}

Result<GpuSpec> gpu_from_json(const json& j, const std::string& id) {
  if (!j.is_object()) return make_error("wrong_type", "gpu", "gpu: must be a JSON object");
  static const char* const kKeys[] = {"name",
                                      "memory_bytes",
                                      "memory_note",
                                      "source",
                                      "bf16_dense_tflops",
                                      "memory_bandwidth_gbs",
                                      "reported_memory_bytes",
                                      "driver_reserved_bytes",
                                      "reported_memory_source",
                                      "context_bytes",
                                      "context_source",
                                      "host_link_gbs",
                                      "host_link_source",
                                      "host_memory_per_gpu_bytes",
                                      "host_memory_source"};
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
  // The figures the device verdict uses (device.hpp): the total nvidia-smi reports, the driver's
  // reserved part of it, the measured CUDA context.
  for (auto [k, out] : {std::pair<const char*, Bytes*>{"reported_memory_bytes", &g.reported_bytes},
                        {"driver_reserved_bytes", &g.driver_reserved_bytes},
                        {"context_bytes", &g.context_bytes}}) {
    if (!j.contains(k)) continue;
    ACTMEM_TRY(detail::read_uint(j[k], std::string("gpu.") + k, out));
    if (*out > kMaxBufferBytes * 8)
      return make_error("invalid_value", std::string("gpu.") + k,
                        std::string("gpu.") + k + ": more than 2^53 bytes");
  }
  if (g.driver_reserved_bytes >= (g.reported_bytes ? g.reported_bytes : 1) &&
      g.driver_reserved_bytes != 0)
    return make_error("invalid_value", "gpu.driver_reserved_bytes",
                      "gpu.driver_reserved_bytes: must be less than gpu.reported_memory_bytes");
  if (j.contains("reported_memory_source"))
    ACTMEM_TRY(detail::read_string(j["reported_memory_source"], "gpu.reported_memory_source",
                                   &g.reported_source));
  if (j.contains("context_source"))
    ACTMEM_TRY(detail::read_string(j["context_source"], "gpu.context_source", &g.context_source));
  for (auto [k, out] : {std::pair<const char*, double*>{"bf16_dense_tflops", &g.bf16_tflops},
                        {"host_link_gbs", &g.host_link_gbs}}) {
    if (!j.contains(k)) continue;
    ACTMEM_TRY(detail::read_double(j[k], std::string("gpu.") + k, out));
    if (!(*out > 0 && *out < 1e6))
      return make_error("invalid_value", std::string("gpu.") + k,
                        std::string("gpu.") + k + ": must be a positive number below 10^6");
  }
  if (j.contains("host_memory_per_gpu_bytes")) {
    ACTMEM_TRY(detail::read_uint(j["host_memory_per_gpu_bytes"], "gpu.host_memory_per_gpu_bytes",
                                 &g.host_memory_bytes));
    if (g.host_memory_bytes > kMaxBytes)
      return make_error("invalid_value", "gpu.host_memory_per_gpu_bytes",
                        "gpu.host_memory_per_gpu_bytes: exceeds 2^63-1");
  }
  if (j.contains("host_memory_source"))
    ACTMEM_TRY(detail::read_string(j["host_memory_source"], "gpu.host_memory_source",
                                   &g.host_memory_source));
  if (j.contains("host_link_source"))
    ACTMEM_TRY(
        detail::read_string(j["host_link_source"], "gpu.host_link_source", &g.host_link_source));
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

// One streaming pass over the text before any tree is built (nlohmann's SAX parser keeps its own
// stack, so it never recurses): it stops at the first of
// - nesting deeper than kMaxJsonDepth (a recursive copy of 100,000 nested objects overflowed the
//   CLI's stack),
// - more than kMaxJsonValues values (16 MiB of "[{},{},...]" built a 1 GB tree),
// - a key given twice in one object (nlohmann keeps the last silently: {"seq": 2048, "seq": 4}
//   would answer for 4 without a word),
// - a syntax error, remembering where.
struct Scan : json::json_sax_t {
  enum class Stop { none, too_deep, too_many, duplicate, malformed };
  struct Frame {
    bool object = false;
    std::set<std::string> keys;
    std::string key;        // the object's current key
    std::size_t index = 0;  // the array's next element
  };
  Stop stop = Stop::none;
  std::size_t values = 0, error_pos = 0;
  std::string overflow;  // a number too large for a double (nlohmann's out_of_range 406), by key
  std::string path;      // where a duplicate key was found
  std::vector<Frame> stack;

  bool value() {
    if (!stack.empty() && !stack.back().object) ++stack.back().index;
    if (++values > kMaxJsonValues) return halt(Stop::too_many);
    return true;
  }
  bool halt(Stop s) {
    stop = s;
    return false;
  }
  bool open(bool object) {
    if (!value()) return false;
    if (stack.size() >= kMaxJsonDepth) return halt(Stop::too_deep);
    stack.push_back(Frame{object, {}, {}, 0});
    return true;
  }
  bool close() {
    stack.pop_back();
    return true;
  }
  std::string where() const {
    std::string s;
    for (const Frame& f : stack)
      s += f.object ? "." + shown_text(f.key)
                    : "[" + std::to_string(f.index == 0 ? 0 : f.index - 1) + "]";
    // One line: a path through 64 levels of long keys keeps its last 120 characters.
    if (s.size() > 120) s = "..." + s.substr(s.size() - 117);
    return s;
  }
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(true); }
  bool key(string_t& k) override {
    Frame& f = stack.back();
    f.key = k;
    if (!f.keys.insert(k).second) {
      path = where();
      return halt(Stop::duplicate);
    }
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t p, const std::string& token,
                   const nlohmann::detail::exception& ex) override {
    error_pos = p;
    // 1e400 is valid JSON that no double holds: name the key it stands under, not a byte.
    if (ex.id == 406 && !stack.empty()) {
      if (!stack.back().object) ++stack.back().index;  // the element being read
      path = where();
      overflow = token.size() > 40 ? token.substr(0, 37) + "..." : token;
    }
    return halt(Stop::malformed);
  }
};

// Python's json module writes the non-finite floats as the bare tokens NaN, Infinity and
// -Infinity, and the Hub serves config.json files holding them (Nemotron-H's
// "time_step_limit": [0.0, Infinity]). They are not JSON (RFC 8259 section 6), so each one
// standing where a value starts is rewritten as the string of the same name: a key that does not
// change memory takes it like any value, a key read as a number refuses it naming the field and
// the token. `shifts` records where each rewrite added its two quotes, so a later syntax error
// can be reported at its byte in the original text.
std::string quote_python_nonfinite(const std::string& text, std::vector<std::size_t>* shifts) {
  static const char* const kTokens[] = {"-Infinity", "Infinity", "NaN"};
  std::string out;
  bool in_string = false;
  char last = '\0';        // the last non-space character outside strings
  std::vector<char> open;  // the containers around this point: '{' or '[' (a value follows ','
                           // only inside an array; inside an object a key does)
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    const bool value_here = last == '\0' || last == ':' || last == '[' ||
                            (last == ',' && !open.empty() && open.back() == '[');
    if (value_here) {
      bool matched = false;
      for (const char* t : kTokens) {
        const std::size_t n = std::strlen(t);
        const char after = i + n < text.size() ? text[i + n] : ' ';
        if (text.compare(i, n, t) == 0 &&
            (after == ' ' || after == '\t' || after == '\n' || after == '\r' || after == ',' ||
             after == ']' || after == '}')) {
          if (shifts) shifts->push_back(out.size());
          out += '"';
          out.append(t, n);
          out += '"';
          i += n - 1;
          last = '"';
          matched = true;
          break;
        }
      }
      if (matched) continue;
    }
    out += c;
    if (c == '{' || c == '[') {
      if (open.size() <= kMaxJsonDepth) open.push_back(c);  // deeper is refused by the scan
    } else if ((c == '}' || c == ']') && !open.empty()) {
      open.pop_back();
    }
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') last = c;
  }
  return out;
}

}  // namespace

Result<json> parse_json_text(const std::string& raw, const std::string& field) {
  if (raw.size() > kMaxJsonTextBytes)
    return make_error("too_large", field,
                      field + ": " + std::to_string(raw.size()) + " bytes is more than the " +
                          std::to_string(kMaxJsonTextBytes) +
                          " bytes a request, model or config may have");
  // nlohmann reads a NUL byte as the end of the text: "{...}\0anything" would parse as "{...}".
  // JSON has no raw NUL anywhere (RFC 8259 section 7), so one is an error where it stands.
  const std::size_t nul = raw.find('\0');
  if (nul != std::string::npos)
    return make_error(
        "malformed_json", field,
        field + ": a NUL byte at byte " + std::to_string(nul) + " (JSON text holds none)");
  std::vector<std::size_t> shifts;
  const bool python =
      raw.find("NaN") != std::string::npos || raw.find("Infinity") != std::string::npos;
  const std::string rewritten = python ? quote_python_nonfinite(raw, &shifts) : std::string();
  const std::string& text = python ? rewritten : raw;
  Scan scan;
  json::sax_parse(text, &scan, json::input_format_t::json, true);
  switch (scan.stop) {
    case Scan::Stop::none:
      break;
    case Scan::Stop::too_deep:
      return make_error("too_deep", field,
                        field + ": nests objects and arrays more than " +
                            std::to_string(kMaxJsonDepth) + " levels deep");
    case Scan::Stop::too_many:
      return make_error("too_large", field,
                        field + ": holds more than the " + std::to_string(kMaxJsonValues) +
                            " JSON values a request, model or config may have");
    case Scan::Stop::duplicate: {
      // A request's keys are named from its top ("config.seq"), a file's from its role
      // ("model.num_hidden_layers"), as every other error names them.
      const std::string at =
          field == "request" && !scan.path.empty() ? scan.path.substr(1) : field + scan.path;
      return make_error("duplicate_key", at,
                        at + ": given twice in one object; allowed: each key once");
    }
    case Scan::Stop::malformed: {
      if (!scan.overflow.empty()) {
        const std::string at =
            field == "request" && !scan.path.empty() ? scan.path.substr(1) : field + scan.path;
        return make_error("invalid_value", at,
                          at + ": " + shown_text(scan.overflow) +
                              " is out of range (a JSON number here must fit a double)");
      }
      std::size_t pos = scan.error_pos;
      for (std::size_t s : shifts)
        if (s < scan.error_pos) pos -= 2;  // back to the original text's bytes
      return make_error("malformed_json", field,
                        field + ": malformed JSON near byte " + std::to_string(pos) +
                            " (comments, single quotes and trailing commas are not JSON)");
    }
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded())  // the scan accepted it, so this cannot happen; never answer silently
    return make_error("malformed_json", field, field + ": malformed JSON");
  return j;
}

namespace {

// Each preset parsed on its first request: the presets are compiled in and never change, so every
// later request naming one reuses its ModelSpec (with the warnings reading it gave) or GpuSpec.
// One at a time, not all at the first request: parsing every model preset then (33 of them) made
// the page's first answer wait for it, and made the JSON readers hot enough for V8 to compile them
// again optimized (about 300 ms of TurboFan on the page's two cores for code that then runs once a
// request; node --trace-wasm-compilation-times, 2026-12-05). Entries are never erased, so the
// references handed out stay valid; the lock keeps concurrent callers apart.
template <class T>
struct Parsed {
  Result<T> value;
  std::vector<std::string> warnings;
};

template <class T, class Parse>
const Parsed<T>& parsed_once(const std::string& id, Parse parse) {
  static std::mutex lock;
  static std::map<std::string, std::unique_ptr<Parsed<T>>> done;
  std::lock_guard<std::mutex> hold(lock);
  std::unique_ptr<Parsed<T>>& slot = done[id];
  if (!slot) slot = std::make_unique<Parsed<T>>(parse());
  return *slot;
}

}  // namespace

Result<ModelSpec> model_preset(const std::string& id, std::vector<std::string>* warnings) {
  const PresetText* p = find_preset("models", id);
  if (!p)
    return make_error(
        "unknown_preset", "preset",
        "preset: unknown model '" + shown_text(id) + "'; allowed: " + preset_ids("models"));
  const Parsed<ModelSpec>& m = parsed_once<ModelSpec>(id, [&] {
    Parsed<ModelSpec> out{ModelSpec{}, {}};
    auto j = parse_json_text(p->json, "preset");
    out.value = j.ok() ? model_from_json(j.value(), p->id, &out.warnings) : j.error();
    return out;
  });
  if (warnings) warnings->insert(warnings->end(), m.warnings.begin(), m.warnings.end());
  return m.value;
}

Result<GpuSpec> gpu_preset(const std::string& id) {
  const PresetText* p = find_preset("gpus", id);
  if (!p)
    return make_error(
        "unknown_preset", "config.gpu",
        "config.gpu: unknown GPU '" + shown_text(id) + "'; allowed: " + preset_ids("gpus"));
  auto parse = [&] {
    auto j = parse_json_text(p->json, "gpu");
    return Parsed<GpuSpec>{j.ok() ? gpu_from_json(j.value(), id) : j.error(), {}};
  };
  return parsed_once<GpuSpec>(id, parse).value;
}

}  // namespace actmem

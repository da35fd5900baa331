// The rl command's request (rl_read.hpp): the framework (verl or TRL), the algorithm, what verl
// offloads, and the rollout's settings, each field checked and named; a key the chosen framework
// does not have is refused, never ignored.
#include <algorithm>
#include <vector>

#include "actmem/core/limits.hpp"
#include "actmem/json_io.hpp"
#include "actmem/setup/setup.hpp"
#include "read/json_read.hpp"
#include "read/rl_read.hpp"

namespace actmem::detail {

namespace {

std::optional<Error> read_rollout(const json& r, RlRollout* out) {
  if (!r.is_object())
    return make_error("wrong_type", "rl.rollout", "rl.rollout: must be an object, got " + got(r));
  static const char* const kKeys[] = {"engine",
                                      "mode",
                                      "tp",
                                      "gpu_memory_utilization",
                                      "max_num_seqs",
                                      "max_num_batched_tokens",
                                      "max_model_len",
                                      "block_size",
                                      "free_cache_engine",
                                      "enforce_eager",
                                      "cudagraph_bytes",
                                      "bucket_bytes",
                                      "context_bytes",
                                      "profile_peak_bytes",
                                      "layered_summon",
                                      "expert_parallel_size",
                                      "data_parallel_size",
                                      "num_engines"};
  ACTMEM_TRY(check_keys(r, "rl.rollout", kKeys, 18));
  struct Choice {
    const char* key;
    std::string* dst;
    std::vector<std::string> allowed;
  };
  const Choice choices[] = {{"engine", &out->engine, {"vllm", "sglang", "transformers"}},
                            {"mode", &out->mode, {"colocate", "server", "separate"}}};
  for (const Choice& ch : choices)
    if (r.contains(ch.key)) {
      const std::string field = std::string("rl.rollout.") + ch.key;
      ACTMEM_TRY(read_string(r[ch.key], field, ch.dst));
      if (std::find(ch.allowed.begin(), ch.allowed.end(), *ch.dst) == ch.allowed.end()) {
        std::string list;
        for (const std::string& a : ch.allowed) list += (list.empty() ? "" : ", ") + a;
        return make_error(
            "invalid_value", field,
            field + ": '" + shown_text(*ch.dst) + "' is not allowed; allowed: " + list);
      }
    }
  const std::pair<const char*, std::uint64_t*> counts[] = {
      {"tp", &out->tp},
      {"max_num_seqs", &out->max_num_seqs},
      {"max_num_batched_tokens", &out->max_num_batched_tokens},
      {"max_model_len", &out->max_model_len},
      {"block_size", &out->block_size},
      {"expert_parallel_size", &out->ep},
      {"data_parallel_size", &out->dp},
      {"num_engines", &out->num_engines}};
  for (const auto& [k, dst] : counts)
    if (r.contains(k)) {
      const std::string field = std::string("rl.rollout.") + k;
      ACTMEM_TRY(read_uint(r[k], field, dst));
      if (*dst > kMaxFitSeq)
        return make_error("invalid_value", field,
                          field + ": " + std::to_string(*dst) + " is more than the supported " +
                              std::to_string(kMaxFitSeq));
    }
  const std::pair<const char*, Bytes*> bytes[] = {{"cudagraph_bytes", &out->cudagraph_bytes},
                                                  {"bucket_bytes", &out->bucket_bytes},
                                                  {"context_bytes", &out->context_bytes},
                                                  {"profile_peak_bytes", &out->profile_peak_bytes}};
  for (const auto& [k, dst] : bytes)
    if (r.contains(k)) {
      const std::string field = std::string("rl.rollout.") + k;
      ACTMEM_TRY(read_uint(r[k], field, dst, true));
      if (*dst > kMaxBufferBytes)
        return make_error("invalid_value", field, field + ": more than the supported 2^50 bytes");
    }
  if (r.contains("gpu_memory_utilization")) {
    const std::string field = "rl.rollout.gpu_memory_utilization";
    ACTMEM_TRY(read_double(r["gpu_memory_utilization"], field, &out->gpu_memory_utilization));
    if (!(out->gpu_memory_utilization > 0 && out->gpu_memory_utilization <= 1))
      return make_error("invalid_value", field,
                        field + ": " + short_dump(r["gpu_memory_utilization"]) +
                            " is outside (0, 1] (vLLM's fraction of the GPU's total)");
  }
  if (r.contains("free_cache_engine"))
    ACTMEM_TRY(
        read_bool(r["free_cache_engine"], "rl.rollout.free_cache_engine", &out->free_cache_engine));
  if (r.contains("enforce_eager"))
    ACTMEM_TRY(read_bool(r["enforce_eager"], "rl.rollout.enforce_eager", &out->enforce_eager));
  if (r.contains("layered_summon"))
    ACTMEM_TRY(read_bool(r["layered_summon"], "rl.rollout.layered_summon", &out->layered_summon));
  return std::nullopt;
}

}  // namespace

namespace {

// OpenRLHF: a pool or offload key for a model the step does not load changes nothing and is
// refused (no reference, no critic in GRPO, no reward model).
std::optional<Error> refuse_unused_pools(const json& rl, const RlSpec& s) {
  const bool critic = s.algorithm == "ppo";
  const std::pair<const char*, const char*> unused[] = {
      {s.reference ? "" : "reference_gpus", "no reference model (rl.reference false)"},
      {s.reference ? "" : "colocate_actor_ref", "no reference model (rl.reference false)"},
      {critic ? "" : "critic_gpus", "no critic (rl.algorithm grpo)"},
      {critic && s.reward_model ? "" : "colocate_critic_reward",
       "needs a critic (rl.algorithm ppo) and a reward model (rl.reward_model): OpenRLHF puts "
       "the reward model in the critic's placement group (train_ppo_ray.py l.109-138)"},
      {s.reward_model ? "" : "reward_gpus", "no reward model (rl.reward_model false)"},
      {s.reference ? "" : "reference_offload", "no reference model (rl.reference false)"},
      {s.reward_model ? "" : "reward_offload", "no reward model (rl.reward_model false)"}};
  for (const auto& [k, why] : unused)
    if (*k && rl.contains(k))
      return make_error("invalid_value", std::string("rl.") + k,
                        std::string("rl.") + k + ": " + why);
  return std::nullopt;
}

// OpenRLHF: none of verl's offloads or bucket, none of TRL's generation keys; the pools' keys
// with separate pools only, vLLM's sleep with --train.colocate_all only.
std::optional<Error> refuse_for_openrlhf(const json& rl, const RlSpec& s) {
  for (const char* k : {"param_offload", "optimizer_offload", "ref_param_offload",
                        "critic_param_offload", "critic_optimizer_offload"})
    if (rl.contains(k))
      return make_error(
          "invalid_value", std::string("rl.") + k,
          std::string("rl.") + k +
              ": verl's setting; OpenRLHF offloads through --ds.enable_sleep "
              "(rl.deepspeed_sleep) and --ds.adam_offload (config.optimizer_offload)");
  for (const char* k : {"steps_per_generation", "importance_sampling_correction"})
    if (rl.contains(k))
      return make_error("invalid_value", std::string("rl.") + k,
                        std::string("rl.") + k + ": TRL's setting; give rl.framework trl");
  const json empty = json::object();
  const json& r = rl.contains("rollout") ? rl["rollout"] : empty;
  if (r.is_object() && r.contains("bucket_bytes"))
    return make_error("invalid_value", "rl.rollout.bucket_bytes",
                      "rl.rollout.bucket_bytes: OpenRLHF sends the parameters to vLLM one by one "
                      "(no bucket)");
  if (r.is_object() && r.contains("engine") && r["engine"] != "vllm")
    return make_error("invalid_value", "rl.rollout.engine",
                      "rl.rollout.engine: OpenRLHF generates with vLLM");
  for (const char* k : {"layered_summon", "expert_parallel_size", "data_parallel_size"})
    if (r.is_object() && r.contains(k))
      return make_error("invalid_value", std::string("rl.rollout.") + k,
                        std::string("rl.rollout.") + k +
                            ": verl's setting (its LoRA sync, vLLM's expert parallelism); give "
                            "rl.framework verl");
  if (s.rollout.mode == "server")
    return make_error("invalid_value", "rl.rollout.mode",
                      "rl.rollout.mode: 'server' is TRL's vLLM server; OpenRLHF runs colocate "
                      "(--train.colocate_all) or separate (every model and vLLM on GPUs of their "
                      "own, its default)");
  if (s.rollout.mode == "colocate")
    for (const char* k : {"reference_gpus", "critic_gpus", "reward_gpus", "colocate_actor_ref",
                          "colocate_critic_reward"})
      if (rl.contains(k))
        return make_error("invalid_value", std::string("rl.") + k,
                          std::string("rl.") + k +
                              ": read with rl.rollout.mode separate; --train.colocate_all puts "
                              "every model on the actor's GPUs (config.dp)");
  if (s.rollout.mode == "separate" && s.rollout.free_cache_engine)
    return make_error("invalid_value", "rl.rollout.free_cache_engine",
                      "rl.rollout.free_cache_engine: true, yet OpenRLHF turns vLLM's sleep off "
                      "without --train.colocate_all (train_ppo_ray.py l.663-665); allowed with "
                      "rl.rollout.mode separate: false");
  return refuse_unused_pools(rl, s);
}

// The keys one framework has and the other does not: verl's offloads, log-probability batch,
// weight-sync bucket and separate vLLM process; TRL's generation steps and importance-sampling
// switch, its engine and mode choices, and the vLLM settings TRL derives or fixes itself.
std::optional<Error> refuse_foreign(const json& rl, const RlSpec& s) {
  const json empty = json::object();
  const json& r = rl.contains("rollout") ? rl["rollout"] : empty;
  if (s.framework == "openrlhf") return refuse_for_openrlhf(rl, s);
  for (const char* k :
       {"reward_model", "deepspeed_sleep", "reference_gpus", "critic_gpus", "reward_gpus",
        "colocate_actor_ref", "colocate_critic_reward", "reference_offload", "reward_offload"})
    if (rl.contains(k))
      return make_error(
          "invalid_value", std::string("rl.") + k,
          std::string("rl.") + k + ": OpenRLHF's setting; give rl.framework openrlhf");
  if (s.framework == "trl") {
    static const char* const kVerl[] = {
        "param_offload",        "optimizer_offload",        "ref_param_offload",
        "critic_param_offload", "critic_optimizer_offload", "log_prob_micro_batch"};
    for (const char* k : kVerl)
      if (rl.contains(k))
        return make_error("invalid_value", std::string("rl.") + k,
                          std::string("rl.") + k +
                              ": verl's setting; TRL offloads through DeepSpeed (config.zero, "
                              "config.optimizer_offload) and computes log-probabilities in "
                              "batches of config.micro_batch");
    const std::pair<const char*, const char*> kFixed[] = {
        {"max_num_seqs",
         "TRL derives it (per_device_train_batch_size x vllm_tensor_parallel_size x "
         "steps_per_generation, grpo_trainer.py l.1091-1093)"},
        {"max_num_batched_tokens", "TRL fixes it at 4096 (vllm_generation.py l.363)"},
        {"bucket_bytes", "TRL loads the parameters into vLLM one by one (no bucket)"},
        {"context_bytes", "TRL's colocated vLLM shares the training process's CUDA context"},
        {"layered_summon", "verl's setting (its FSDP LoRA sync); TRL merges the adapters"},
        {"expert_parallel_size", "verl's setting (vLLM's expert parallelism as verl starts it)"},
        {"data_parallel_size", "verl's setting (vLLM's data-parallel ranks as verl starts them)"},
        {"num_engines", "OpenRLHF's setting (--vllm.num_engines); give rl.framework openrlhf"}};
    for (const auto& [k, why] : kFixed)
      if (r.is_object() && r.contains(k))
        return make_error("invalid_value", std::string("rl.rollout.") + k,
                          std::string("rl.rollout.") + k + ": " + why);
    if (s.rollout.mode == "separate")
      return make_error("invalid_value", "rl.rollout.mode",
                        "rl.rollout.mode: 'separate' is OpenRLHF's layout; TRL runs vLLM "
                        "colocate or server");
    if (s.rollout.engine == "sglang")
      return make_error("invalid_value", "rl.rollout.engine",
                        "rl.rollout.engine: 'sglang': TRL's GRPOTrainer generates with vllm or "
                        "transformers (SGLang is verl's: give rl.framework verl)");
    return std::nullopt;
  }
  for (const char* k : {"steps_per_generation", "importance_sampling_correction"})
    if (rl.contains(k))
      return make_error("invalid_value", std::string("rl.") + k,
                        std::string("rl.") + k + ": TRL's setting; give rl.framework trl");
  if (s.rollout.engine != "vllm" && s.rollout.engine != "sglang")
    return make_error("invalid_value", "rl.rollout.engine",
                      "rl.rollout.engine: '" + shown_text(s.rollout.engine) +
                          "': verl's hybrid engine generates with vLLM or SGLang (transformers' "
                          "generate is TRL's: give rl.framework trl)");
  if (s.rollout.engine == "sglang" && r.contains("layered_summon"))
    return make_error("invalid_value", "rl.rollout.layered_summon",
                      "rl.rollout.layered_summon: read with vLLM only (its sleep level and "
                      "verl's LoRA sync, which verl runs with vLLM)");
  if (s.rollout.engine == "sglang")
    for (const char* k : {"expert_parallel_size", "data_parallel_size"})
      if (r.contains(k))
        return make_error("invalid_value", std::string("rl.rollout.") + k,
                          std::string("rl.rollout.") + k +
                              ": vLLM's expert parallelism as verl starts it; SGLang's is not "
                              "modelled");
  if (s.rollout.engine == "sglang")
    for (const char* k : {"block_size", "max_num_batched_tokens", "max_model_len"})
      if (r.contains(k))
        return make_error("invalid_value", std::string("rl.rollout.") + k,
                          std::string("rl.rollout.") + k +
                              ": vLLM's setting; verl passes none to SGLang (page size 1, its "
                              "chunked prefill by the GPU's memory, the model's context length)");
  if (r.contains("num_engines"))
    return make_error("invalid_value", "rl.rollout.num_engines",
                      "rl.rollout.num_engines: OpenRLHF's setting (--vllm.num_engines); verl "
                      "starts one rollout replica per tp GPUs");
  if (s.rollout.mode != "colocate")
    return make_error("invalid_value", "rl.rollout.mode",
                      "rl.rollout.mode: '" + shown_text(s.rollout.mode) +
                          "': verl's hybrid engine runs vLLM colocated (a vLLM server is TRL's: "
                          "give rl.framework trl; separate pools are OpenRLHF's)");
  return std::nullopt;
}

// DPO (TRL's DPOTrainer): no generation, and its loss needs the reference's log-probabilities.
std::optional<Error> read_dpo(const json& rl, RlSpec* s) {
  if (s->framework != "trl")
    return make_error("invalid_value", "rl.algorithm",
                      "rl.algorithm: 'dpo' is TRL's DPOTrainer; give rl.framework trl (verl runs "
                      "grpo and ppo)");
  for (const char* k : {"rollout", "steps_per_generation", "importance_sampling_correction"})
    if (rl.contains(k))
      return make_error("invalid_value", std::string("rl.") + k,
                        std::string("rl.") + k + ": DPO generates nothing (rl.algorithm dpo)");
  if (rl.contains("reference") && !s->reference)
    return make_error("invalid_value", "rl.reference",
                      "rl.reference: false, yet DPO's loss needs the reference's "
                      "log-probabilities (precompute_ref_log_probs and PEFT's disabled adapters "
                      "are not modelled)");
  s->reference = true;
  s->rollout.engine = "none";
  return std::nullopt;
}

}  // namespace

Result<RlSpec> read_rl_spec(const json& rl) {
  RlSpec s;
  if (rl.is_null()) return s;
  if (!rl.is_object())
    return make_error("wrong_type", "rl", "rl: must be an object, got " + got(rl));
  static const char* const kKeys[] = {"framework",
                                      "reward_model",
                                      "deepspeed_sleep",
                                      "steps_per_generation",
                                      "importance_sampling_correction",
                                      "algorithm",
                                      "reference",
                                      "param_offload",
                                      "optimizer_offload",
                                      "ref_param_offload",
                                      "log_prob_micro_batch",
                                      "rollout",
                                      "critic_param_offload",
                                      "critic_optimizer_offload",
                                      "reference_gpus",
                                      "critic_gpus",
                                      "reward_gpus",
                                      "colocate_actor_ref",
                                      "colocate_critic_reward",
                                      "reference_offload",
                                      "reward_offload"};
  ACTMEM_TRY(check_keys(rl, "rl", kKeys, 21));
  if (rl.contains("framework")) {
    ACTMEM_TRY(read_string(rl["framework"], "rl.framework", &s.framework));
    if (s.framework != "verl" && s.framework != "trl" && s.framework != "openrlhf")
      return make_error("invalid_value", "rl.framework",
                        "rl.framework: '" + shown_text(s.framework) +
                            "' is not allowed; allowed: verl, trl, openrlhf");
    if (s.framework == "trl") s.rollout = trl_rollout_defaults();
    if (s.framework == "openrlhf") {
      s.rollout = openrlhf_rollout_defaults();
      s.reference = true;  // --algo.kl.init_coef 0.01 (train_ppo_ray.py l.419, l.93-103)
    }
  }
  if (rl.contains("algorithm")) {
    ACTMEM_TRY(read_string(rl["algorithm"], "rl.algorithm", &s.algorithm));
    if (s.algorithm != "grpo" && s.algorithm != "ppo" && s.algorithm != "dpo")
      return make_error("invalid_value", "rl.algorithm",
                        "rl.algorithm: '" + shown_text(s.algorithm) +
                            "' is not allowed; allowed: grpo, ppo, dpo");
  }
  const std::pair<const char*, bool*> flags[] = {
      {"reward_model", &s.reward_model},
      {"deepspeed_sleep", &s.deepspeed_sleep},
      {"reference", &s.reference},
      {"param_offload", &s.param_offload},
      {"optimizer_offload", &s.optimizer_offload},
      {"ref_param_offload", &s.ref_param_offload},
      {"critic_param_offload", &s.critic_param_offload},
      {"critic_optimizer_offload", &s.critic_optimizer_offload},
      {"colocate_actor_ref", &s.colocate_actor_ref},
      {"colocate_critic_reward", &s.colocate_critic_reward},
      {"reference_offload", &s.reference_offload},
      {"reward_offload", &s.reward_offload}};
  for (const auto& [k, dst] : flags)
    if (rl.contains(k)) ACTMEM_TRY(read_bool(rl[k], std::string("rl.") + k, dst));
  const std::pair<const char*, std::uint64_t*> gpus[] = {{"reference_gpus", &s.reference_gpus},
                                                         {"critic_gpus", &s.critic_gpus},
                                                         {"reward_gpus", &s.reward_gpus}};
  for (const auto& [k, dst] : gpus)
    if (rl.contains(k)) {
      const std::string field = std::string("rl.") + k;
      ACTMEM_TRY(read_uint(rl[k], field, dst));
      if (*dst == 0 || *dst > kMaxDim)
        return make_error("invalid_value", field,
                          field + ": " + std::to_string(*dst) + " is outside 1.." +
                              std::to_string(kMaxDim) + " (num_nodes x num_gpus_per_node)");
    }
  if (rl.contains("log_prob_micro_batch")) {
    ACTMEM_TRY(
        read_uint(rl["log_prob_micro_batch"], "rl.log_prob_micro_batch", &s.log_prob_micro_batch));
    if (s.log_prob_micro_batch > kMaxFitMicroBatch)
      return make_error(
          "invalid_value", "rl.log_prob_micro_batch",
          "rl.log_prob_micro_batch: more than the supported " + std::to_string(kMaxFitMicroBatch));
  }
  if (rl.contains("steps_per_generation")) {
    ACTMEM_TRY(
        read_uint(rl["steps_per_generation"], "rl.steps_per_generation", &s.steps_per_generation));
    if (s.steps_per_generation == 0 || s.steps_per_generation > kMaxFitMicroBatch)
      return make_error("invalid_value", "rl.steps_per_generation",
                        "rl.steps_per_generation: " + std::to_string(s.steps_per_generation) +
                            " is outside 1.." + std::to_string(kMaxFitMicroBatch));
  }
  if (rl.contains("importance_sampling_correction"))
    ACTMEM_TRY(read_bool(rl["importance_sampling_correction"], "rl.importance_sampling_correction",
                         &s.importance_sampling_correction));
  if (rl.contains("rollout")) ACTMEM_TRY(read_rollout(rl["rollout"], &s.rollout));
  ACTMEM_TRY(refuse_foreign(rl, s));
  if (s.algorithm == "dpo") ACTMEM_TRY(read_dpo(rl, &s));
  return s;
}

namespace {

// TRL's keys over transformers' Trainer: gradient checkpointing and bf16 on, its loss, and the
// completion length; a policy loaded in fp32 under bf16 autocast (TRL's default without
// DeepSpeed) is refused by name.
Result<json> trl_actor_json(json cj, const ModelSpec& m, const TrainConfig& parsed,
                            const RlSpec& rl, std::vector<FrameworkDefault>* filled) {
  auto fill = [&](const char* key, const json& value, const char* source) {
    if (cj.contains(key)) return;
    cj[key] = value;
    filled->push_back({key, value.dump(), source});
  };
  fill("framework", "hf-trainer",
       "huggingface/trl f2cd577: GRPOTrainer is a transformers Trainer (accelerate: DDP unless "
       "a DeepSpeed config is given)");
  const std::string fw = cj["framework"].is_string() ? cj["framework"].get<std::string>() : "";
  if (fw != "hf-trainer" && fw != "deepspeed")
    return make_error(
        "invalid_value", "config.framework",
        "config.framework: '" + shown_text(fw) +
            "': TRL trains through transformers' Trainer; allowed with rl.framework "
            "trl: hf-trainer (DDP), deepspeed (ZeRO through accelerate's DeepSpeed plugin)");
  fill("recompute", "full",
       "huggingface/trl f2cd577 grpo_config.py l.407: gradient_checkpointing True (every decoder "
       "layer checkpointed)");
  fill("dtype", "bf16", "huggingface/trl f2cd577 grpo_config.py l.408: bf16 True");
  if (rl.algorithm == "dpo") {
    fill("loss", "dpo_trl",
         "huggingface/trl f2cd577 dpo_trainer.py _compute_loss (dpo_config.py: loss_type "
         "[\"sigmoid\"], beta 0.1, precompute_ref_log_probs False)");
    fill("seq", 1024, "huggingface/trl f2cd577 dpo_config.py l.189: max_length 1024");
  } else {
    fill("loss", rl.reference ? "logprob_trl+kl" : "logprob_trl",
         "huggingface/trl f2cd577 grpo_trainer.py _compute_loss (loss_type dapo, grpo_config.py "
         "l.791; the KL term when beta != 0, l.671)");
    if ((parsed.seq ? parsed.seq : default_seq(m)) > 512)
      fill("response_len", 512,
           "huggingface/trl f2cd577 grpo_config.py l.488: max_completion_length 512");
  }
  if (fw == "hf-trainer" && !cj.contains("param_dtype"))
    return make_error(
        "invalid_value", "config.param_dtype",
        "config.param_dtype: not given, and TRL loads the policy in float32 (model_init_kwargs "
        "dtype, grpo_trainer.py l.174-176) and trains it under accelerate's bf16 autocast, "
        "which is not modelled; give param_dtype bf16 (model_init_kwargs={\"dtype\": "
        "\"bfloat16\"}) or framework deepspeed (DeepSpeed casts the model to bf16, no autocast)");
  return cj;
}

// OpenRLHF's actor (OpenRLHF/OpenRLHF 3c3be62 cli/train_ppo_ray.py): DeepSpeed ZeRO-2 in bf16,
// flash attention, no gradient checkpointing, its log-probability loss, --data.max_len 2048.
Result<json> openrlhf_actor_json(json cj, std::vector<FrameworkDefault>* filled) {
  auto fill = [&](const char* key, const json& value, const char* source) {
    if (cj.contains(key)) return;
    cj[key] = value;
    filled->push_back({key, value.dump(), source});
  };
  fill("framework", "deepspeed",
       "OpenRLHF/OpenRLHF 3c3be62 utils/deepspeed/deepspeed.py: every trained model is a "
       "DeepSpeed engine");
  if (!cj["framework"].is_string() || cj["framework"] != "deepspeed")
    return make_error("invalid_value", "config.framework",
                      "config.framework: OpenRLHF trains with DeepSpeed; allowed with "
                      "rl.framework openrlhf: deepspeed");
  fill("zero", 2, "OpenRLHF 3c3be62 cli/train_ppo_ray.py l.308: --ds.zero_stage 2");
  fill("dtype", "bf16", "OpenRLHF 3c3be62 cli/train_ppo_ray.py l.311-317: --ds.param_dtype bf16");
  fill("attention", "flash",
       "OpenRLHF 3c3be62 cli/train_ppo_ray.py l.323-328: --ds.attn_implementation "
       "flash_attention_2");
  fill("recompute", "none",
       "OpenRLHF 3c3be62 cli/train_ppo_ray.py l.309: --actor.gradient_checkpointing_enable off");
  fill("loss", "logprob_openrlhf",
       "OpenRLHF 3c3be62 models/actor.py l.265-294 and models/loss.py PolicyLoss");
  fill("seq", 2048, "OpenRLHF 3c3be62 cli/train_ppo_ray.py l.379: --data.max_len 2048");
  return cj;
}

}  // namespace

Result<TrainConfig> rl_actor_config(const ModelSpec& m, const json& config_json,
                                    const TrainConfig& parsed, const RlSpec& rl) {
  const bool named = config_json.is_object() && config_json.contains("framework");
  if (rl.framework == "verl" && named) return parsed;
  json cj = config_json.is_object() ? config_json : json::object();
  std::vector<FrameworkDefault> trl;
  if (rl.framework == "trl") {
    auto j = trl_actor_json(cj, m, parsed, rl, &trl);
    if (!j.ok()) return j.error();
    cj = j.value();
  } else if (rl.framework == "openrlhf") {
    auto j = openrlhf_actor_json(cj, &trl);
    if (!j.ok()) return j.error();
    cj = j.value();
  } else {
    cj["framework"] = "verl";
  }
  auto c = config_from_json(cj, TrainConfig());
  if (!c.ok()) return c.error();
  TrainConfig actor = c.value();
  actor.gpu_id = parsed.gpu_id;
  actor.framework_filled.insert(actor.framework_filled.begin(), trl.begin(), trl.end());
  return actor;
}

}  // namespace actmem::detail

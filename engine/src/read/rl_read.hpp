// Internal: the rl command's "rl" object read into an RlSpec (rl.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/plan/rl.hpp"

namespace actmem::detail {

// {"framework": "verl" | "trl", "algorithm": "grpo", "reference": bool, "param_offload": bool,
//  "optimizer_offload": bool, "ref_param_offload": bool, "log_prob_micro_batch": N,
//  "steps_per_generation": N, "importance_sampling_correction": bool, "rollout": {"engine",
//  "mode", "tp",
//  "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "max_model_len",
//  "block_size", "free_cache_engine", "enforce_eager", "cudagraph_bytes", "bucket_bytes",
//  "context_bytes", "profile_peak_bytes"}}.
Result<RlSpec> read_rl_spec(const nlohmann::json& rl);

// The actor's config: the request's config object (config_json, parsed as parsed) with the RL
// framework's keys filled where it leaves them out: verl's FSDP actor (config framework verl), or
// TRL's GRPOTrainer over transformers' Trainer (config framework hf-trainer, or deepspeed when
// given), TRL's own keys listed first among the framework defaults, each with its source.
Result<TrainConfig> rl_actor_config(const ModelSpec& m, const nlohmann::json& config_json,
                                    const TrainConfig& parsed, const RlSpec& rl);

}  // namespace actmem::detail

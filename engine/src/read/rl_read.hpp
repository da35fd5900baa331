// Internal: the rl command's "rl" object read into an RlSpec (rl.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/plan/rl.hpp"

namespace actmem::detail {

// {"algorithm": "grpo", "reference": bool, "param_offload": bool, "optimizer_offload": bool,
//  "ref_param_offload": bool, "log_prob_micro_batch": N, "rollout": {"tp",
//  "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "max_model_len",
//  "block_size", "free_cache_engine", "enforce_eager", "cudagraph_bytes", "bucket_bytes",
//  "context_bytes", "profile_peak_bytes"}}.
Result<RlSpec> read_rl_spec(const nlohmann::json& rl);

}  // namespace actmem::detail

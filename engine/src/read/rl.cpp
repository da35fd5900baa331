// The rl command's request (rl_read.hpp): the algorithm, what verl offloads, and the vLLM
// rollout's settings, each field checked and named.
#include "actmem/core/limits.hpp"
#include "read/json_read.hpp"
#include "read/rl_read.hpp"

namespace actmem::detail {

namespace {

std::optional<Error> read_rollout(const json& r, RlRollout* out) {
  if (!r.is_object())
    return make_error("wrong_type", "rl.rollout", "rl.rollout: must be an object, got " + got(r));
  static const char* const kKeys[] = {"tp",
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
                                      "profile_peak_bytes"};
  ACTMEM_TRY(check_keys(r, "rl.rollout", kKeys, 12));
  const std::pair<const char*, std::uint64_t*> counts[] = {
      {"tp", &out->tp},
      {"max_num_seqs", &out->max_num_seqs},
      {"max_num_batched_tokens", &out->max_num_batched_tokens},
      {"max_model_len", &out->max_model_len},
      {"block_size", &out->block_size}};
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
  return std::nullopt;
}

}  // namespace

Result<RlSpec> read_rl_spec(const json& rl) {
  RlSpec s;
  if (rl.is_null()) return s;
  if (!rl.is_object())
    return make_error("wrong_type", "rl", "rl: must be an object, got " + got(rl));
  static const char* const kKeys[] = {"algorithm",
                                      "reference",
                                      "param_offload",
                                      "optimizer_offload",
                                      "ref_param_offload",
                                      "log_prob_micro_batch",
                                      "rollout",
                                      "critic_param_offload",
                                      "critic_optimizer_offload"};
  ACTMEM_TRY(check_keys(rl, "rl", kKeys, 9));
  if (rl.contains("algorithm")) {
    ACTMEM_TRY(read_string(rl["algorithm"], "rl.algorithm", &s.algorithm));
    if (s.algorithm != "grpo" && s.algorithm != "ppo")
      return make_error(
          "invalid_value", "rl.algorithm",
          "rl.algorithm: '" + shown_text(s.algorithm) + "' is not allowed; allowed: grpo, ppo");
  }
  const std::pair<const char*, bool*> flags[] = {
      {"reference", &s.reference},
      {"param_offload", &s.param_offload},
      {"optimizer_offload", &s.optimizer_offload},
      {"ref_param_offload", &s.ref_param_offload},
      {"critic_param_offload", &s.critic_param_offload},
      {"critic_optimizer_offload", &s.critic_optimizer_offload}};
  for (const auto& [k, dst] : flags)
    if (rl.contains(k)) ACTMEM_TRY(read_bool(rl[k], std::string("rl.") + k, dst));
  if (rl.contains("log_prob_micro_batch")) {
    ACTMEM_TRY(
        read_uint(rl["log_prob_micro_batch"], "rl.log_prob_micro_batch", &s.log_prob_micro_batch));
    if (s.log_prob_micro_batch > kMaxFitMicroBatch)
      return make_error(
          "invalid_value", "rl.log_prob_micro_batch",
          "rl.log_prob_micro_batch: more than the supported " + std::to_string(kMaxFitMicroBatch));
  }
  if (rl.contains("rollout")) ACTMEM_TRY(read_rollout(rl["rollout"], &s.rollout));
  return s;
}

}  // namespace actmem::detail

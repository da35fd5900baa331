// vLLM's hybrid KV cache manager in the RL step (rl_vllm.cpp hybrid_kv, issue 37): sliding-window
// layers beside full-attention ones, grouped as vLLM's kv_cache_utils.py groups them, checked by
// hand for gpt-oss-20b (12 sliding + 12 full layers) and Gemma 3 1B (22 sliding + 4 full: padded
// groups).
#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace actmem::test;

namespace {

json grpo(const std::string& preset, std::uint64_t tp) {
  return {{"command", "rl"},
          {"preset", preset},
          {"config", {{"dp", 8}, {"micro_batch", 4}, {"seq", 4096}, {"gpu", "h100-80gb"}}},
          {"rl", {{"rollout", {{"tp", tp}, {"gpu_memory_utilization", 0.5}}}}}};
}

std::uint64_t cdiv(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}

// What vLLM's budget leaves for the KV cache: requested less weights and profiled activations.
std::uint64_t available(const json& v) {
  return u(v["requested_bytes"]) - u(v["weights_bytes"]) - u(v["profile_peak_bytes"]);
}

}  // namespace

TEST_CASE(
    "rl with sliding-window layers: gpt-oss-20b's 12 sliding and 12 full layers in two groups of "
    "12, their blocks and concurrency by hand (vLLM kv_cache_utils.py)",
    "[rl][hybrid]") {
  const json a = run(grpo("gpt-oss-20b", 2));
  const json& v = a["vllm"];
  // Each layer's page: 16 tokens x K and V x 8 kv heads / tp 2 x head_dim 64 x 2 B.
  const std::uint64_t page = 16 * 2 * 4 * 64 * 2;
  CHECK(u(v["kv_bytes_per_token"]) == 24 * 2 * 4 * 64 * 2);
  CHECK(u(v["kv_groups"]) == 2);
  CHECK(u(v["kv_group_size"]) == 12);
  const std::uint64_t blocks = available(v) / page / 12;  // get_num_blocks(num_layers = group size)
  CHECK(u(v["kv_blocks"]) == blocks);
  CHECK(u(v["kv_cache_bytes"]) == blocks * page * 12);
  CHECK(u(v["kv_tokens"]) == blocks / 2 * 16);  // "GPU KV cache size": blocks // groups x block
  // A request of max_model_len 4096: 256 blocks in the full group; the sliding group's window 128
  // with 8,192 batched tokens reaches the whole request, cdiv(4096, 16) + 1 blocks.
  CHECK(v["concurrency"].get<double>() == Approx(static_cast<double>(blocks) / (256 + 257)));
  CHECK(v["starts"] == true);
  // With 64 batched tokens the sliding layers keep cdiv(127 + 64, 16) + 1 = 13 blocks.
  json small = grpo("gpt-oss-20b", 2);
  small["rl"]["rollout"]["max_num_batched_tokens"] = 64;
  small["rl"]["rollout"]["max_num_seqs"] = 64;
  const json s = run(small);
  CHECK(s["vllm"]["concurrency"].get<double>() ==
        Approx(static_cast<double>(u(s["vllm"]["kv_blocks"])) /
               static_cast<double>(256 + cdiv(127 + 64, 16) + 1)));
}

TEST_CASE(
    "rl with sliding-window layers: Gemma 3 1B's 22 sliding and 4 full layers in seven padded "
    "groups of four (the fewest layers of a type)",
    "[rl][hybrid]") {
  const json a = run(grpo("gemma-3-1b-it", 2));
  const json& v = a["vllm"];
  // One kv head (replicated at tp 2) of 256: each layer 16 x 2 x 1 x 256 x 2 B a page.
  const std::uint64_t page = 16 * 2 * 256 * 2;
  CHECK(u(v["kv_group_size"]) == 4);
  CHECK(u(v["kv_groups"]) == 1 + cdiv(22, 4));  // the full group, six sliding (two pads)
  CHECK(u(v["kv_blocks"]) == available(v) / page / 4);
  CHECK(u(v["kv_tokens"]) == u(v["kv_blocks"]) / 7 * 16);
  // Per request: the full group 256 blocks, each sliding group min(511 + 8192, 4096) -> 257.
  CHECK(v["concurrency"].get<double>() ==
        Approx(static_cast<double>(u(v["kv_blocks"])) / (256 + 6 * 257)));
  // The answer says how vLLM grouped the layers.
  CHECK(a["notes"].dump().find("hybrid KV cache manager: 7 groups of 4") != std::string::npos);
}

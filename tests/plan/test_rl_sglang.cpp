// verl's RL step with SGLang as its rollout (rl_sglang.cpp, SGLang 0.5.6 as verl b178a3c pins
// it): GRPO for Qwen2.5-7B on 8 H100s, rollout tp 2, each SGLang figure by hand from
// model_runner.py's rule (profile_max_num_token, init_memory_pool) and verl's bucketed weight
// sync, and what SGLang's settings refuse.
#include <cmath>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "plan/qwen25_7b.hpp"

using namespace actmem::test;
using namespace actmem::test::qwen25_7b;

namespace {

json grpo_sglang(const json& rollout = json::object()) {
  json r = {{"engine", "sglang"}, {"tp", 2}, {"gpu_memory_utilization", 0.5}};
  for (auto it = rollout.begin(); it != rollout.end(); ++it) r[it.key()] = it.value();
  return {{"command", "rl"},
          {"preset", "qwen2.5-7b"},
          {"config",
           {{"dp", 8},
            {"micro_batch", 4},
            {"seq", 4096},
            {"response_len", 3072},
            {"gpu", "h100-80gb"}}},
          {"rl", {{"reference", true}, {"rollout", r}}}};
}

}  // namespace

TEST_CASE(
    "rl GRPO with SGLang, Qwen2.5-7B on 8 H100s, rollout tp 2: SGLang 0.5.6's KV pool from the "
    "memory free at its start, its maps, and verl's bucketed sync, by hand",
    "[rl]") {
  const json a = run(grpo_sglang());
  REQUIRE(a["rollout"]["engine"] == "sglang");
  // At SGLang's start: the H100's 85,520,809,984 B less the trainer's fixed costs, SGLang's own
  // CUDA context, and the actor's fp32 shard (4P / 8; the reference's parameters stay on the host,
  // verl b178a3c fsdp_workers.py l.524-526).
  const json e = run(json{{"preset", "qwen2.5-7b"},
                          {"config",
                           {{"framework", "verl"},
                            {"dp", 8},
                            {"micro_batch", 4},
                            {"seq", 4096},
                            {"response_len", 3072},
                            {"gpu", "h100-80gb"}}}});
  const std::uint64_t shard = kParams * 4 / 8;
  const std::uint64_t context = overhead(e, "cuda.context");
  const std::uint64_t free = 85520809984ull - u(e["device"]["overhead_bytes"]) - context - shard;
  CHECK(u(a["vllm"]["free_at_start_bytes"]) == free);
  // Its weights at tp 2, bf16 (matrices and vocabulary split, norms replicated).
  const std::uint64_t norms = 2 * kH * kL + kH;
  const std::uint64_t w = ((kParams - norms) / 2 + norms) * 2;
  CHECK(u(a["vllm"]["weights_bytes"]) == w);
  // cell_size: 2 kv heads per rank x 128 x 28 layers x (K, V) x 2 B.
  const std::uint64_t cell = 2 * 128 * kL * 2 * 2;
  CHECK(u(a["vllm"]["kv_bytes_per_token"]) == cell);
  // rest = (free - W) / 2^30 - free / 2^30 x (1 - 0.5) GiB; tokens = int(rest x 2^30 // cell),
  // Python's float floor division (the operands here are far from a tie).
  const double gib = 1073741824.0;
  const double rest = static_cast<double>(free - w) / gib - static_cast<double>(free) / gib * 0.5;
  const auto tokens =
      static_cast<std::uint64_t>(std::floor(rest * gib / static_cast<double>(cell)));
  CHECK(u(a["vllm"]["kv_tokens"]) == tokens);
  // The pool: K and V of tokens + 1 rows (page size 1) per layer.
  CHECK(u(a["vllm"]["kv_cache_bytes"]) == (tokens + 1) * cell);
  // Awake: weights, the pool, the request map (256 x (131,072 + 4) int32) and the pool's free
  // list (one int64 per token).
  const std::uint64_t awake = w + (tokens + 1) * cell + 256 * (131072 + 4) * 4 + tokens * 8;
  const json& gen = rl_phase(a, "generate");
  CHECK(rl_line(gen, "weights, KV pool") == awake);
  CHECK(u(a["vllm"]["sglang_maps_bytes"]) == 256 * (131072 + 4) * 4 + tokens * 8);
  CHECK(u(a["vllm"]["requested_bytes"]) == awake);
  // Generation's activations outside the fraction: 8,192 tokens (SGLang's chunked prefill for an
  // 80 GB GPU) through the widest layer, the sampler's fp32 logits for 256 requests.
  const std::uint64_t act = 8192 * (2 * kH + 36 * 128 / 2 + 3 * kF / 2) * 2 + 256 * kV * 8;
  CHECK(rl_line(gen, "generation's activations") == act);
  CHECK(rl_line(gen, "CUDA context") == context);
  // The sync: the embedding (V x h fp32, larger than the 2,048 MiB bucket) fills a bucket alone;
  // the bucket sent and the next, and two parameters whole.
  const json& sync = rl_phase(a, "weight_sync");
  CHECK(rl_line(sync, "two buckets") == 2 * kV * kH * 4);
  CHECK(rl_line(sync, "two parameters gathered whole") == 2 * kV * kH * 4);
  CHECK(rl_line(sync, "weights (tensor-parallel shard") == w);
  // Asleep (free_cache_engine): its context only in the update.
  const json& upd = rl_phase(a, "update");
  CHECK(rl_line(upd, "weights, KV pool") == 0);
  CHECK(rl_line(upd, "CUDA context") == context);
  CHECK(a["vllm"]["starts"] == true);
  for (const json& p : a["phases"]) CHECK(u(p["total_bytes"]) == rl_lines_sum(p));
  // SGLang's pool grows with the memory free at its start: offloading the actor's shard frees
  // 4P / 8 there, of which half (1 - 0.5) goes to the pool. The reference's offload key changes
  // nothing (verl keeps it on the host either way) and the answer says so.
  const json off = run([] {
    json r = grpo_sglang();
    r["rl"]["param_offload"] = true;
    return r;
  }());
  const double rest2 =
      static_cast<double>(free + shard - w) / gib - static_cast<double>(free + shard) / gib * 0.5;
  CHECK(u(off["vllm"]["kv_tokens"]) ==
        static_cast<std::uint64_t>(std::floor(rest2 * gib / static_cast<double>(cell))));
  const json ref_off = run([] {
    json r = grpo_sglang();
    r["rl"]["ref_param_offload"] = true;
    return r;
  }());
  CHECK(ref_off["vllm"] == a["vllm"]);
  CHECK(ref_off["phases"] == a["phases"]);
  bool said = false;
  for (const json& n : ref_off["notes"])
    said = said ||
           n.get<std::string>().find("rl.ref_param_offload changes nothing") != std::string::npos;
  CHECK(said);
}

TEST_CASE("rl with SGLang: too small a fraction leaves no pool, and vLLM's keys are refused",
          "[rl]") {
  // 0.09 x the free memory (about 79 GB at SGLang's start) does not hold the 7.6 GB of weights:
  // SGLang raises at start.
  const json small = run(grpo_sglang({{"gpu_memory_utilization", 0.09}}));
  CHECK(u(small["vllm"]["kv_tokens"]) == 0);
  CHECK(small["vllm"]["starts"] == false);
  bool noted = false;
  for (const json& n : small["notes"])
    noted = noted || n.get<std::string>().find("Not enough memory") != std::string::npos;
  CHECK(noted);
  auto msg = [](const json& req) {
    const json r = actmem::evaluate_json(req);
    return r.value("ok", true) ? std::string("ok") : r["error"]["message"].get<std::string>();
  };
  for (const char* k : {"block_size", "max_num_batched_tokens", "max_model_len"})
    CHECK(msg(grpo_sglang({{k, 4096}})) ==
          std::string("rl.rollout.") + k +
              ": vLLM's setting; verl passes none to SGLang (page size 1, its chunked prefill by "
              "the GPU's memory, the model's context length)");
  json orl = grpo_sglang();
  orl["rl"]["framework"] = "openrlhf";
  CHECK(msg(orl) == "rl.rollout.engine: OpenRLHF generates with vLLM");
  // The fix the answer offers: the smallest fraction that holds one sequence, verified.
  bool fixed = false;
  for (const json& f : small["fixes"])
    fixed =
        fixed || f["change"].get<std::string>().rfind("rl.rollout.gpu_memory_utilization=", 0) == 0;
  CHECK(fixed);
  json trl = grpo_sglang();
  trl["rl"]["framework"] = "trl";
  CHECK(msg(trl) ==
        "rl.rollout.engine: 'sglang': TRL's GRPOTrainer generates with vllm or transformers "
        "(SGLang is verl's: give rl.framework verl)");
  CHECK(msg(grpo_sglang({{"engine", "tgi"}})) ==
        "rl.rollout.engine: 'tgi' is not allowed; allowed: vllm, sglang, transformers");
}

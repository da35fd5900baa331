// verl's RL step with LoRA (rl.hpp, issue 37): GRPO as verl b178a3c runs an FSDP actor with peft
// adapters beside a vLLM rollout serving them (docs/frameworks.md, "LoRA in verl's step"), each
// phase's LoRA lines checked by hand for Qwen2.5-7B on 8 H100s (rollout tp 2, r 32, every linear),
// and what verl and vLLM refuse.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "plan/qwen25_7b.hpp"

using namespace actmem::test;
using namespace actmem::test::qwen25_7b;

namespace {

json grpo_lora(const json& rl = json::object(), const json& config = json::object()) {
  json c = {{"dp", 8},
            {"micro_batch", 4},
            {"seq", 4096},
            {"response_len", 3072},
            {"gpu", "h100-80gb"},
            {"lora_rank", 32}};
  for (auto it = config.begin(); it != config.end(); ++it) c[it.key()] = it.value();
  const json r = rl_merged(
      {{"reference", true}, {"rollout", {{"tp", 2}, {"gpu_memory_utilization", 0.5}}}}, rl);
  return {{"command", "rl"}, {"preset", "qwen2.5-7b"}, {"config", c}, {"rl", r}};
}

// peft's adapters at r 32 on every linear: A [32, in] and B [out, 32] for q and o (h, h), k and v
// (h, 512), gate and up (h, f), down (f, h); fp32 like the actor verl builds.
constexpr std::uint64_t kLayerAdapters = 32 * (2 * (kH + kH) + 2 * (kH + kKv) + 3 * (kH + kF));
constexpr std::uint64_t kAdapters = kL * kLayerAdapters;

std::string refusal_field(const json& req) {
  const json r = actmem::evaluate_json(req);
  return r.value("ok", true) ? std::string("ok") : r["error"]["field"].get<std::string>();
}

}  // namespace

TEST_CASE(
    "rl verl with LoRA, Qwen2.5-7B on 8 H100s: the actor's shards, no reference model, the "
    "summon before the sync and vLLM's LoRA slots by hand (verl b178a3c, vLLM create_lora_weights)",
    "[rl][lora]") {
  static_assert(kAdapters == 80'740'352, "r 32 is twice the TRL test's r 16 count");
  const json a = run(grpo_lora());
  // verl's default targets: peft's all-linear (the framework default, with its source).
  bool targets = false;
  for (const json& d : a["framework_defaults"])
    targets = targets || (d["key"] == "lora_targets" && d["value"].size() == 7);
  CHECK(targets);
  // The actor: the frozen base and the adapters in fp32, FULL_SHARD over 8 GPUs; AdamW's states
  // for the adapters alone.
  const std::uint64_t shard = (4 * kParams + 4 * kAdapters) / 8;
  for (const json& p : a["phases"]) {
    INFO(p["id"]);
    CHECK(u(p["total_bytes"]) == rl_lines_sum(p));
    CHECK(rl_line(p, "reference parameters") == 0);  // ray_trainer.py l.298-302: ref_in_actor
    if (p["id"] == "update") continue;
    CHECK(rl_line(p, "actor parameters") == shard);
    CHECK(rl_line(p, "actor optimizer states") == 8 * kAdapters / 8);
  }
  // The collection before the sync: every FSDP unit summoned whole in fp32, and at vLLM's sleep
  // level 2 the base model copied back to the GPU inside a second summon; vLLM asleep.
  const json& col = rl_phase(a, "lora_collect");
  CHECK(a["phases"][0]["id"] == "lora_collect");
  CHECK(rl_line(col, "every FSDP unit summoned whole") == 4 * (kParams + kAdapters));
  CHECK(rl_line(col, "the base model copied back") == 4 * (kParams + kAdapters));
  CHECK(rl_line(col, "its budget") == 0);
  CHECK(rl_line(col, "weights (tensor-parallel shard") == 0);
  CHECK(a["peak"]["phase"] == "lora_collect");
  // The sync itself: host tensors through the bucket, no parameter gathered on the GPU.
  const json& sync = rl_phase(a, "weight_sync");
  CHECK(rl_line(sync, "bucket buffer") == std::uint64_t{2048} << 20);
  CHECK(rl_line(sync, "the largest parameter") == 0);
  // The reference's log-probabilities: the actor's forward with its adapters off.
  const json& ref = rl_phase(a, "ref_log_prob");
  CHECK(ref["label"].get<std::string>().find("adapters disabled") != std::string::npos);
  CHECK(rl_line(ref, "forward without grad") ==
        rl_line(rl_phase(a, "old_log_prob"), "forward without grad"));
  // vLLM's slots at max_lora_rank 32, tp 2, bf16: per layer qkv_proj's three lora_a [32, h] and
  // lora_b [1792 + 256 + 256, 32], o_proj's [32, 1792] and [h, 32], gate_up_proj's two [32, h]
  // and two [f / 2, 32], down_proj's [32, f / 2] and [h, 32].
  const std::uint64_t q = 28 * 128 / 2, kv = 2 * 128;
  const std::uint64_t per_layer =
      32 * ((3 * kH + (q + 2 * kv)) + (q + kH) + (2 * kH + 2 * (kF / 2)) + (kF / 2 + kH));
  const std::uint64_t slots = kL * per_layer * 2;
  CHECK(u(a["vllm"]["max_lora_rank"]) == 32);
  CHECK(u(a["vllm"]["lora_slots_bytes"]) == slots);
  // They come out of the budget before the KV cache (test_rl.cpp's weights and profile).
  const std::uint64_t norms = 2 * kH * kL + kH;
  const std::uint64_t vllm_weights = ((kParams - norms) / 2 + norms) * 2;
  const std::uint64_t profile = 8192 * (2 * kH + 36 * 128 / 2 + 3 * kF / 2) * 2 + 256 * kV * 8;
  const std::uint64_t page = 16 * kL * 2 * 2 * 128 * 2;
  CHECK(u(a["vllm"]["kv_blocks"]) == (42760404992 - vllm_weights - slots - profile) / page);
}

TEST_CASE("rl verl with LoRA: layered_summon gathers one layer and sends only the adapters",
          "[rl][lora]") {
  const json a = run(grpo_lora({{"rollout", {{"layered_summon", true}}}}));
  const json& col = rl_phase(a, "lora_collect");
  CHECK(rl_line(col, "the largest decoder layer summoned whole") ==
        4 * (kLayerParams + kLayerAdapters));
  CHECK(rl_line(col, "every FSDP unit") == 0);
  CHECK(rl_line(col, "the base model copied back") == 0);
  CHECK(rl_phase(a, "weight_sync")["lines"].dump().find("the adapters, from the host") !=
        std::string::npos);
  CHECK(a["peak"]["phase"] == "generate");
  // With param_offload the actor is back on the host once the adapters are collected.
  const json o = run(grpo_lora({{"param_offload", true}, {"rollout", {{"layered_summon", true}}}}));
  CHECK(rl_line(rl_phase(o, "lora_collect"), "actor parameters") ==
        (4 * kParams + 4 * kAdapters) / 8);
  CHECK(rl_line(rl_phase(o, "weight_sync"), "actor parameters") == 0);
  CHECK(rl_line(rl_phase(o, "generate"), "actor parameters") == 0);
}

TEST_CASE("rl verl with LoRA: on A100 40GB the summon does not fit and layered_summon is the fix",
          "[rl][lora]") {
  const json a = run(grpo_lora({}, {{"gpu", "a100-40gb"}}));
  CHECK(a["fits"] == false);
  CHECK(a["peak"]["phase"] == "lora_collect");
  REQUIRE(a["fixes"].size() >= 1);
  CHECK(a["fixes"][0]["change"] == "rl.rollout.layered_summon=true");
  // PPO's critic trains whole (critic.model.lora_rank 0): its shard is test_rl.cpp's.
  const json p = run(grpo_lora({{"algorithm", "ppo"}}));
  const std::uint64_t critic = kParams - kV * kH + kH + 1;
  CHECK(rl_line(rl_phase(p, "generate"), "critic parameters") == (critic * 4 + 7) / 8);
  CHECK(rl_line(rl_phase(p, "generate"), "critic optimizer states") == critic * 8 / 8);
}

TEST_CASE(
    "rl verl with LoRA: the summon as stored (a bf16 base), none when the actor is not sharded, "
    "and the bucket's check against what the sync sends",
    "[rl][lora]") {
  // fsdp_config.model_dtype bf16: the base summoned in bf16, the adapters in fp32.
  const json bf = run(grpo_lora({}, {{"param_dtype", "bf16"}}));
  CHECK(rl_line(rl_phase(bf, "lora_collect"), "every FSDP unit summoned whole") ==
        2 * kParams + 4 * kAdapters);
  // One GPU (NO_SHARD): the parameters are whole, the summon gathers nothing; the copies made
  // back inside it at sleep level 2 stay.
  json one = grpo_lora({{"rollout", {{"tp", 1}}}}, {{"dp", 1}, {"gpu", "h200-141gb"}});
  const json o = run(one);
  CHECK(rl_line(rl_phase(o, "lora_collect"), "every FSDP unit") == 0);
  CHECK(rl_line(rl_phase(o, "lora_collect"), "the base model copied back") ==
        4 * (kParams + kAdapters));
  // A 100 MiB bucket: the embedding (1.09 GB in bf16) does not fit it at sleep level 2, which
  // sends the base through it; with layered_summon only the adapters (at most 32 x f x 2 B) go.
  const json full = run(grpo_lora({{"rollout", {{"bucket_bytes", 104857600}}}}));
  CHECK(full["notes"].dump().find("does not fit the weight-sync bucket") != std::string::npos);
  const json layered =
      run(grpo_lora({{"rollout", {{"bucket_bytes", 104857600}, {"layered_summon", true}}}}));
  CHECK(layered["notes"].dump().find("does not fit the weight-sync bucket") == std::string::npos);
  // Without LoRA layered_summon changes only vLLM's sleep level, which the answer says.
  json plain = grpo_lora({{"rollout", {{"layered_summon", true}}}});
  plain["config"].erase("lora_rank");
  CHECK(run(plain)["notes"].dump().find("only sets vLLM's sleep level to 1") != std::string::npos);
}

TEST_CASE("rl verl with LoRA: what verl and vLLM refuse, by field", "[rl][lora]") {
  CHECK(refusal_field(grpo_lora({}, {{"lora_dropout", 0.1}})) == "config.lora_dropout");
  CHECK(refusal_field(grpo_lora({{"rollout", {{"engine", "sglang"}}}})) == "config.lora_rank");
  CHECK(refusal_field(grpo_lora({}, {{"qlora", true}})) == "config.qlora");
  CHECK(refusal_field(grpo_lora({}, {{"lora_dtype", "bf16"}})) == "config.lora_dtype");
  CHECK(refusal_field(grpo_lora({}, {{"lora_rank", 600}})) == "config.lora_rank");
  CHECK(refusal_field(grpo_lora({{"ref_param_offload", true}})) == "rl.ref_param_offload");
  json sg = grpo_lora({{"rollout", {{"engine", "sglang"}, {"layered_summon", true}}}});
  sg["config"].erase("lora_rank");
  CHECK(refusal_field(sg) == "rl.rollout.layered_summon");
  json trl = grpo_lora({{"framework", "trl"}, {"rollout", {{"layered_summon", true}}}});
  CHECK(refusal_field(trl) == "rl.rollout.layered_summon");
  // LoRA under ZeRO-3 is modelled with each layer gathered per pass (FSDP1, DeepSpeed), not
  // with FSDP2's buffers.
  const json tt = actmem::evaluate_json({{"preset", "qwen2.5-7b"},
                                         {"config",
                                          {{"framework", "torchtitan"},
                                           {"dp", 8},
                                           {"lora_rank", 16},
                                           {"lora_targets", {"q_proj", "v_proj"}}}}});
  REQUIRE(tt["ok"] == false);
  CHECK(tt["error"]["field"] == "config.lora_rank");
}

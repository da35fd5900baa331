// The rl command with rl.framework openrlhf (rl_openrlhf.cpp, issue 37): OpenRLHF's hybrid engine
// (OpenRLHF/OpenRLHF 3c3be62, --train.colocate_all), each phase's lines checked by hand for
// Qwen2.5-7B on 8 H100s, and the keys OpenRLHF has not refused by field.
#include <cmath>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "plan/qwen25_7b.hpp"

using namespace actmem::test;
using namespace actmem::test::qwen25_7b;

namespace {

constexpr std::uint64_t kCapacity = 85520809984;

json orl(const json& rl = json::object(), const json& config = json::object()) {
  json c = {{"dp", 8}, {"gpu", "h100-80gb"}};
  for (auto it = config.begin(); it != config.end(); ++it) c[it.key()] = it.value();
  json r = {{"framework", "openrlhf"}};
  for (auto it = rl.begin(); it != rl.end(); ++it) r[it.key()] = it.value();
  return {{"command", "rl"}, {"preset", "qwen2.5-7b"}, {"config", c}, {"rl", r}};
}

std::uint64_t line(const json& p, const std::string& process, const std::string& what_prefix) {
  return rl_process_line(p, process, what_prefix);
}

// The estimate of a model's step with OpenRLHF's keys (its framework defaults).
json step_estimate(const std::string& loss) {
  return run({{"preset", "qwen2.5-7b"},
              {"config",
               {{"framework", "deepspeed"},
                {"zero", 2},
                {"dtype", "bf16"},
                {"attention", "flash"},
                {"recompute", "none"},
                {"loss", loss},
                {"seq", 2048},
                {"dp", 8},
                {"gpu", "h100-80gb"}}}});
}

}  // namespace

TEST_CASE(
    "rl openrlhf, hybrid engine GRPO: Qwen2.5-7B on 8 H100s, vLLM at 0.5 asleep between "
    "generations, DeepSpeed's sleep, every phase's lines by hand (OpenRLHF 3c3be62)",
    "[rl][openrlhf]") {
  const json a =
      run(orl({{"algorithm", "grpo"},
               {"deepspeed_sleep", true},
               {"rollout", {{"gpu_memory_utilization", 0.5}, {"free_cache_engine", true}}}}));
  REQUIRE(a["ok"] == true);
  CHECK(a["framework"] == "openrlhf");
  // OpenRLHF's defaults: ZeRO-2 in bf16 (the bf16 weights whole on every GPU), flash attention,
  // no recompute, its loss, --data.max_len 2048; a reference (--algo.kl.init_coef 0.01).
  const json& gen = rl_phase(a, "generate");
  CHECK(line(gen, "actor", "parameters") == kParams * 2);
  CHECK(line(gen, "actor", "optimizer") == 0);  // DeepSpeed's sleep: on the CPU
  CHECK(line(gen, "reference", "parameters") == kParams * 2);
  // Two DeepSpeed processes with their fixed costs, vLLM's own context and its budget.
  const std::uint64_t fixed = line(gen, "actor", "fixed costs");
  CHECK(line(gen, "reference", "fixed costs") == fixed);
  CHECK(line(gen, "critic", "") == 0);  // GRPO: no critic
  const auto requested = static_cast<std::uint64_t>(std::floor(0.5 * double(kCapacity)));
  CHECK(line(gen, "vllm", "its budget") == requested);
  const std::uint64_t context = line(gen, "vllm", "CUDA context");
  CHECK(context > 0);
  // vLLM's max_model_len is --data.max_len; its sequences and batched tokens vLLM's defaults.
  CHECK(u(a["vllm"]["max_model_len"]) == 2048);
  CHECK(u(a["vllm"]["max_num_seqs"]) == 128);
  // Asleep (level 1) in the forwards and the update: its context alone.
  for (const char* id : {"old_log_prob", "ref_log_prob", "update"}) {
    INFO(id);
    CHECK(line(rl_phase(a, id), "vllm", "") == context);
  }
  // The update: the engine's device figure for the actor with OpenRLHF's keys, the reference
  // beside it.
  const json e = step_estimate("logprob_openrlhf");
  const json& upd = rl_phase(a, "update");
  CHECK(line(upd, "actor", "the training step") == u(e["device"]["total_bytes"]));
  CHECK(line(upd, "reference", "parameters") == kParams * 2);
  // The weight sync: vLLM's weights woken (bf16 at tp 1), the largest parameter (the
  // embedding) cloned for CUDA IPC under ZeRO-2.
  const json& sync = rl_phase(a, "weight_sync");
  CHECK(line(sync, "vllm", "weights (woken") == kParams * 2);
  CHECK(line(sync, "actor", "the largest parameter's clone") == kV * kH * 2);
  // vLLM starts first, against the GPU less its own context.
  CHECK(u(a["vllm"]["free_at_start_bytes"]) == kCapacity - context);
  for (const json& p : a["phases"]) CHECK(u(p["total_bytes"]) == rl_lines_sum(p));
  std::vector<std::string> ids;
  for (const json& p : a["phases"]) ids.push_back(p["id"]);
  CHECK((ids == std::vector<std::string>{"generate", "old_log_prob", "ref_log_prob", "update",
                                         "weight_sync"}));
  CHECK(a["peak"]["phase"] == "generate");
}

TEST_CASE(
    "rl openrlhf, PPO: without DeepSpeed's sleep the critic and the actor train at once on the "
    "same GPUs, with it one after the other",
    "[rl][openrlhf]") {
  const json together = run(orl({{"algorithm", "ppo"}}));
  const json critic = run({{"preset", "qwen2.5-7b"},
                           {"config",
                            {{"framework", "deepspeed"},
                             {"zero", 2},
                             {"dtype", "bf16"},
                             {"attention", "flash"},
                             {"recompute", "none"},
                             {"loss", "value"},
                             {"seq", 2048},
                             {"dp", 8},
                             {"gpu", "h100-80gb"}}}});
  const json actor = step_estimate("logprob_openrlhf");
  const json& upd = rl_phase(together, "update");
  CHECK(line(upd, "actor", "the training step") == u(actor["device"]["total_bytes"]));
  CHECK(line(upd, "critic", "the training step") == u(critic["device"]["total_bytes"]));
  CHECK(find_rl_phase(together, "critic_update") == nullptr);
  CHECK(find_rl_phase(together, "values") != nullptr);
  const json serial = run(orl({{"algorithm", "ppo"}, {"deepspeed_sleep", true}}));
  const json& cu = rl_phase(serial, "critic_update");
  CHECK(line(cu, "critic", "the training step") == u(critic["device"]["total_bytes"]));
  CHECK(line(cu, "actor", "the training step") == 0);
  CHECK(line(rl_phase(serial, "update"), "critic", "the training step") == 0);
  CHECK(u(rl_phase(serial, "update")["total_bytes"]) < u(upd["total_bytes"]));
  // OpenRLHF's own default (vLLM at 0.95, awake) leaves no room beside the models: it does not
  // fit, and DeepSpeed's sleep is among the changes tried.
  CHECK(together["fits"] == false);
}

TEST_CASE("rl openrlhf: what OpenRLHF has no key for is refused by field", "[rl][openrlhf]") {
  auto field = [](const json& req) {
    const json r = actmem::evaluate_json(req);
    return r.value("ok", true) ? std::string("ok") : r["error"]["field"].get<std::string>();
  };
  CHECK(field(orl({{"param_offload", true}})) == "rl.param_offload");
  CHECK(field(orl({{"steps_per_generation", 2}})) == "rl.steps_per_generation");
  CHECK(field(orl({{"rollout", {{"mode", "server"}}}})) == "rl.rollout.mode");
  CHECK(field(orl({{"rollout", {{"bucket_bytes", 1}}}})) == "rl.rollout.bucket_bytes");
  CHECK(field(orl({{"algorithm", "dpo"}})) == "rl.algorithm");
  CHECK(field(orl({}, {{"framework", "hf-trainer"}})) == "config.framework");
  CHECK(field(orl({}, {{"response_len", 512}})) == "config.response_len");
  // LoRA (--lora_rank) is modelled for TRL's PEFT and verl's (test_rl_lora.cpp), not OpenRLHF's.
  const json lora = {{"lora_rank", 16}, {"lora_targets", {"q_proj"}}};
  CHECK(field(orl({}, lora)) == "config.lora_rank");
  json verl_lora = orl({}, lora);
  verl_lora["rl"]["framework"] = "verl";
  verl_lora["config"].erase("framework");
  CHECK(field(verl_lora) == "ok");
  // OpenRLHF's keys belong to it.
  json verl = orl({{"deepspeed_sleep", true}});
  verl["rl"]["framework"] = "verl";
  CHECK(field(verl) == "rl.deepspeed_sleep");
}

TEST_CASE(
    "rl openrlhf: --ref.offload and --reward.offload under ZeRO-3 take the models' shards off the "
    "GPU, their forwards unchanged (OpenRLHF 3c3be62 launcher.py l.114-122, l.169-178)",
    "[rl][openrlhf]") {
  const json base = run(orl({{"reward_model", true}}, {{"zero", 3}}));
  const json off =
      run(orl({{"reward_model", true}, {"reference_offload", true}, {"reward_offload", true}},
              {{"zero", 3}}));
  REQUIRE(off["ok"] == true);
  // ZeRO-3's bf16 shard of the reference (2P / 8) leaves every phase; the reward model's too.
  for (const json& p : off["phases"]) {
    INFO(p["id"]);
    CHECK(line(p, "reference", "parameters") == 0);
    CHECK(line(p, "reward", "parameters") == 0);
    const json& q = rl_phase(base, p["id"]);
    CHECK(line(q, "reference", "parameters") == kParams * 2 / 8);
    CHECK(u(q["total_bytes"]) - u(p["total_bytes"]) ==
          line(q, "reference", "parameters") + line(q, "reward", "parameters"));
  }
  CHECK(line(rl_phase(off, "ref_log_prob"), "reference", "forward") ==
        line(rl_phase(base, "ref_log_prob"), "reference", "forward"));
  auto field = [](const json& req) {
    const json r = actmem::evaluate_json(req);
    return r.value("ok", true) ? std::string("ok") : r["error"]["field"].get<std::string>();
  };
  // Under ZeRO-2 OpenRLHF's eval engine runs stage 0, which offloads no parameter.
  CHECK(field(orl({{"reference_offload", true}})) == "rl.reference_offload");
  CHECK(field(orl({{"reference", false}, {"reference_offload", true}}, {{"zero", 3}})) ==
        "rl.reference_offload");
  CHECK(field(orl({{"reward_offload", true}}, {{"zero", 3}})) == "rl.reward_offload");
  json verl = orl({{"reference_offload", true}});
  verl["rl"]["framework"] = "verl";
  CHECK(field(verl) == "rl.reference_offload");
}

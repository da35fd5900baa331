// The rl command with OpenRLHF's separate pools (rl.rollout.mode separate, rl_openrlhf.cpp, issue
// 37): OpenRLHF/OpenRLHF 3c3be62 without --train.colocate_all, every model's Ray actors and vLLM's
// engines on GPUs of their own (cli/train_ppo_ray.py l.41-138), each pool's phases checked by hand
// for Qwen2.5-7B on H100s, and OpenRLHF's layout assertions refused by field.
#include <cmath>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "plan/qwen25_7b.hpp"

using namespace actmem::test;
using namespace actmem::test::qwen25_7b;

namespace {

constexpr std::uint64_t kCapacity = 85520809984;  // H100 80GB's total (presets/gpus)

json sep(const json& rl = json::object(), const json& config = json::object()) {
  json c = {{"dp", 8}, {"gpu", "h100-80gb"}};
  for (auto it = config.begin(); it != config.end(); ++it) c[it.key()] = it.value();
  const json r = rl_merged({{"framework", "openrlhf"}, {"rollout", {{"mode", "separate"}}}}, rl);
  return {{"command", "rl"}, {"preset", "qwen2.5-7b"}, {"config", c}, {"rl", r}};
}

// The phase with this id on this pool.
const json& pool_phase(const json& a, const std::string& pool, const std::string& id) {
  for (const json& p : a["phases"])
    if (p.value("pool", "") == pool && p["id"] == id) return p;
  FAIL("no phase " << pool << "/" << id);
  return a;
}

std::uint64_t line(const json& p, const std::string& process, const std::string& what_prefix) {
  return rl_process_line(p, process, what_prefix);
}

std::vector<std::string> phase_names(const json& a) {
  std::vector<std::string> out;
  for (const json& p : a["phases"])
    out.push_back(p["pool"].get<std::string>() + "/" + p["id"].get<std::string>());
  return out;
}

// A DeepSpeed step's device figure for Qwen2.5-7B with OpenRLHF's keys (its framework defaults).
json step_estimate(const std::string& loss, std::uint64_t dp, int zero) {
  return run({{"preset", "qwen2.5-7b"},
              {"config",
               {{"framework", "deepspeed"},
                {"zero", zero},
                {"dtype", "bf16"},
                {"attention", "flash"},
                {"recompute", "none"},
                {"loss", loss},
                {"seq", 2048},
                {"dp", dp},
                {"gpu", "h100-80gb"}}}});
}

}  // namespace

TEST_CASE(
    "rl openrlhf separate pools, GRPO: vLLM awake on its own GPU, the actor and the reference on "
    "8 H100s each, every pool's lines by hand (OpenRLHF 3c3be62 train_ppo_ray.py l.41-138)",
    "[rl][openrlhf]") {
  const json a = run(sep());
  REQUIRE(a["ok"] == true);
  CHECK(a["rollout"]["mode"] == "separate");
  CHECK((phase_names(a) ==
         std::vector<std::string>{"vllm/generate", "vllm/weight_sync", "actor/old_log_prob",
                                  "actor/update", "actor/weight_sync", "reference/ref_log_prob"}));
  // vLLM (no sleep without colocate_all, l.663-665): its context and 0.95 of the GPU's total,
  // and at the sync the whole embedding (V x h, the largest parameter) received in bf16
  // (vllm_worker_wrap.py update_weight: torch.empty(shape)).
  const json& gen = pool_phase(a, "vllm", "generate");
  const std::uint64_t context = line(gen, "vllm", "CUDA context");
  const auto budget = static_cast<std::uint64_t>(std::floor(0.95 * double(kCapacity)));
  CHECK(line(gen, "vllm", "its budget") == budget);
  CHECK(u(gen["total_bytes"]) == context + budget);
  const json& vsync = pool_phase(a, "vllm", "weight_sync");
  CHECK(line(vsync, "vllm", "the largest parameter received whole") == kV * kH * 2);
  CHECK(u(vsync["total_bytes"]) == context + budget + kV * kH * 2);
  // The actor (ZeRO-2, 8 GPUs): bf16 weights whole, fp32 master weights and AdamW's two states
  // partitioned (12 B per parameter / 8); its update the engine's device figure; at the sync
  // param.data is broadcast in place (nothing gathered, nothing cloned).
  const json& old = pool_phase(a, "actor", "old_log_prob");
  CHECK(line(old, "actor", "parameters") == kParams * 2);
  CHECK(line(old, "actor", "optimizer states") == kParams * 12 / 8);
  CHECK(line(old, "reference", "") == 0);  // the reference is on its own GPUs
  CHECK(line(old, "vllm", "") == 0);
  const json e = step_estimate("logprob_openrlhf", 8, 2);
  CHECK(u(pool_phase(a, "actor", "update")["total_bytes"]) == u(e["device"]["total_bytes"]));
  const json& async = pool_phase(a, "actor", "weight_sync");
  const std::uint64_t fixed = line(async, "actor", "fixed costs");
  CHECK(u(async["total_bytes"]) == fixed + kParams * 2 + kParams * 12 / 8);
  // The reference (ZeRO-2's rule: whole in bf16, deepspeed.py l.489-501) and its forward alone.
  const json& ref = pool_phase(a, "reference", "ref_log_prob");
  CHECK(line(ref, "reference", "parameters") == kParams * 2);
  CHECK(line(ref, "reference", "forward") == line(old, "actor", "forward"));
  // Pools: one engine of tp 1 (rl.rollout.num_engines), the actor's 8, the reference's 8.
  REQUIRE(a["pools"].size() == 3);
  CHECK(a["pools"][0]["name"] == "vllm");
  CHECK(u(a["pools"][0]["gpus"]) == 1);
  CHECK(a["pools"][0]["peak"]["phase"] == "weight_sync");
  CHECK(u(a["pools"][1]["gpus"]) == 8);
  CHECK(a["pools"][1]["peak"]["phase"] == "update");
  CHECK(u(a["gpus"]) == 17);
  CHECK(a["peak"]["pool"] == "vllm");
  CHECK(a["peak"]["phase"] == "weight_sync");
  CHECK(u(a["peak"]["bytes"]) == context + budget + kV * kH * 2);
  CHECK(a["fits"] == true);
  for (const json& p : a["phases"]) CHECK(u(p["total_bytes"]) == rl_lines_sum(p));
}

TEST_CASE(
    "rl openrlhf separate pools, ZeRO-3: the actor gathers each parameter whole for the broadcast "
    "(no clone), the reference shards over its own 4 GPUs",
    "[rl][openrlhf]") {
  const json a = run(sep({{"reference_gpus", 4}}, {{"zero", 3}}));
  REQUIRE(a["ok"] == true);
  const json& async = pool_phase(a, "actor", "weight_sync");
  CHECK(line(async, "actor", "the largest parameter gathered whole") == kV * kH * 2);
  CHECK(line(async, "actor", "parameters") == kParams * 2 / 8);
  CHECK(line(pool_phase(a, "reference", "ref_log_prob"), "reference", "parameters") ==
        kParams * 2 / 4);
  CHECK(u(a["pools"][2]["gpus"]) == 4);
  CHECK(u(pool_phase(a, "actor", "update")["total_bytes"]) ==
        u(step_estimate("logprob_openrlhf", 8, 3)["device"]["total_bytes"]));
}

TEST_CASE(
    "rl openrlhf separate pools, PPO with a reward model: the actor with the reference, the critic "
    "with the reward model (--train.colocate_actor_ref, --train.colocate_critic_reward), 4 GPUs "
    "each, 4 vLLM engines of tp 2 (examples/scripts/train_ppo_ray_slurm.sh's layout)",
    "[rl][openrlhf]") {
  const json a = run(sep({{"algorithm", "ppo"},
                          {"reward_model", true},
                          {"colocate_actor_ref", true},
                          {"colocate_critic_reward", true},
                          {"reference_gpus", 4},
                          {"critic_gpus", 4},
                          {"reward_gpus", 4},
                          {"rollout", {{"num_engines", 4}, {"tp", 2}}}},
                         {{"dp", 4}, {"zero", 3}}));
  REQUIRE(a["ok"] == true);
  CHECK((phase_names(a) == std::vector<std::string>{
                               "vllm/generate", "vllm/weight_sync", "actor+reference/old_log_prob",
                               "actor+reference/ref_log_prob", "actor+reference/update",
                               "actor+reference/weight_sync", "critic+reward/reward",
                               "critic+reward/values", "critic+reward/critic_update"}));
  // Without DeepSpeed's sleep the critic trains on its own GPUs while the actor trains on its:
  // each pool holds one step (ppo_trainer.py l.287-296).
  const json critic = step_estimate("value", 4, 3);
  const json& cu = pool_phase(a, "critic+reward", "critic_update");
  CHECK(line(cu, "critic", "the training step") == u(critic["device"]["total_bytes"]));
  CHECK(line(cu, "reward", "parameters") > 0);  // the reward model's shard beside it
  const json& upd = pool_phase(a, "actor+reference", "update");
  CHECK(line(upd, "critic", "") == 0);
  CHECK(line(upd, "actor", "the training step") ==
        u(step_estimate("logprob_openrlhf", 4, 3)["device"]["total_bytes"]));
  CHECK(line(upd, "reference", "parameters") == kParams * 2 / 4);
  CHECK(u(a["pools"][0]["gpus"]) == 8);  // 4 engines x tp 2
  CHECK(u(a["gpus"]) == 16);
  CHECK(a["fits"] == true);
}

TEST_CASE(
    "rl openrlhf separate pools: the fixes are vLLM's own GPUs' (its utilization against the "
    "sync's received parameter), never sleep mode",
    "[rl][openrlhf]") {
  const json a = run(sep({{"rollout", {{"gpu_memory_utilization", 0.99}}}}));
  REQUIRE(a["ok"] == true);
  CHECK(a["fits"] == false);
  CHECK(a["peak"]["pool"] == "vllm");
  REQUIRE(a["fixes"].size() >= 1);
  for (const json& f : a["fixes"])
    CHECK(f["change"].get<std::string>().find("free_cache_engine") == std::string::npos);
  CHECK(a["fixes"][0]["change"] == "rl.rollout.gpu_memory_utilization=0.97");
  CHECK(a["fixes"][0]["phase"] == "vllm/weight_sync");
  CHECK(u(a["fixes"][0]["peak_bytes"]) <= kCapacity);
}

TEST_CASE("rl openrlhf separate pools: OpenRLHF's layout assertions and unused keys by field",
          "[rl][openrlhf]") {
  auto field = [](const json& req) {
    const json r = actmem::evaluate_json(req);
    return r.value("ok", true) ? std::string("ok") : r["error"]["field"].get<std::string>();
  };
  // Sleep is forced off without colocate_all (train_ppo_ray.py l.663-665).
  CHECK(field(sep({{"rollout", {{"free_cache_engine", true}}}})) == "rl.rollout.free_cache_engine");
  // Colocated groups are the same size (l.41-46, l.109-113).
  CHECK(field(sep({{"colocate_actor_ref", true}, {"reference_gpus", 4}})) == "rl.reference_gpus");
  CHECK(field(sep({{"algorithm", "ppo"},
                   {"reward_model", true},
                   {"colocate_critic_reward", true},
                   {"reward_gpus", 4}})) == "rl.reward_gpus");
  // A key for a model the step does not load.
  CHECK(field(sep({{"reference", false}, {"reference_gpus", 4}})) == "rl.reference_gpus");
  CHECK(field(sep({{"critic_gpus", 4}})) == "rl.critic_gpus");  // GRPO: no critic
  CHECK(field(sep({{"reward_gpus", 4}})) == "rl.reward_gpus");
  CHECK(field(sep({{"algorithm", "ppo"}, {"colocate_critic_reward", true}})) ==
        "rl.colocate_critic_reward");
  CHECK(field(sep({{"reference_gpus", 0}})) == "rl.reference_gpus");
  // The pools' keys need separate pools; --train.colocate_all's engines fill the actor's GPUs.
  json colocated = sep({{"reference_gpus", 8}});
  colocated["rl"]["rollout"]["mode"] = "colocate";
  CHECK(field(colocated) == "rl.reference_gpus");
  json engines = sep({{"rollout", {{"num_engines", 3}}}});
  engines["rl"]["rollout"]["mode"] = "colocate";
  CHECK(field(engines) == "rl.rollout.num_engines");
  engines["rl"]["rollout"]["num_engines"] = 8;  // 8 engines x tp 1 = the actor's 8 GPUs
  CHECK(field(engines) == "ok");
  // Other frameworks have no separate pools.
  json verl = sep();
  verl["rl"]["framework"] = "verl";
  CHECK(field(verl) == "rl.rollout.mode");
  json trl = sep();
  trl["rl"]["framework"] = "trl";
  CHECK(field(trl) == "rl.rollout.mode");
  json verl_pool = {{"command", "rl"},
                    {"preset", "qwen2.5-7b"},
                    {"config", {{"dp", 8}, {"gpu", "h100-80gb"}}},
                    {"rl", {{"critic_gpus", 8}}}};
  CHECK(field(verl_pool) == "rl.critic_gpus");
}

TEST_CASE(
    "rl openrlhf separate pools: rollout options keep vLLM's GPUs (engines x tp), a fix names the "
    "run's GPUs, and vLLM's pool does not fit where vLLM does not start",
    "[rl][openrlhf]") {
  const json a = run(sep({{"rollout", {{"num_engines", 4}, {"tp", 2}}}}));
  REQUIRE(a["ok"] == true);
  // Qwen2.5-7B's 28 heads: tp 1, 2 and 4 over vLLM's 8 GPUs, ranked by the engines' caches
  // together; each option is the step asked with that split.
  std::vector<std::uint64_t> tps;
  for (const json& o : a["rollout_options"]) {
    tps.push_back(u(o["tp"]));
    CHECK(u(o["tp"]) * u(o["num_engines"]) == 8);
    json same = sep({{"rollout", {{"num_engines", o["num_engines"]}, {"tp", o["tp"]}}}});
    CHECK(u(run(same)["vllm"]["kv_tokens"]) == u(o["kv_tokens"]));
  }
  CHECK((tps == std::vector<std::uint64_t>{4, 2, 1}));
  // Undoing the actor-reference colocation adds the reference's own GPUs: the fix says so.
  const json tight = run(sep({{"colocate_actor_ref", true}, {"reference_gpus", 4}},
                             {{"dp", 4}, {"gpu", "a100-80gb"}, {"micro_batch", 2}}));
  REQUIRE(tight["ok"] == true);
  bool undo = false;
  for (const json& f : tight["fixes"])
    if (f["change"] == "rl.colocate_actor_ref=false") {
      undo = true;
      CHECK(u(f["gpus"]) == u(tight["gpus"]) + 4);
    }
  CHECK(undo == (tight["fits"] == false));
  // vLLM at 0.05 of an H100 holds no KV block: its pool does not fit, and the smallest
  // utilization that starts it is offered, verified.
  const json low = run(sep({{"rollout", {{"gpu_memory_utilization", 0.05}}}}));
  CHECK(low["vllm"]["starts"] == false);
  CHECK(low["pools"][0]["name"] == "vllm");
  CHECK(low["pools"][0]["fits"] == false);
  REQUIRE(low["fixes"].size() >= 1);
  const std::string change = low["fixes"][0]["change"];
  REQUIRE(change.rfind("rl.rollout.gpu_memory_utilization=", 0) == 0);
  const double util = std::stod(change.substr(change.find('=') + 1));
  CHECK(run(sep({{"rollout", {{"gpu_memory_utilization", util}}}}))["vllm"]["starts"] == true);
  CHECK(run(sep({{"rollout", {{"gpu_memory_utilization", util - 0.01}}}}))["vllm"]["starts"] ==
        false);
}

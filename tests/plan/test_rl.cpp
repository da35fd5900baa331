// The rl command (rl.hpp, issue 37): GRPO as verl b178a3c runs it beside a vLLM rollout on every
// GPU, each phase's lines checked by hand for Qwen2.5-7B on 8 H100s (rollout tp 2), and what vLLM
// and verl refuse.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "plan/qwen25_7b.hpp"

using namespace actmem::test;
using namespace actmem::test::qwen25_7b;

namespace {

json grpo(const json& rl = json::object(), const json& config = json::object()) {
  json c = {
      {"dp", 8}, {"micro_batch", 4}, {"seq", 4096}, {"response_len", 3072}, {"gpu", "h100-80gb"}};
  for (auto it = config.begin(); it != config.end(); ++it) c[it.key()] = it.value();
  json r = {{"reference", true}, {"rollout", {{"tp", 2}, {"gpu_memory_utilization", 0.5}}}};
  for (auto it = rl.begin(); it != rl.end(); ++it) r[it.key()] = it.value();
  return {{"command", "rl"}, {"preset", "qwen2.5-7b"}, {"config", c}, {"rl", r}};
}

}  // namespace

TEST_CASE(
    "rl GRPO, Qwen2.5-7B on 8 H100s, rollout tp 2: every phase's lines by hand (verl "
    "b178a3c, vLLM V1 start-snapshot rule)",
    "[rl]") {
  const json a = run(grpo());
  // The actor: verl's fp32 FSDP shards over 8 GPUs (4P / 8), AdamW's two fp32 states (8P / 8).
  const std::uint64_t shard = kParams * 4 / 8, adam = kParams * 8 / 8;
  const json& gen = rl_phase(a, "generate");
  CHECK(rl_line(gen, "actor parameters") == shard);
  CHECK(rl_line(gen, "actor optimizer states") == adam);
  // The reference's parameters stay on the host (verl b178a3c fsdp_workers.py l.524-526:
  // CPUOffload(offload_params=True) for every role but the actor): nothing of it between phases.
  CHECK(rl_line(gen, "reference parameters") == 0);
  // vLLM's budget: floor(0.5 x the H100's 85,520,809,984 B as nvidia-smi reports it).
  CHECK(u(a["vllm"]["requested_bytes"]) == 42760404992);
  CHECK(rl_line(gen, "its budget") == 42760404992);
  // vLLM's weights at tp 2: every matrix, bias and the vocabulary split in two, the norms
  // (2h per layer and the final h) replicated; bf16.
  const std::uint64_t norms = 2 * kH * kL + kH;
  const std::uint64_t vllm_weights = ((kParams - norms) / 2 + norms) * 2;
  CHECK(u(a["vllm"]["weights_bytes"]) == vllm_weights);
  // KV per token: 28 layers x (K and V) x 2 kv heads per GPU x 128 x 2 B.
  CHECK(u(a["vllm"]["kv_bytes_per_token"]) == kL * 2 * 2 * 128 * 2);
  // The profiled activation peak's estimate: 8,192 tokens x (2h + (28 + 8) x 128 / 2 + 3f / 2)
  // x 2 B, and the sampler's fp32 logits and probabilities for 256 requests (256 x V x 8 B).
  const std::uint64_t profile = 8192 * (2 * kH + 36 * 128 / 2 + 3 * kF / 2) * 2 + 256 * kV * 8;
  CHECK(u(a["vllm"]["profile_peak_bytes"]) == profile);
  const std::uint64_t page = 16 * kL * 2 * 2 * 128 * 2;
  const std::uint64_t blocks = (42760404992 - vllm_weights - profile) / page;
  CHECK(u(a["vllm"]["kv_blocks"]) == blocks);
  CHECK(u(a["vllm"]["kv_tokens"]) == blocks * 16);
  CHECK(a["vllm"]["starts"] == true);
  // The weight sync: the bucket (2,048 MiB) and the largest parameter, the embedding, gathered
  // whole in fp32 and cast to bf16 (V x h x 6 B); vLLM's weights resumed.
  const json& sync = rl_phase(a, "weight_sync");
  CHECK(rl_line(sync, "bucket buffer") == std::uint64_t{2048} << 20);
  CHECK(rl_line(sync, "the largest parameter") == kV * kH * 6);
  CHECK(rl_line(sync, "weights (tensor-parallel shard") == vllm_weights);
  // The update: the engine's own device figure for the actor's config (verl's defaults), the
  // reference on the host, and vLLM asleep (level 2: its context only).
  json est = {{"preset", "qwen2.5-7b"},
              {"config",
               {{"framework", "verl"},
                {"dp", 8},
                {"micro_batch", 4},
                {"seq", 4096},
                {"response_len", 3072},
                {"gpu", "h100-80gb"}}}};
  const json e = run(est);
  const json& upd = rl_phase(a, "update");
  CHECK(rl_line(upd, "the training step") == u(e["device"]["total_bytes"]));
  CHECK(rl_line(upd, "reference parameters") == 0);
  // The reference's forward: its units gathered one at a time (the forward's estimate), no shard.
  const json& ref = rl_phase(a, "ref_log_prob");
  CHECK(rl_line(ref, "forward without grad") ==
        rl_line(rl_phase(a, "old_log_prob"), "forward without grad"));
  // verl's FSDP root unit (embedding, final norm, head: 2Vh + h elements, a multiple of 8, in
  // bf16) stays gathered through each forward from the root's pre-forward (torch 2.6
  // _post_forward_reshard) until verl reshards it.
  const std::uint64_t root = 2 * (2 * kV * kH + kH);
  CHECK(rl_line(ref, "FSDP root unit") == root);
  CHECK(rl_line(rl_phase(a, "old_log_prob"), "FSDP root unit") == root);
  bool host = false;
  for (const json& n : a["notes"])
    host =
        host || n.get<std::string>().rfind("the reference's parameters stay on the host", 0) == 0;
  CHECK(host);
  CHECK(rl_line(upd, "its budget") == 0);
  // Each phase is the sum of its lines; the peak is the largest phase.
  std::uint64_t peak = 0;
  for (const json& p : a["phases"]) {
    CHECK(u(p["total_bytes"]) == rl_lines_sum(p));
    peak = std::max(peak, u(p["total_bytes"]));
  }
  CHECK(u(a["peak"]["bytes"]) == peak);
  CHECK(a["peak"]["phase"] == "generate");
  CHECK(a["fits"] == true);
  // verl's defaults are listed with their source, as the estimate answer lists a framework's.
  const json& fd = a["framework_defaults"];
  CHECK(fd == e["framework_defaults"]);
  bool loss = false;
  for (const json& d : fd) loss = loss || (d["key"] == "loss" && d["value"] == "logprob");
  CHECK(loss);
}

TEST_CASE(
    "rl PPO, Qwen2.5-7B on 8 H100s: the critic's phases and residency by hand (verl "
    "b178a3c CriticWorker, transformers GenericForTokenClassification)",
    "[rl]") {
  const json a = run(grpo({{"algorithm", "ppo"}}));
  // The critic: the actor's model with a one-label score head (h weights and a bias) in place of
  // lm_head (V x h): fp32 FSDP shards over 8 GPUs (bytes rounded up), AdamW's states.
  const std::uint64_t critic = kParams - kV * kH + kH + 1;
  const std::uint64_t critic_shard = (critic * 4 + 7) / 8, critic_adam = critic * 8 / 8;
  for (const char* id : {"weight_sync", "generate", "old_log_prob", "ref_log_prob", "update"}) {
    INFO(id);
    CHECK(rl_line(rl_phase(a, id), "critic parameters") == critic_shard);
    CHECK(rl_line(rl_phase(a, id), "critic optimizer states") == critic_adam);
  }
  // The critic's update: its own device figure (loss value), the actor's shard beside it (the
  // reference's is on the host).
  const json e = run({{"preset", "qwen2.5-7b"},
                      {"config",
                       {{"framework", "verl"},
                        {"loss", "value"},
                        {"dp", 8},
                        {"micro_batch", 4},
                        {"seq", 4096},
                        {"response_len", 3072},
                        {"gpu", "h100-80gb"}}}});
  const json& cu = rl_phase(a, "critic_update");
  CHECK(rl_line(cu, "the critic's training step") == u(e["device"]["total_bytes"]));
  CHECK(rl_line(cu, "actor parameters") == kParams * 4 / 8);
  CHECK(rl_line(cu, "reference parameters") == 0);
  CHECK(rl_line(cu, "critic parameters") == 0);  // inside its device figure
  // The values phase: the critic's forward without grad; its head is h + 1 wide, not V.
  const json& val = rl_phase(a, "values");
  const json& old = rl_phase(a, "old_log_prob");
  CHECK(rl_line(val, "critic forward") < rl_line(old, "forward without grad"));
  // The critic's root unit: its embedding, final norm and score head (h + 1), Vh + 2h + 1 =
  // 545,004,545 elements padded to 8 ranks of 68,125,569 (torch.chunk), in bf16.
  CHECK(kV * kH + 2 * kH + 1 == 545'004'545);
  CHECK(rl_line(val, "FSDP root unit") == 2 * 68'125'569ull * 8);
  for (const json& p : a["phases"]) CHECK(u(p["total_bytes"]) == rl_lines_sum(p));
  // The order verl's fit loop runs them in.
  std::vector<std::string> ids;
  for (const json& p : a["phases"]) ids.push_back(p["id"]);
  CHECK((ids == std::vector<std::string>{"weight_sync", "generate", "old_log_prob", "ref_log_prob",
                                         "values", "critic_update", "update"}));
  // Offloading the critic takes its lines out of every phase but its own.
  const json off = run(grpo(
      {{"algorithm", "ppo"}, {"critic_param_offload", true}, {"critic_optimizer_offload", true}}));
  CHECK(rl_line(rl_phase(off, "generate"), "critic parameters") == 0);
  CHECK(u(rl_phase(off, "generate")["total_bytes"]) ==
        u(rl_phase(a, "generate")["total_bytes"]) - critic_shard - critic_adam);
}

TEST_CASE("rl: offload, sleep and vLLM's start change what each phase holds", "[rl]") {
  const json base = run(grpo());
  // param_offload: the actor's shard leaves the GPU outside its own phases.
  const json off = run(grpo({{"param_offload", true}, {"optimizer_offload", true}}));
  CHECK(rl_line(rl_phase(off, "generate"), "actor parameters") == 0);
  CHECK(rl_line(rl_phase(off, "generate"), "actor optimizer states") == 0);
  CHECK(rl_line(rl_phase(off, "weight_sync"), "actor parameters") ==
        rl_line(rl_phase(base, "weight_sync"), "actor parameters"));
  // free_cache_engine false: vLLM never sleeps, its budget stays through the update.
  const json awake = run(grpo({{"rollout", {{"tp", 2}, {"free_cache_engine", false}}}}));
  CHECK(rl_line(rl_phase(awake, "update"), "its budget") == u(awake["vllm"]["requested_bytes"]));
  // gpu_memory_utilization 0.95 asks for more than the GPU has free once the actor is built (its
  // fixed costs, vLLM's context and the actor's 4P / 8 shard): vLLM raises at its start.
  const json greedy = run(grpo({{"rollout", {{"tp", 2}, {"gpu_memory_utilization", 0.95}}}}));
  CHECK(greedy["vllm"]["starts"] == false);
  CHECK(greedy["notes"][0].get<std::string>().rfind("vLLM does not start", 0) == 0);
  // A bucket smaller than the embedding: verl asserts.
  const json small = run(grpo({{"rollout", {{"tp", 2}, {"bucket_bytes", 1 << 20}}}}));
  bool note = false;
  for (const json& n : small["notes"])
    note = note ||
           n.get<std::string>().find("does not fit the weight-sync bucket") != std::string::npos;
  CHECK(note);
}

TEST_CASE(
    "rl: a step that does not fit lists each single change that fits, verified by running "
    "it",
    "[rl]") {
  // vLLM's budget at 0.9 of an H100 leaves the trainer too little in generation (since verl's FSDP
  // root unit is counted, the A100 40GB this test used cannot hold the update at all).
  json req = grpo({{"rollout", {{"tp", 2}, {"gpu_memory_utilization", 0.9}}}});
  const json a = run(req);
  REQUIRE(a["fits"] == false);
  REQUIRE(a["fixes"].size() >= 2);
  // The cheapest first: the largest utilization (in hundredths) the generation leaves room for.
  const std::string first = a["fixes"][0]["change"];
  REQUIRE(first.rfind("rl.rollout.gpu_memory_utilization=", 0) == 0);
  const double util = std::stod(first.substr(first.find('=') + 1));
  CHECK(util < 0.9);
  json fixed = req;
  fixed["rl"]["rollout"]["gpu_memory_utilization"] = util;
  const json b = run(fixed);
  CHECK(b["fits"] == true);
  CHECK(u(b["peak"]["bytes"]) == u(a["fixes"][0]["peak_bytes"]));
  // One hundredth more does not fit (the largest that does).
  fixed["rl"]["rollout"]["gpu_memory_utilization"] = util + 0.01;
  CHECK(run(fixed)["fits"] == false);
  // Each listed change fits when made.
  for (const json& f : a["fixes"]) {
    const std::string c = f["change"];
    if (c.rfind("rl.", 0) != 0 || c.find("rollout") != std::string::npos) continue;
    json g = req;
    g["rl"][c.substr(3, c.find('=') - 3)] = true;
    INFO(c);
    CHECK(run(g)["fits"] == true);
  }
  // A step that fits lists none.
  CHECK(run(grpo())["fixes"].empty());
}

TEST_CASE(
    "rl: the rollout's tensor parallelism ranked (each tp dividing the GPUs and the heads, "
    "the largest KV cache first)",
    "[rl]") {
  const json a = run(grpo());
  // Qwen2.5-7B's 28 heads on 8 GPUs: tp 1, 2, 4 (8 does not divide 28).
  std::vector<std::uint64_t> tps;
  for (const json& o : a["rollout_options"]) tps.push_back(u(o["tp"]));
  CHECK((tps == std::vector<std::uint64_t>{4, 2, 1}));
  // Each option is the step asked with that tp: tp 2 is this request's own answer.
  for (const json& o : a["rollout_options"])
    if (u(o["tp"]) == 2) {
      CHECK(u(o["kv_tokens"]) == u(a["vllm"]["kv_tokens"]));
      CHECK(u(o["peak_bytes"]) == u(a["peak"]["bytes"]));
    }
  json tp4 = grpo({{"rollout", {{"tp", 4}, {"gpu_memory_utilization", 0.5}}}});
  CHECK(u(run(tp4)["vllm"]["kv_tokens"]) == u(a["rollout_options"][0]["kv_tokens"]));
}

TEST_CASE("rl: bad input gets one line naming the field", "[rl]") {
  auto msg = [](const json& req) {
    const json r = actmem::evaluate_json(req);
    return r.value("ok", true) ? std::string("ok") : r["error"]["message"].get<std::string>();
  };
  CHECK(msg(grpo({{"algorithm", "dpo"}})) ==
        "rl.algorithm: 'dpo' is TRL's DPOTrainer; give rl.framework trl (verl runs grpo and ppo)");
  CHECK(msg(grpo({{"algorithm", "sft"}})) ==
        "rl.algorithm: 'sft' is not allowed; allowed: grpo, ppo, dpo");
  CHECK(msg(grpo({{"rollout", {{"tp", 3}}}})) ==
        "rl.rollout.tp: 3 does not divide the 8 GPUs (config.dp) into rollout replicas");
  CHECK(msg(grpo({{"rollout", {{"gpu_memory_utilization", 0}}}})) ==
        "rl.rollout.gpu_memory_utilization: 0 is outside (0, 1] (vLLM's fraction of the GPU's "
        "total)");
  CHECK(msg(grpo({{"rollout", {{"max_model_len", 2048}}}})) ==
        "rl.rollout.max_model_len: 2048 is shorter than a prompt and its response (config.seq "
        "4096): vLLM would cut the response");
  CHECK(msg(grpo({{"rollout", {{"block_size", 12}}}})) ==
        "rl.rollout.block_size: 12 tokens; allowed on CUDA: 8, 16, 32, 64, 128");
  CHECK(
      msg(grpo({{"rollout", {{"tp", 2}, {"gpus", 1}}}})).rfind("rl.rollout.gpus: unknown key", 0) ==
      0);
  CHECK(msg(grpo({}, {{"tp", 2}})) ==
        "config.loss: 'logprob' is verl's FSDP, TRL's or OpenRLHF's data-parallel actor (no "
        "tensor, context or pipeline parallelism); allowed with tp, cp and pp 1");
  // The reference's offload key with no reference changes nothing: refused.
  CHECK(msg(grpo({{"reference", false}, {"ref_param_offload", true}})) ==
        "rl.ref_param_offload: no reference model (rl.reference false)");
  json no_gpu = grpo();
  no_gpu["config"].erase("gpu");
  CHECK(msg(no_gpu).rfind("config.gpu: rl needs a GPU preset", 0) == 0);
  CHECK(msg({{"command", "estimate"}, {"preset", "qwen2.5-7b"}, {"rl", json::object()}}) ==
        "rl: read only by the rl command, not by estimate");
  // Another framework's actor loss under verl's step.
  json orl_loss = grpo({}, {{"loss", "logprob_openrlhf+entropy"}});
  orl_loss["config"].erase("response_len");  // OpenRLHF's loss runs over every position
  CHECK(msg(orl_loss) ==
        "config.loss: 'logprob_openrlhf+entropy' is OpenRLHF's loss; verl's actor computes "
        "logprob or logprob_torch (or give rl.framework openrlhf)");
  // State-space layers: vLLM's cache of them is not modelled; sliding-window layers are with vLLM
  // (its hybrid manager, test_rl_hybrid.cpp) and not with SGLang.
  json mamba = grpo();
  mamba["preset"] = "mamba-codestral-7b";
  CHECK(msg(mamba).rfind("model: layer kind", 0) == 0);
  json sliding = grpo({{"rollout", {{"tp", 2}, {"engine", "sglang"}}}});
  sliding["preset"] = "gpt-oss-20b";
  CHECK(msg(sliding).rfind("model: layer kind", 0) == 0);
}

TEST_CASE(
    "rl GRPO, Qwen3-30B-A3B (MoE) on 8 H100s, rollout tp 2: vLLM's weights and KV cache, the "
    "fused experts in the weight sync and the profile's estimate by hand",
    "[rl]") {
  // presets/models/qwen3-30b-a3b.json: h 2048, 48 layers, 32 heads of 128, 4 kv heads, 128
  // experts of width 768, top-8, q/k norms, V 151936; 30,532,122,624 parameters.
  constexpr std::uint64_t h = 2048, layers = 48, experts = 128, ef = 768, vocab = 151936;
  constexpr std::uint64_t params = 30532122624;
  json req = grpo();
  req["preset"] = "qwen3-30b-a3b";
  req["config"]["micro_batch"] = 2;
  const json a = run(req);
  REQUIRE(a["ok"] == true);
  // vLLM at tp 2: everything split in two but what vLLM replicates: the norms (2h and the q/k
  // norms' 2 x 128 per layer, the final h) and each layer's router (ReplicatedLinear, E x h).
  const std::uint64_t replicated = layers * (2 * h + 2 * 128) + h + layers * experts * h;
  CHECK(u(a["vllm"]["weights_bytes"]) == ((params - replicated) / 2 + replicated) * 2);
  // The KV cache: attention layers only, 2 kv heads per GPU.
  CHECK(u(a["vllm"]["kv_bytes_per_token"]) == layers * 2 * 2 * 128 * 2);
  // The largest parameter: one layer's fused gate and up (E x 2f x h, transformers 5's grouped
  // experts), larger than the embedding (V x h), gathered in fp32 and cast.
  CHECK(experts * 2 * ef * h > vocab * h);
  CHECK(rl_line(rl_phase(a, "weight_sync"), "the largest parameter") == experts * 2 * ef * h * 6);
  // The profile's estimate: 8,192 tokens through the widest layer, whose FFN is the top-8
  // experts' gate/up, activation and output (3f / tp + h each) and the router's fp32 logits.
  const std::uint64_t width = 2 * h + (32 + 8) * 128 / 2 + 8 * (3 * ef / 2 + h) + 2 * experts;
  CHECK(u(a["vllm"]["profile_peak_bytes"]) == 8192 * width * 2 + 256 * vocab * 8);
  for (const json& p : a["phases"]) CHECK(u(p["total_bytes"]) == rl_lines_sum(p));
  // vLLM's expert parallelism as verl starts it (rollout.expert_parallel_size 8 = tp 2 x
  // data_parallel_size 4): the routed experts (gate, up and down of every expert) split 8 ways
  // instead of 2, the rest as before; the KV cache grows by what the experts free.
  json ep = req;
  ep["rl"]["rollout"]["expert_parallel_size"] = 8;
  ep["rl"]["rollout"]["data_parallel_size"] = 4;
  const json e = run(ep);
  const std::uint64_t routed = layers * experts * 3 * ef * h;
  CHECK(u(e["vllm"]["weights_bytes"]) ==
        ((params - replicated - routed) / 2 + replicated + routed / 8) * 2);
  CHECK(u(e["vllm"]["expert_parallel_size"]) == 8);
  CHECK(u(e["vllm"]["kv_blocks"]) > 2 * u(a["vllm"]["kv_blocks"]));
  // Each rollout tp the options list keeps the experts' split (data_parallel_size = 8 / tp).
  for (const json& o : e["rollout_options"]) CHECK(8 % u(o["tp"]) == 0);
}

TEST_CASE("rl: vLLM's expert parallelism is refused where verl or the model has none", "[rl]") {
  auto field = [](json req) {
    const json r = actmem::evaluate_json(req);
    return r.value("ok", true) ? std::string("ok") : r["error"]["field"].get<std::string>();
  };
  json moe =
      grpo({{"rollout", {{"tp", 2}, {"expert_parallel_size", 4}, {"data_parallel_size", 1}}}});
  moe["preset"] = "qwen3-30b-a3b";
  moe["config"]["micro_batch"] = 2;
  CHECK(field(moe) == "rl.rollout.expert_parallel_size");  // 4 != tp 2 x dp 1
  moe["rl"]["rollout"]["data_parallel_size"] = 2;
  CHECK(field(moe) == "ok");
  json dense =
      grpo({{"rollout", {{"tp", 2}, {"expert_parallel_size", 4}, {"data_parallel_size", 2}}}});
  CHECK(field(dense) == "rl.rollout.expert_parallel_size");  // Qwen2.5-7B has no experts
  moe["rl"]["rollout"]["engine"] = "sglang";
  CHECK(field(moe) == "rl.rollout.expert_parallel_size");
  json trl = moe;
  trl["rl"]["framework"] = "trl";
  trl["rl"]["rollout"]["engine"] = "vllm";
  CHECK(field(trl) == "rl.rollout.expert_parallel_size");
  // Three GPUs per instance do not divide the job's eight.
  json odd =
      grpo({{"rollout", {{"tp", 1}, {"expert_parallel_size", 3}, {"data_parallel_size", 3}}}});
  odd["preset"] = "qwen3-30b-a3b";
  CHECK(field(odd) == "rl.rollout.data_parallel_size");
}

// The rl command with rl.framework trl (rl_trl.cpp, issue 37): GRPO as TRL's GRPOTrainer runs it
// (huggingface/trl f2cd577), each phase's lines checked by hand for Qwen2.5-7B on 8 H100s under
// DeepSpeed ZeRO-3: vLLM inside the training process, transformers' generate, a vLLM server; and
// what TRL has no key for, refused by field.
#include <cmath>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "plan/qwen25_7b.hpp"

using namespace actmem::test;
using namespace actmem::test::qwen25_7b;

namespace {

constexpr std::uint64_t kCapacity = 85520809984;  // the H100's total as nvidia-smi reports it
constexpr std::uint64_t kKvPerToken = kL * 2 * 4 * 128 * 2;  // every layer's K and V, bf16

json trl(const json& rl = json::object(), const json& config = json::object()) {
  json c = {{"framework", "deepspeed"}, {"zero", 3},   {"dp", 8},
            {"micro_batch", 4},         {"seq", 1024}, {"gpu", "h100-80gb"}};
  for (auto it = config.begin(); it != config.end(); ++it) c[it.key()] = it.value();
  json r = {{"framework", "trl"}};
  for (auto it = rl.begin(); it != rl.end(); ++it) r[it.key()] = it.value();
  return {{"command", "rl"}, {"preset", "qwen2.5-7b"}, {"config", c}, {"rl", r}};
}

json vllm(const json& more = json::object()) {
  json r = {{"engine", "vllm"}};
  for (auto it = more.begin(); it != more.end(); ++it) r[it.key()] = it.value();
  return r;
}

std::uint64_t process_sum(const json& p, const std::string& process) {
  std::uint64_t s = 0;
  for (const json& l : p["lines"])
    if (l["process"] == process) s += u(l["bytes"]);
  return s;
}

// The estimate of the trainer's step with the keys TRL fills (its framework defaults).
json update_estimate(const json& config, bool kl = false) {
  json c = config;
  c["recompute"] = "full";
  c["dtype"] = "bf16";
  c["loss"] = kl ? "logprob_trl+kl" : "logprob_trl";
  c["response_len"] = 512;
  return run({{"preset", "qwen2.5-7b"}, {"config", c}});
}

}  // namespace

TEST_CASE(
    "rl trl, vLLM colocated: Qwen2.5-7B on 8 H100s under ZeRO-3, every phase's lines by hand "
    "(huggingface/trl f2cd577 grpo_config.py, vllm_generation.py, vLLM V1's budget rule)",
    "[rl][trl]") {
  const json a = run(trl({{"rollout", vllm()}}));
  REQUIRE(a["ok"] == true);
  CHECK(a["framework"] == "trl");
  CHECK(a["rollout"]["engine"] == "vllm");
  CHECK(a["rollout"]["mode"] == "colocate");
  // vLLM: 0.3 of the GPU (vllm_gpu_memory_utilization), bf16 weights at tp 1, max_num_seqs =
  // micro_batch 4 x tp 1 x steps_per_generation 1, 4,096 batched tokens, max_model_len the
  // model's 131,072 positions.
  const auto requested = static_cast<std::uint64_t>(std::floor(0.3 * double(kCapacity)));
  CHECK(u(a["vllm"]["requested_bytes"]) == requested);
  CHECK(u(a["vllm"]["weights_bytes"]) == kParams * 2);
  CHECK(u(a["vllm"]["max_num_seqs"]) == 4);
  CHECK(u(a["vllm"]["max_model_len"]) == 131072);
  CHECK(u(a["vllm"]["kv_bytes_per_token"]) == kKvPerToken);
  // The profiled peak's estimate: 4,096 tokens through the widest layer (2h + (28 + 8) x 128 +
  // 3f, bf16) and the sampler's fp32 logits and probabilities for 4 requests.
  const std::uint64_t profile = 4096 * (2 * kH + 36 * 128 + 3 * kF) * 2 + 4 * kV * 8;
  CHECK(u(a["vllm"]["profile_peak_bytes"]) == profile);
  const std::uint64_t blocks = (requested - kParams * 2 - profile) / (16 * kKvPerToken);
  CHECK(u(a["vllm"]["kv_blocks"]) == blocks);
  CHECK(u(a["vllm"]["kv_cache_bytes"]) == blocks * 16 * kKvPerToken);
  // The trainer under ZeRO-3 (DeepSpeed bf16): a bf16 shard of the parameters, the fp32 master
  // shard and AdamW's two fp32 states.
  const json& gen = rl_phase(a, "generate");
  const std::uint64_t shard = kParams * 2 / 8;
  CHECK(rl_line(gen, "policy parameters") == shard);
  CHECK(rl_line(gen, "optimizer states") == kParams * 12 / 8);
  CHECK(rl_line(gen, "its budget") == requested);
  CHECK(rl_line(gen, "reference parameters") == 0);  // beta 0: no reference
  // No second CUDA context: vLLM runs inside the training process.
  CHECK(rl_line(gen, "CUDA context") == 0);
  // Between generations vLLM keeps its weights and KV cache (no sleep mode).
  const std::uint64_t held = kParams * 2 + blocks * 16 * kKvPerToken;
  for (const char* id : {"weight_sync", "old_log_prob", "update"}) {
    INFO(id);
    CHECK(process_sum(rl_phase(a, id), "vllm") == held);
  }
  // The weight sync gathers one parameter at a time: the largest, the embedding, in bf16.
  CHECK(rl_line(rl_phase(a, "weight_sync"), "the largest parameter gathered whole") == kV * kH * 2);
  // With vLLM's importance-sampling correction (the default), an old-policy pass runs.
  REQUIRE(find_rl_phase(a, "old_log_prob") != nullptr);
  CHECK(find_rl_phase(a, "ref_log_prob") == nullptr);
  // The update: the engine's own device figure for the trainer with TRL's keys.
  const json e = update_estimate(trl()["config"]);
  CHECK(rl_line(rl_phase(a, "update"), "the training step") == u(e["device"]["total_bytes"]));
  // vLLM's start: the trainer's fixed costs and the policy's shard are on the GPU before it.
  const std::uint64_t fixed = rl_line(gen, "fixed costs");
  CHECK(u(a["vllm"]["free_at_start_bytes"]) == kCapacity - fixed - shard);
  CHECK(a["vllm"]["starts"] == true);
  std::uint64_t peak = 0;
  for (const json& p : a["phases"]) {
    CHECK(u(p["total_bytes"]) == process_sum(p, "trainer") + process_sum(p, "vllm"));
    peak = std::max(peak, u(p["total_bytes"]));
  }
  CHECK(u(a["peak"]["bytes"]) == peak);
  CHECK(a["peak"]["phase"] == "update");
  // TRL's keys are listed first with their source, then DeepSpeed's.
  const json& fd = a["framework_defaults"];
  REQUIRE(fd.size() > 4);
  CHECK(fd[0]["key"] == "recompute");
  CHECK(fd[0]["value"] == "full");
  CHECK(fd[2]["key"] == "loss");
  CHECK(fd[2]["value"] == "logprob_trl");
  CHECK(fd[3]["key"] == "response_len");
  CHECK(u(fd[3]["value"]) == 512);
  // Options: every rollout tp dividing the GPUs and the heads (1, 2, 4).
  CHECK(a["rollout_options"].size() == 3);
}

TEST_CASE(
    "rl trl, transformers' generate (use_vllm false, TRL's default): the gathered policy and "
    "the KV cache of the whole generation batch by hand",
    "[rl][trl]") {
  // gradient_accumulation_steps 4: steps_per_generation 4, 16 sequences generated at once.
  const json a = run(trl({}, {{"grad_accum", 4}}));
  REQUIRE(a["ok"] == true);
  CHECK(a["rollout"]["engine"] == "transformers");
  CHECK(u(a["rollout"]["steps_per_generation"]) == 4);
  CHECK(a["vllm"]["on_these_gpus"] == false);
  const json& gen = rl_phase(a, "generate");
  // ds3_gather_for_generation: every ZeRO-3 parameter gathered whole in bf16.
  CHECK(rl_line(gen, "the policy gathered whole") == kParams * 2);
  CHECK(rl_line(gen, "KV cache (16 sequences of 1024 tokens)") == 16 * 1024 * kKvPerToken);
  CHECK(process_sum(gen, "vllm") == 0);
  // Aligned steps without vLLM: no old-policy pass, no weight sync.
  CHECK(find_rl_phase(a, "old_log_prob") == nullptr);
  CHECK(find_rl_phase(a, "weight_sync") == nullptr);
  // steps_per_generation 3 against 4 accumulation steps: misaligned, the old policy's pass runs.
  const json mis = run(trl({{"steps_per_generation", 3}}, {{"grad_accum", 4}}));
  CHECK(find_rl_phase(mis, "old_log_prob") != nullptr);
  CHECK(rl_line(rl_phase(mis, "generate"), "KV cache (12 sequences") == 12 * 1024 * kKvPerToken);
  // 128 sequences at once (micro_batch 8 x 16 steps) pass an A100 40GB in generation; each
  // listed change fits when made: one generation step's batch, or a vLLM server.
  json big = trl({}, {{"grad_accum", 16}, {"gpu", "a100-40gb"}, {"micro_batch", 8}});
  const json s = run(big);
  CHECK(s["fits"] == false);
  CHECK(s["peak"]["phase"] == "generate");
  REQUIRE(s["fixes"].size() == 2);
  CHECK(s["fixes"][0]["change"] == "rl.steps_per_generation=1");
  CHECK(s["fixes"][1]["change"] == "rl.rollout.engine=vllm, rl.rollout.mode=server");
  json g = big;
  g["rl"]["steps_per_generation"] = 1;
  CHECK(run(g)["fits"] == true);
  CHECK(u(run(g)["peak"]["bytes"]) == u(s["fixes"][0]["peak_bytes"]));
  g = big;
  g["rl"]["rollout"] = vllm({{"mode", "server"}});
  CHECK(run(g)["fits"] == true);
}

TEST_CASE(
    "rl trl: a vLLM server holds nothing on these GPUs, sleep mode frees vLLM outside "
    "generation, the reference is sharded like the policy",
    "[rl][trl]") {
  const json srv = run(trl({{"rollout", vllm({{"mode", "server"}})}}));
  REQUIRE(srv["ok"] == true);
  CHECK(srv["vllm"]["on_these_gpus"] == false);
  for (const json& p : srv["phases"]) CHECK(process_sum(p, "vllm") == 0);
  CHECK(rl_line(rl_phase(srv, "weight_sync"), "the largest parameter gathered whole") ==
        kV * kH * 2);
  CHECK(srv["rollout_options"].empty());
  // Sleep mode (vllm_enable_sleep_mode): level 2 between generations, weights woken to sync.
  const json sl = run(trl({{"rollout", vllm({{"free_cache_engine", true}})}}));
  CHECK(process_sum(rl_phase(sl, "update"), "vllm") == 0);
  CHECK(process_sum(rl_phase(sl, "old_log_prob"), "vllm") == 0);
  CHECK(rl_line(rl_phase(sl, "weight_sync"), "weights (woken") == kParams * 2);
  CHECK(rl_line(rl_phase(sl, "generate"), "its budget") == u(sl["vllm"]["requested_bytes"]));
  // beta != 0: a reference under ZeRO-3 (prepare_deepspeed), the KL term in the loss.
  const json ref = run(trl({{"reference", true}, {"rollout", vllm()}}));
  for (const json& p : ref["phases"]) CHECK(rl_line(p, "reference parameters") == kParams * 2 / 8);
  CHECK(find_rl_phase(ref, "ref_log_prob") != nullptr);
  const json e = update_estimate(trl()["config"], true);
  CHECK(rl_line(rl_phase(ref, "update"), "the training step") == u(e["device"]["total_bytes"]));
}

TEST_CASE(
    "rl trl, DPO (DPOTrainer): Qwen2.5-7B on 8 H100s under ZeRO-3, the step with the "
    "reference's forward in its loss and the reference's shard, by hand",
    "[rl][trl]") {
  json req = trl({{"algorithm", "dpo"}});
  req["config"].erase("seq");  // DPOConfig's max_length 1024
  const json a = run(req);
  REQUIRE(a["ok"] == true);
  CHECK(a["algorithm"] == "dpo");
  CHECK(a["rollout"]["engine"] == "none");
  REQUIRE(a["phases"].size() == 1);
  const json& upd = rl_phase(a, "update");
  // The trainer with TRL's DPO keys: its device figure, and the reference's bf16 ZeRO-3 shard.
  json c = trl()["config"];
  c["recompute"] = "full";
  c["dtype"] = "bf16";
  c["loss"] = "dpo_trl";
  const json e = run({{"preset", "qwen2.5-7b"}, {"config", c}});
  CHECK(rl_line(upd, "the training step") == u(e["device"]["total_bytes"]));
  CHECK(rl_line(upd, "reference parameters") == kParams * 2 / 8);
  CHECK(u(a["peak"]["bytes"]) == u(e["device"]["total_bytes"]) + kParams * 2 / 8);
  // DPO's defaults: its loss and max_length 1024, listed with their source.
  bool loss = false, seq = false;
  for (const json& d : a["framework_defaults"]) {
    loss = loss || (d["key"] == "loss" && d["value"] == "dpo_trl");
    seq = seq || (d["key"] == "seq" && u(d["value"]) == 1024);
  }
  CHECK(loss);
  CHECK(seq);
  // The loss's buffers hold both models' logits: 4 sequences x 1024 x V in bf16, twice, and more.
  json t = {{"command", "timeline"}, {"preset", "qwen2.5-7b"}, {"config", c}};
  t["config"]["seq"] = 1024;
  std::uint64_t fwd = 0;
  const json tl = run(t);
  for (const json& x : tl["stages"][0]["transients"])
    if (x["name"] == "loss.fp32_logits_buffer") fwd = u(x["bytes"]);
  CHECK(fwd > 2 * 4 * 1024 * kV * 2);
}

TEST_CASE(
    "rl trl with LoRA (PEFT): no reference model (its adapters disabled), peft's merge before the "
    "sync, the frozen base and fp32 adapters with their AdamW states, by hand",
    "[rl][trl]") {
  // DDP (accelerate, no DeepSpeed) with the policy in bf16; LoRA r 16 on every linear.
  json c = {{"framework", "hf-trainer"},
            {"zero", 0},
            {"param_dtype", "bf16"},
            {"lora_rank", 16},
            {"lora_targets",
             {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}}};
  const json a = run(trl({{"reference", true}, {"rollout", vllm()}}, c));
  REQUIRE(a["ok"] == true);
  // Adapters A [16, in] + B [out, 16] per linear: q and o (h, h), k and v (h, 512), gate and up
  // (h, f), down (f, h), fp32 (peft's autocast_adapter_dtype).
  constexpr std::uint64_t per_layer = 16 * (2 * (kH + kH) + 2 * (kH + kKv) + 3 * (kH + kF));
  constexpr std::uint64_t adapters = kL * per_layer;
  CHECK(adapters == 40'370'176);
  for (const json& p : a["phases"]) {
    INFO(p["id"]);
    CHECK(rl_line(p, "reference parameters") == 0);  // grpo_trainer.py l.958-961
    if (p["id"] == "update") continue;
    CHECK(rl_line(p, "policy parameters") == 2 * kParams + 4 * adapters);
    // hf-trainer's states follow the parameter (zeros_like): fp32 for the fp32 adapters only.
    CHECK(rl_line(p, "optimizer states") == 8 * adapters);
    CHECK(rl_line(p, "DDP's gradient buckets") == 4 * adapters);
  }
  // peft merges B @ A * scaling into each base weight before vLLM loads it: two fp32 [f, h]
  // tensors for the largest targeted linear (gate, up or down).
  CHECK(rl_line(rl_phase(a, "weight_sync"), "LoRA's merge") == 2 * kF * kH * 4);
  CHECK(rl_phase(a, "ref_log_prob")["label"].get<std::string>().find("adapters disabled") !=
        std::string::npos);
  // The update is the engine's device figure for the trainer's step, with nothing beside it but
  // vLLM (held: no sleep mode).
  json uc = trl({}, c)["config"];
  const json e = update_estimate(uc, true);
  const json& upd = rl_phase(a, "update");
  CHECK(rl_line(upd, "the training step") == u(e["device"]["total_bytes"]));
  CHECK(rl_lines_sum(upd) == u(e["device"]["total_bytes"]) + process_sum(upd, "vllm"));
  // The device figure holds the LoRA step, not a full fine-tune's: below the frozen weights plus
  // a quarter of what AdamW would keep for every weight.
  CHECK(u(e["device"]["total_bytes"]) < 2 * kParams + 2 * kParams);
}

TEST_CASE(
    "rl trl with LoRA under DeepSpeed ZeRO-3: bf16 adapters (DeepSpeed's cast), the whole model "
    "gathered at once for PEFT's merge (trl f2cd577 sync_weights l.459-486), by hand",
    "[rl][trl][lora]") {
  const json a = run(trl({{"reference", true}, {"rollout", vllm()}},
                         {{"lora_rank", 16}, {"lora_targets", {"q_proj", "v_proj"}}}));
  REQUIRE(a["ok"] == true);
  bool cast = false;
  for (const json& d : a["framework_defaults"])
    cast = cast || (d["key"] == "lora_dtype" && d["value"] == "bf16");
  CHECK(cast);
  // Adapters A [16, h] and B [out, 16] on q (h) and v (512): 28 layers.
  constexpr std::uint64_t adapters = kL * 16 * ((kH + kH) + (kH + kKv));
  CHECK(adapters == 5'046'272);
  const json& sync = rl_phase(a, "weight_sync");
  // The bf16 shard of every weight; the adapters' fp32 master copy and AdamW's two states.
  CHECK(rl_line(sync, "policy parameters") == 2 * (kParams + adapters) / 8);
  CHECK(rl_line(sync, "optimizer states") == 12 * adapters / 8);
  CHECK(rl_line(sync, "every parameter gathered at once") == 2 * (kParams + adapters));
  CHECK(rl_line(sync, "the largest parameter gathered whole") == 0);
  // peft's merge of q_proj (the larger target, [h, h]): two bf16 tensors.
  CHECK(rl_line(sync, "LoRA's merge") == 2 * kH * kH * 2);
  CHECK(rl_line(sync, "reference parameters") == 0);
}

TEST_CASE("rl trl: what TRL has no key for is refused by field", "[rl][trl]") {
  auto msg = [](const json& req) {
    const json r = actmem::evaluate_json(req);
    return r.value("ok", true) ? std::string("ok") : r["error"]["message"].get<std::string>();
  };
  auto field = [](const json& req) {
    const json r = actmem::evaluate_json(req);
    return r.value("ok", true) ? std::string("ok") : r["error"]["field"].get<std::string>();
  };
  // TRL's default without DeepSpeed: an fp32 policy under bf16 autocast.
  json ddp = trl();
  ddp["config"].erase("framework");
  ddp["config"].erase("zero");
  CHECK(field(ddp) == "config.param_dtype");
  CHECK(msg(ddp).find("bf16 autocast, which is not modelled") != std::string::npos);
  ddp["config"]["param_dtype"] = "bf16";
  CHECK(field(ddp) == "ok");
  CHECK(field(trl({}, {{"framework", "torchtitan"}})) == "config.framework");
  CHECK(field(trl({{"param_offload", true}})) == "rl.param_offload");
  CHECK(field(trl({{"rollout", vllm({{"max_num_seqs", 64}})}})) == "rl.rollout.max_num_seqs");
  CHECK(field(trl({{"rollout", vllm({{"context_bytes", 1}})}})) == "rl.rollout.context_bytes");
  CHECK(msg(trl({{"rollout", {{"engine", "sglang"}}}})) ==
        "rl.rollout.engine: 'sglang': TRL's GRPOTrainer generates with vllm or transformers "
        "(SGLang is verl's: give rl.framework verl)");
  CHECK(field(trl({{"algorithm", "ppo"}})) == "rl.algorithm");
  CHECK(field(trl({}, {{"loss", "logprob"}})) == "config.loss");
  CHECK(field(trl({{"reference", true}}, {{"loss", "logprob_trl"}})) == "config.loss");
  CHECK(field(trl({{"steps_per_generation", 0}})) == "rl.steps_per_generation");
  // DPO: TRL's only; no generation; its reference always; pairs of sequences.
  CHECK(field(trl({{"algorithm", "dpo"}, {"rollout", vllm()}})) == "rl.rollout");
  CHECK(field(trl({{"algorithm", "dpo"}, {"reference", false}})) == "rl.reference");
  CHECK(field(trl({{"algorithm", "dpo"}}, {{"micro_batch", 3}})) == "config.micro_batch");
  CHECK(field(trl({{"algorithm", "dpo"}}, {{"response_len", 16}})) == "config.response_len");
  json verl_dpo = trl({{"algorithm", "dpo"}});
  verl_dpo["rl"]["framework"] = "verl";
  CHECK(msg(verl_dpo) ==
        "rl.algorithm: 'dpo' is TRL's DPOTrainer; give rl.framework trl (verl runs grpo and ppo)");
  CHECK(msg(trl({{"framework", "nemo-rl"}})) ==
        "rl.framework: 'nemo-rl' is not allowed; allowed: verl, trl, openrlhf");
  // verl has none of TRL's keys.
  json verl = trl({{"steps_per_generation", 2}});
  verl["rl"]["framework"] = "verl";
  CHECK(field(verl) == "rl.steps_per_generation");
  verl = trl({{"rollout", vllm({{"mode", "server"}})}});
  verl["rl"]["framework"] = "verl";
  CHECK(field(verl) == "rl.rollout.mode");
  verl = trl({{"rollout", {{"engine", "transformers"}}}});
  verl["rl"]["framework"] = "verl";
  CHECK(field(verl) == "rl.rollout.engine");
}

// The optimizer step's transient (setup/optimizer_step.cpp; docs/formulas.md, "The optimizer
// step"): torch.optim.AdamW by implementation, and what Megatron-LM's and DeepSpeed's optimizer
// wrappers add, each against its source and, for foreach, the H200 step's trace.
#include <string>

#include "helpers.hpp"

using namespace actmem::test;

namespace {

// The optimizer step's own peak: the optimizer_step phase of the most loaded stage.
std::uint64_t step_peak(const json& r) {
  for (const json& p : r["phases"])
    if (p["phase"] == "optimizer_step") return u(p["peak_bytes"]);
  FAIL("no optimizer_step phase");
  return 0;
}

// What the step adds: its phase's peak less what lives through it (static memory; no
// activations are left after the last backward, and the requests set no cuBLAS workspace).
std::uint64_t step_bytes(const json& r) {
  // The optimizer step holds the step's static memory, less what FSDP2 at one stage reshards at
  // the end of backward (step/static_at.cpp; measured, docs/validation.md 4.6).
  const std::uint64_t resharded = r["config"]["framework"] == "torchtitan" && r["config"]["pp"] == 1
                                      ? u(r["static"]["gathered_params_bytes"])
                                      : 0;
  return step_peak(r) - (u(r["static"]["total_bytes"]) - resharded);
}

json estimate(const std::string& preset, json config) {
  config["seq"] = 1024;
  config["cublas_workspace_bytes"] = 0;
  return run_preset(preset, config);
}

}  // namespace

TEST_CASE(
    "foreach AdamW: the step holds the sqrt of every exp_avg_sq at once, one state's bytes: "
    "622,891,008 B for the H200 step's 311,445,504 bf16 parameters, as its trace's "
    "_multi_tensor_adam allocations (docs/validation.md 4.3)",
    "[optimizer_step]") {
  const json model = {{"model_type", "llama"},       {"vocab_size", 32000},
                      {"hidden_size", 2048},         {"intermediate_size", 5632},
                      {"num_hidden_layers", 4},      {"num_attention_heads", 16},
                      {"num_key_value_heads", 4},    {"max_position_embeddings", 4096},
                      {"tie_word_embeddings", false}};
  const json config = {{"micro_batch", 2},          {"seq", 2048},
                       {"dtype", "bf16"},           {"param_dtype", "bf16"},
                       {"grad_dtype", "bf16"},      {"master_weights", false},
                       {"optimizer_dtype", "bf16"}, {"profile", "hf"},
                       {"attention", "flash"},      {"cublas_workspace_bytes", 0}};
  const json r = run(json{{"model", model}, {"config", config}});
  CHECK(r["config"]["optimizer_impl"] == "foreach");  // the hf profile's default: torch.optim's
  CHECK(u(r["model"]["params"]) == 311445504);
  CHECK(step_bytes(r) == 622891008);
  CHECK(step_bytes(r) == u(r["static"]["optimizer_bytes"]) / 2);
  const json tl = run(json{{"command", "timeline"}, {"model", model}, {"config", config}});
  bool named = false;
  for (const json& t : tl["stages"][0]["transients"])
    if (t["name"] == "optimizer.step_temp") {
      named = true;
      CHECK(u(t["bytes"]) == 622891008);
      CHECK(t["source"].get<std::string>().find("foreach AdamW") == 0);
    }
  CHECK(named);
}

TEST_CASE(
    "AdamW's implementations on Llama 3.1 8B, one GPU, bf16 with fp32 master weights and "
    "states: fused 0 (torch _fused_adamw_, in place), foreach one fp32 state (P x 4 B), "
    "for-loop the sqrt and quotient of the largest tensor (2 x 525,336,576 x 4 B, the embedding)",
    "[optimizer_step]") {
  const std::uint64_t p = 8030261248;  // Llama 3.1 8B's parameters (the preset)
  const json fused = estimate("llama-3.1-8b", {{"optimizer_impl", "fused"}});
  CHECK(u(fused["model"]["params"]) == p);
  CHECK(step_bytes(fused) == 0);
  const json foreach = estimate("llama-3.1-8b", {{"optimizer_impl", "foreach"}});
  CHECK(step_bytes(foreach) == p * 4);
  const json loop = estimate("llama-3.1-8b", {{"optimizer_impl", "for-loop"}});
  CHECK(step_bytes(loop) == 2 * std::uint64_t{128256} * 4096 * 4);
  // The megatron profile's own default is Megatron-LM's FusedAdam; the pytorch profile's torch's.
  CHECK(estimate("llama-3.1-8b", json::object())["config"]["optimizer_impl"] == "fused");
  CHECK(estimate("llama-3.1-8b", {{"profile", "pytorch"}})["config"]["optimizer_impl"] ==
        "foreach");
  // ZeRO-1 over 8: foreach's list is this rank's states, P / 8 x 4 B.
  const json z1 = estimate("llama-3.1-8b", {{"optimizer_impl", "foreach"}, {"dp", 8}, {"zero", 1}});
  CHECK(step_bytes(z1) == p / 8 * 4);
  // SGD updates in place, whatever the implementation would be.
  CHECK(step_bytes(estimate("llama-3.1-8b", {{"optimizer", "sgd"}})) == 0);
}

TEST_CASE(
    "Frameworks' optimizer steps: torchtitan 9dec370 foreach over its FSDP shards, Megatron-LM's "
    "FusedAdam (plus fp32 main gradients when the grad buffer is bf16), DeepSpeed v0.16.0's "
    "flat gradient partition and its fp32 copy (ZeRO-3: one sub-group of at most 1e9)",
    "[optimizer_step][frameworks]") {
  const std::uint64_t p = 8030261248;
  const json tt = estimate("llama-3.1-8b", {{"framework", "torchtitan"}, {"dp", 8}});
  CHECK(tt["config"]["optimizer_impl"] == "foreach");
  CHECK(step_bytes(tt) == u(tt["static"]["optimizer_bytes"]) / 2);
  CHECK(step_bytes(tt) == p / 8 * 4);
  bool cited = false;
  for (const json& d : tt["framework_defaults"])
    if (d["key"] == "optimizer_impl")
      cited = d["source"].get<std::string>().find("torchtitan 9dec370") == 0;
  CHECK(cited);
  const json mg = estimate("llama-3.1-8b", {{"framework", "megatron-lm"}, {"dp", 8}, {"zero", 1}});
  CHECK(mg["config"]["optimizer_impl"] == "fused");
  CHECK(step_bytes(mg) == 0);  // main gradients are views of the fp32 grad buffer
  const json mg16 =
      estimate("llama-3.1-8b",
               {{"framework", "megatron-lm"}, {"dp", 8}, {"zero", 1}, {"grad_dtype", "bf16"}});
  CHECK(step_bytes(mg16) == u(mg16["static"]["master_bytes"]));  // .float() of this rank's shard
  CHECK(step_bytes(mg16) == p / 8 * 4);
  // DeepSpeed ZeRO-2 in bf16: flatten (P/8 x 2 B) and its fp32 copy (P/8 x 4 B) together.
  const json ds = estimate("llama-3.1-8b",
                           {{"framework", "deepspeed"}, {"dp", 8}, {"zero", 2}, {"dtype", "bf16"}});
  CHECK(ds["config"]["optimizer_impl"] == "fused");
  CHECK(step_bytes(ds) == p / 8 * (2 + 4));
  // ZeRO-3 on 4 GPUs: 2,007,565,312 elements per rank, stepped in sub-groups of 1e9.
  const json ds3 = estimate(
      "llama-3.1-8b", {{"framework", "deepspeed"}, {"dp", 4}, {"zero", 3}, {"dtype", "bf16"}});
  CHECK(step_bytes(ds3) == std::uint64_t{1000000000} * (2 + 4));
}

TEST_CASE("optimizer_impl: each value read, refused beside an optimizer that does not read it",
          "[optimizer_step][errors]") {
  auto err = [](const json& c) {
    return actmem::evaluate_json(json{{"preset", "gpt2"}, {"config", c}})["error"];
  };
  CHECK(err({{"optimizer_impl", "fusd"}})["message"] ==
        "config.optimizer_impl: 'fusd' is not allowed; allowed: auto, foreach, fused, for-loop");
  CHECK(err({{"optimizer", "sgd"}, {"optimizer_impl", "fused"}})["message"] ==
        "config.optimizer_impl: 'fused' is read only with optimizer adamw; optimizer is sgd");
  // A framework's default is not the user's: SGD under torchtitan is answered.
  CHECK(actmem::evaluate_json(json{{"preset", "gpt2"},
                                   {"config", {{"optimizer", "sgd"}, {"framework", "torchtitan"}}}})
            .value("ok", false));
  CHECK(actmem::evaluate_json(json{{"preset", "gpt2"},
                                   {"config", {{"optimizer", "sgd"}, {"optimizer_impl", "auto"}}}})
            .value("ok", false));
}

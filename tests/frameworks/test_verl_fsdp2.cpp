// verl's actor under strategy fsdp2 (config.fsdp_version 2): the groups apply_fsdp2 makes (verl
// b178a3c fsdp_utils.py), moment by moment as torch 2.9's fully_shard runs them (setup.cpp
// set_verl_fsdp2), checked by hand on Qwen2.5-7B (untied) and Gemma 3 1B (tied).
#include "helpers.hpp"

namespace actmem::test {

namespace {

json verl(const char* command, const char* preset, std::uint64_t version, std::uint64_t b,
          std::uint64_t seq) {
  return run(json{{"command", command},
                  {"preset", preset},
                  {"config",
                   {{"framework", "verl"},
                    {"fsdp_version", version},
                    {"dp", 8},
                    {"micro_batch", b},
                    {"seq", seq}}}});
}

std::uint64_t event(const json& tl, const std::string& label) {
  for (const json& e : tl["stages"][0]["events"])
    if (e["label"] == label) return u(e["transients"]);
  FAIL("no event " << label);
  return 0;
}

std::uint64_t phase(const json& est, const std::string& name) {
  for (const json& p : est["phases"])
    if (p["phase"] == name) return u(p["peak_bytes"]);
  FAIL("no phase " << name);
  return 0;
}

std::uint64_t input_side(const json& est) {
  std::uint64_t n = 0;
  for (const json& t : est["input_layer"]["tensors"]) n += u(t["bytes"]);
  return n;
}

constexpr std::uint64_t kWs = 32 * 1048576;  // the cuBLAS workspace

}  // namespace

TEST_CASE(
    "verl's FSDP2 on Qwen2.5-7B (untied): the root group resharded after forward, the embedding a "
    "group of its own (verl b178a3c fsdp_utils.py apply_fsdp2, torch 2.9 fully_shard, pytorch "
    "PR #154704)") {
  const json tl = verl("timeline", "qwen2.5-7b", 2, 4, 4096);
  const json est = verl("estimate", "qwen2.5-7b", 2, 4, 4096);
  // The head 152,064 x 3,584 and the final norm: the root group, per parameter (no padding),
  // in bf16; the embedding alike, apart; a decoder layer 233,057,792 parameters.
  const std::uint64_t vh = 152'064ull * 3'584, root = 2 * (vh + 3'584), emb = 2 * vh;
  const std::uint64_t p = 2 * 233'057'792ull;
  CHECK(named_transient(tl, "fsdp2.root_group") == root);
  CHECK(named_transient(tl, "fsdp2.embedding_group") == emb);
  CHECK(named_transient(tl, "fsdp2.root_grads") == root);
  CHECK(u(est["static"]["gathered_params_bytes"]) == 0);  // nothing stays gathered
  // Forward's start: the root's copies; the embedding's all-gather output beside the root's,
  // or with its copies, the embedding's output (4 x 4,096 x 3,584 bf16) and the input side
  // (token ids, rotary tables), or with layer 0's output in their place: the second is largest.
  const std::uint64_t in = input_side(est), out = 4ull * 4096 * 3584 * 2;
  CHECK(in == 4ull * 4096 * 8 + 2 * 4096ull * 128 * 2);
  CHECK(event(tl, "F mb0 c0 groups") == kWs + root + emb + in + std::max(root, out + emb));
  // A layer's forward: its all-gather output and copies beside the root's copies.
  CHECK(event(tl, "F mb0 c0 L5") == kWs + 2 * p + root);
  // The loss: the root only for the head (more than the loss's own buffer, here).
  CHECK(event(tl, "loss fwd mb0") == kWs + root);
  // The head's backward gathers the root again, then prefetches layer 27 (smaller): against
  // FSDP1's root unit held all along (R = 2vh + 3,584 elements, a multiple of 8), 2 x 3,584 B
  // more.
  const json tl1 = verl("timeline", "qwen2.5-7b", 1, 4, 4096);
  CHECK(event(tl, "loss bwd mb0") == event(tl1, "loss bwd mb0") + 2 * root - 2 * (2 * vh + 3'584));
  // Layer 0's backward and recompute prefetch the embedding's group, not a layer; and one
  // micro-batch makes the gradients in backward: layer 0's events hold layer 1's fp32 shard
  // (4p/2 / 8) more than layer 1's.
  const std::uint64_t shard = 4 * (p / 2) / 8;
  CHECK(event(tl, "R mb0 c0 L0") == event(tl, "R mb0 c0 L1") + emb - p + shard);
  CHECK(event(tl, "B mb0 c0 L0") == event(tl, "B mb0 c0 L1") + emb - p + shard);
  // The end of backward: the embedding's gradient and its fp32 reduce-scatter input (4vh) with
  // the shard it makes (4vh / 8) beside the root's copies and gradients is the largest moment
  // (its copies with the gradient and layer 0's input: 2 x 1.09e9 + 0.93e9 less; the root's
  // post-backward 4R + its gradients less), with the 28 layers' shards.
  CHECK(event(tl, "B mb0 c0 root") == kWs + root + root + emb + 4 * vh + 4 * vh / 8 + 28 * shard);
  // One micro-batch: the device replay's largest request is the loss's, as the walk's loss.
  CHECK(u(est["device"]["stages"][0]["requested_peak_bytes"]) == phase(est, "loss"));
  CHECK(est["config"]["fsdp_version"] == 2);
}

TEST_CASE(
    "verl's FSDP2 on Gemma 3 1B (tied): the embedding is the root's, layer 0 prefetches nothing "
    "and the root's post-backward ends backward") {
  const json tl = verl("timeline", "gemma-3-1b-it", 2, 2, 1024);
  const json est = verl("estimate", "gemma-3-1b-it", 2, 2, 1024);
  // The root: the embedding 262,144 x 1,152 and the final norm; its gradients the same (the
  // head's use waits for the embedding's); a layer 26,842,112 parameters.
  const std::uint64_t r = 262'144ull * 1'152 + 1'152, root = 2 * r, p = 2 * 26'842'112ull;
  CHECK(named_transient(tl, "fsdp2.root_group") == root);
  CHECK(named_transient(tl, "fsdp2.embedding_group") == 0);
  CHECK(named_transient(tl, "fsdp2.root_grads") == root);
  // Forward's start: the root's all-gather output and copies, the embedding's output, the input
  // side and layer 0's all-gather output before the root's is freed.
  const std::uint64_t out = 2ull * 1024 * 1152 * 2;
  CHECK(event(tl, "F mb0 c0 groups") == kWs + 2 * root + input_side(est) + out + p);
  const std::uint64_t shard = 4 * (p / 2) / 8;  // a layer's fp32 gradient shard
  CHECK(event(tl, "R mb0 c0 L0") == event(tl, "R mb0 c0 L1") - p + shard);
  // The root's post-backward: its fp32 reduce-scatter input beside its unsharded gradients and
  // the shard it makes, with the 26 layers' shards.
  CHECK(event(tl, "B mb0 c0 root") == kWs + root + 4 * r + 4 * r / 8 + 26 * shard);
  CHECK(u(est["device"]["stages"][0]["requested_peak_bytes"]) == phase(est, "loss"));
}

TEST_CASE("config.fsdp_version: read with verl (1 or 2) and torchtitan (2), refused by its field") {
  auto refusal = [](json config) {
    config["dp"] = 8;
    const json r = evaluate_json(json{{"preset", "qwen2.5-7b"}, {"config", config}});
    REQUIRE(r["ok"] == false);
    CHECK(r["error"]["field"] == "config.fsdp_version");
    return r["error"]["message"].get<std::string>();
  };
  CHECK(refusal({{"framework", "plain"}, {"zero", 3}, {"fsdp_version", 2}}).find("verl") !=
        std::string::npos);
  CHECK(refusal({{"framework", "torchtitan"}, {"fsdp_version", 1}}).find("allowed: 2") !=
        std::string::npos);
  CHECK(refusal({{"framework", "verl"}, {"fsdp_version", 3}}).find("allowed: 1, 2") !=
        std::string::npos);
  CHECK(refusal({{"framework", "verl"}, {"fsdp_version", 2}, {"zero", 2}}).find("zero 3") !=
        std::string::npos);
  CHECK(refusal({{"framework", "verl"}, {"fsdp_version", 2}, {"reshard_after_forward", false}})
            .find("reshard_after_forward") != std::string::npos);
  // torchtitan runs FSDP2 whether it is named or not; verl's default is its strategy fsdp.
  auto titan = [](bool named) {
    json c = {{"framework", "torchtitan"}, {"dp", 8}, {"seq", 2048}};
    if (named) c["fsdp_version"] = 2;
    return run(json{{"preset", "llama-3.1-8b"}, {"config", c}});
  };
  CHECK(titan(true)["peak_bytes"] == titan(false)["peak_bytes"]);
  const json v =
      run(json{{"preset", "qwen2.5-7b"}, {"config", {{"framework", "verl"}, {"dp", 8}}}});
  CHECK(v["config"]["fsdp_version"] == 1);
}

}  // namespace actmem::test

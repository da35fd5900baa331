// The output layer under verl's RL loss (loss logprob / logprob_torch, +entropy): each record
// equals what verl's own functions keep for backward under torch 2.6.0 on the CPU
// (tests/reference/measure_rl_loss.py -> tests/reference/rl_loss_saved.json: N = 64 tokens,
// V = 1000; the policy loss at B = 4, R = 16).
#include <fstream>

#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace actmem::test;

namespace {

json measured() {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/rl_loss_saved.json");
  REQUIRE(in.good());
  return json::parse(in);
}

// A small Llama (V = 1000, as measured) under the hf profile, one micro-batch of b x s tokens.
json rl_request(const std::string& loss, std::uint64_t b, std::uint64_t s, std::uint64_t r = 0) {
  json m = {{"model_type", "llama"},    {"hidden_size", 64},
            {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"num_hidden_layers", 2},   {"vocab_size", 1000},
            {"intermediate_size", 128}, {"max_position_embeddings", 4096}};
  json c = {
      {"profile", "hf"}, {"attention", "flash"}, {"micro_batch", b}, {"seq", s}, {"loss", loss}};
  if (r) c["response_len"] = r;
  return {{"model", m}, {"config", c}};
}

// The output layer's records, by id.
std::map<std::string, std::uint64_t> records(const json& answer) {
  std::map<std::string, std::uint64_t> out;
  for (const json& t : answer["output_layer"]["tensors"]) out[t["name"]] = u(t["bytes"]);
  return out;
}

// The measured storages of one case other than the logits (which the model output holds).
std::uint64_t measured_beside_logits(const json& m, const std::string& name) {
  std::uint64_t sum = 0;
  for (const json& e : m["cases"][name])
    if (!e["is_logits"].get<bool>()) sum += u(e["storage_bytes"]);
  return sum;
}

// A per-token loss's measured storages other than its inputs, summed by kind: fp32 tensors, bool
// masks, 0-dim scalars (anything else fails the test).
struct PerTokenSaved {
  std::uint64_t fp32 = 0, masks = 0, scalars = 0;
};
PerTokenSaved per_token_saved(const json& entries) {
  PerTokenSaved out;
  for (const json& e : entries) {
    if (e["is_input"].get<bool>()) continue;
    if (e["shape"].empty())
      out.scalars += u(e["storage_bytes"]);
    else if (e["dtype"] == "float32")
      out.fp32 += u(e["storage_bytes"]);
    else if (e["dtype"] == "bool")
      out.masks += u(e["storage_bytes"]);
    else
      FAIL("an unexpected saved tensor: " + e.dump());
  }
  return out;
}

}  // namespace

TEST_CASE(
    "RL loss records equal verl's saved tensors (tests/reference/rl_loss_saved.json, torch "
    "2.6.0, verl b178a3c)",
    "[rl_loss]") {
  const json m = measured();
  REQUIRE(u(m["N"]) == 64);
  REQUIRE(u(m["V"]) == 1000);
  struct Case {
    const char* loss;
    const char* measured;          // the case whose storages the records add
    std::vector<std::string> ids;  // the records beyond logits and labels
  };
  const Case cases[] = {
      {"logprob_torch", "logprob_v2", {"logprob.row_log_softmax", "logprob.labels"}},
      {"logprob+entropy:eager", "entropy_eager", {"entropy.softmax", "entropy.logsumexp"}},
      {"logprob+entropy:chunked",
       "entropy_chunked",
       {"entropy.chunk_logits_fp32", "entropy.chunk_softmax_fp32", "entropy.chunk_logsumexp"}},
      {"logprob+entropy:checkpoint", "entropy_checkpointed", {}},
      {"logprob+entropy",
       "entropy_compiled",
       {"entropy.amax", "entropy.softmax_sum", "entropy.logsumexp"}},
  };
  for (const Case& c : cases) {
    INFO(c.loss);
    const auto r = records(run(rl_request(c.loss, 1, 64)));
    std::uint64_t sum = 0;
    for (const std::string& id : c.ids) {
      REQUIRE(r.count(id) == 1);
      sum += r.at(id);
    }
    CHECK(sum == measured_beside_logits(m, c.measured));
    // The logits the output holds: every case saved that storage, or (v2) its rows' outputs.
    CHECK(r.at("logits") == 64 * 1000 * 2);
  }
  // The chunked entropy keeps more under grad than the eager one (each chunk's fp32 copy and
  // softmax stay alive until backward): 2 x 4NV + 4N against 2NV + 2N.
  CHECK(measured_beside_logits(m, "entropy_chunked") == 2 * 64 * 1000 * 4 + 64 * 4);
  CHECK(measured_beside_logits(m, "entropy_eager") == 64 * 1000 * 2 + 64 * 2);
}

TEST_CASE(
    "RL loss: flash-attn's cross entropy keeps the logits, an fp32 log-sum-exp and the "
    "labels (flash-attn 058ad35 cross_entropy.py save_for_backward)",
    "[rl_loss]") {
  const auto r = records(run(rl_request("logprob", 2, 64)));
  CHECK(r.at("logits") == 2 * 64 * 1000 * 2);
  CHECK(r.at("logprob.lse") == 2 * 64 * 4);
  CHECK(r.at("logprob.labels") == 2 * 64 * 8);
  CHECK(r.count("loss.log_softmax_out") == 0);
  CHECK(r.count("entropy.softmax") == 0);
}

TEST_CASE(
    "RL loss: PPO's clipped policy loss keeps 8 fp32 and 3 bool tensors per response token "
    "and two 0-dim tensors (rl_loss_saved.json policy_loss, B = 4, R = 16)",
    "[rl_loss]") {
  const json m = measured();
  // The response mask lives in the batch (an input, not counted).
  const auto [fp32, masks, scalars] = per_token_saved(m["policy_loss"]);
  const auto r = records(run(rl_request("logprob", 4, 64, 16)));
  CHECK(r.at("policy_loss.fp32") == fp32);
  CHECK(r.at("policy_loss.masks") == masks);
  CHECK(r.at("policy_loss.token_count") + r.at("policy_loss.kl_divisor") == scalars);
  // Without response_len the whole sequence is the response.
  CHECK(records(run(rl_request("logprob", 4, 64)))["policy_loss.fp32"] == 4 * 64 * 8 * 4);
}

TEST_CASE(
    "TRL's GRPO loss records equal what TRL's _compute_loss keeps (tests/reference/"
    "trl_loss_saved.json, torch 2.6.0, huggingface/trl f2cd577, B = 4, P = 8, R = 16)",
    "[rl_loss]") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/trl_loss_saved.json");
  REQUIRE(in.good());
  const json m = json::parse(in);
  REQUIRE(u(m["B"]) == 4);
  REQUIRE(u(m["P"]) + u(m["R"]) == 24);
  REQUIRE(u(m["V"]) == 1000);
  const std::vector<std::string> ids = {"lm_head.in", "logprob.row_log_softmax",
                                        "policy_loss.ratio", "policy_loss.terms",
                                        "policy_loss.normalizer"};
  // Case: loss and the measured case; the input ids (int64, the gather's index) are the
  // storage the embedding keeps (embed.token_ids), not the loss's own.
  for (const auto& [loss, name] :
       {std::pair{"logprob_trl", "vllm"}, {"logprob_trl", "no_vllm"}, {"logprob_trl+kl", "beta"}}) {
    INFO(name);
    const json a = run(rl_request(loss, 4, 24, 16));
    const auto r = records(a);
    std::uint64_t sum = 0;
    for (const std::string& id : ids) sum += r.at(id);
    if (std::string(loss).find("+kl") != std::string::npos) sum += r.at("policy_loss.kl_exp");
    std::uint64_t measured_sum = 0, index = 0;
    for (const json& e : m["cases"][name]) {
      if (e["lives_anyway"].get<bool>()) continue;
      if (e["dtype"] == "int64")
        index += u(e["storage_bytes"]);
      else
        measured_sum += u(e["storage_bytes"]);
    }
    CHECK(sum == measured_sum);
    std::uint64_t token_ids = 0;
    for (const json& t : a["input_layer"]["tensors"])
      if (t["name"] == "embed.token_ids") token_ids = u(t["bytes"]);
    CHECK(index == token_ids);
    // Nothing of the full-vocabulary logits is kept.
    CHECK(r.count("logits") == 0);
  }
  // By hand: the response's hidden states [4, 17, 64] bf16, one [16, 1000] bf16 log_softmax per
  // sequence, the ratio [4, 16] bf16, two fp32 terms and the divisor.
  const auto r = records(run(rl_request("logprob_trl", 4, 24, 16)));
  CHECK(r.at("lm_head.in") == 4 * 17 * 64 * 2);
  CHECK(r.at("logprob.row_log_softmax") == 4 * 16 * 1000 * 2);
  CHECK(r.at("policy_loss.ratio") == 4 * 16 * 2);
  CHECK(r.at("policy_loss.terms") == 4 * 16 * 2 * 4);
  CHECK(r.at("policy_loss.normalizer") == 4);
  // With a one-token prompt the kept slice is the whole sequence: the norm's output itself.
  CHECK(records(run(rl_request("logprob_trl", 4, 17, 16))).at("lm_head.in") == 4 * 17 * 64 * 2);
}

TEST_CASE(
    "TRL's DPO loss records equal what DPOTrainer's _compute_loss keeps (tests/reference/"
    "trl_loss_saved.json dpo, torch 2.6.0, huggingface/trl f2cd577, 2 pairs of 24 tokens)",
    "[rl_loss]") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/trl_loss_saved.json");
  REQUIRE(in.good());
  const json m = json::parse(in)["dpo"];
  REQUIRE(u(m["sequences"]) == 4);
  REQUIRE(u(m["seq"]) == 24);
  const json a = run(rl_request("dpo_trl", 4, 24));
  const auto r = records(a);
  // The measured storages that live anyway are the lm_head weight, the norm's output (the
  // lm_head input: lm_head.in) and the input ids (the embedding's embed.token_ids).
  std::uint64_t own = 0, norm_out = 0;
  for (const json& e : m["saved"]) {
    if (!e["lives_anyway"].get<bool>())
      own += u(e["storage_bytes"]);
    else if (e["shape"] == json::array({96, 64}))
      norm_out = u(e["storage_bytes"]);
  }
  CHECK(r.at("logprob.row_log_softmax") + r.at("dpo.completion_mask") + r.at("dpo.logsigmoid") ==
        own);
  CHECK(r.at("lm_head.in") == norm_out);
  CHECK(r.count("logits") == 0);
  // By hand: one [23, 1000] bf16 log_softmax per sequence, the [4, 23] bool mask, the
  // logsigmoid's input and buffer over the 2 pairs.
  CHECK(r.at("logprob.row_log_softmax") == 4 * 23 * 1000 * 2);
  CHECK(r.at("dpo.completion_mask") == 4 * 23);
  CHECK(r.at("dpo.logsigmoid") == 2 * 2 * 2);
  // The loss's buffers (from the code): forward, both models' logits (X = 4 x 24 x 1000 x 2 B)
  // with the entropy's copy of the shifted view (X1) and one 92-row chunk three times; the
  // reference's forward beside the policy's logits is smaller here. Backward: X1 and X.
  json treq = rl_request("dpo_trl", 4, 24);
  treq["command"] = "timeline";
  const json t = run(treq);
  std::map<std::string, std::uint64_t> tr;
  for (const json& x : t["stages"][0]["transients"]) tr[x["name"]] = u(x["bytes"]);
  const std::uint64_t x = 4 * 24 * 1000 * 2, x1 = 4 * 23 * 1000 * 2, chunk = 92 * 1000 * 2;
  CHECK(tr.at("loss.fp32_logits_buffer") == 2 * x + x1 + 3 * chunk);
  CHECK(tr.at("loss.logits_grad") == x1);
}

TEST_CASE(
    "OpenRLHF's actor loss: the fp32 logits, flash-attn's log-sum-exp and labels, and the "
    "policy loss measured (tests/reference/openrlhf_loss_saved.json, torch 2.6.0, OpenRLHF "
    "3c3be62, B = 4, S = 24)",
    "[rl_loss]") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/openrlhf_loss_saved.json");
  REQUIRE(in.good());
  const json m = json::parse(in);
  REQUIRE(u(m["B"]) == 4);
  REQUIRE(u(m["S"]) == 24);
  std::uint64_t own = 0;
  for (const json& e : m["saved"])
    if (!e["lives_anyway"].get<bool>()) {
      CHECK(e["dtype"] == "float32");
      own += u(e["storage_bytes"]);
    }
  const auto r = records(run(rl_request("logprob_openrlhf", 4, 24)));
  CHECK(r.at("policy_loss.fp32") == own);
  CHECK(r.at("policy_loss.fp32") == 4 * 23 * 5 * 4);
  // From flash-attn's code (GPU only): the fp32 logits it saves, its fp32 log-sum-exp, the labels.
  CHECK(r.at("logits") == 4 * 24 * 1000 * 4);
  CHECK(r.at("logprob.lse") == 4 * 24 * 4);
  CHECK(r.at("logprob.labels") == 4 * 24 * 8);
  // Buffers: the bf16 logits beside their fp32 copy; flash-attn's fp32 gradient and the cast's
  // bf16 one in backward.
  json treq = rl_request("logprob_openrlhf", 4, 24);
  treq["command"] = "timeline";
  const json t = run(treq);
  std::map<std::string, std::uint64_t> tr;
  for (const json& x : t["stages"][0]["transients"]) tr[x["name"]] = u(x["bytes"]);
  CHECK(tr.at("loss.fp32_logits_buffer") == 4 * 24 * 1000 * 2);
  CHECK(tr.at("loss.logits_grad") == 4 * 24 * 1000 * 4);
}

TEST_CASE(
    "OpenRLHF's actor loss with --actor.entropy_coef: its compiled compute_entropy keeps three "
    "fp32 row statistics beside the logits (tests/reference/openrlhf_loss_saved.json entropy, "
    "torch 2.6.0 aot_eager_decomp_partition, OpenRLHF 3c3be62, B = 4, S = 24, V = 1000)",
    "[rl_loss]") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/openrlhf_loss_saved.json");
  REQUIRE(in.good());
  const json m = json::parse(in);
  REQUIRE(u(m["entropy"]["V"]) == 1000);
  for (const char* shapes : {"static", "dynamic"}) {
    INFO(shapes);
    std::uint64_t bytes = 0, n = 0;
    for (const json& e : m["entropy"][shapes]) {
      CHECK(e["dtype"] == "float32");
      bytes += u(e["storage_bytes"]), ++n;
    }
    CHECK(n == 3);
    const auto with = records(run(rl_request("logprob_openrlhf+entropy", 4, 24)));
    CHECK(with.at("entropy.amax") + with.at("entropy.softmax_sum") + with.at("entropy.logsumexp") ==
          bytes);
  }
  const auto with = records(run(rl_request("logprob_openrlhf+entropy", 4, 24)));
  const auto without = records(run(rl_request("logprob_openrlhf", 4, 24)));
  CHECK(with.at("entropy.logsumexp") == 4 * 24 * 4);
  CHECK(without.count("entropy.amax") == 0);
  for (const auto& [id, bytes] : without) CHECK(with.at(id) == bytes);
  // Backward: the entropy's fp32 gradient of the logits beside flash-attn's before they are
  // summed (from torch's code: autograd accumulates in place), in place of the cast's bf16 one.
  json treq = rl_request("logprob_openrlhf+entropy", 4, 24);
  treq["command"] = "timeline";
  const json t = run(treq);
  std::map<std::string, std::uint64_t> tr;
  for (const json& x : t["stages"][0]["transients"]) tr[x["name"]] = u(x["bytes"]);
  CHECK(tr.at("loss.logits_grad") == 4 * 24 * 1000 * 4);
  CHECK(tr.at("loss.backward_buffers") == 4 * 24 * 1000 * 4);
  CHECK(tr.at("loss.fp32_logits_buffer") == 4 * 24 * 1000 * 2);
  CHECK(run(rl_request("logprob_openrlhf+entropy", 4, 24))["config"]["loss"] ==
        "logprob_openrlhf+entropy");
}

TEST_CASE("RL loss: refusals name the field", "[rl_loss]") {
  auto msg = [](json req) {
    const json r = actmem::evaluate_json(req);
    return r.value("ok", true) ? std::string("ok") : r["error"]["message"].get<std::string>();
  };
  json req = rl_request("logprob", 1, 64);
  req["config"]["profile"] = "pytorch";
  CHECK(msg(req) ==
        "config.loss: 'logprob' is verl's, TRL's or OpenRLHF's actor (or a critic) over a "
        "transformers model; allowed with profile hf");
  req = rl_request("logprob+entropy:chunked", 1, 64);
  req["config"]["tp"] = 2;
  CHECK(msg(req) ==
        "config.loss: 'logprob+entropy:chunked' is verl's FSDP, TRL's or OpenRLHF's data-parallel "
        "actor (no tensor, context or pipeline parallelism); allowed with tp, cp and pp 1");
  CHECK(msg(rl_request("logprob", 1, 64, 65)) ==
        "config.response_len: response_len=65 is longer than seq=64 (the prompt and response "
        "together)");
  req = rl_request("eager", 1, 64, 16);
  CHECK(msg(req) ==
        "config.response_len: response_len=16 is read only with an RL loss (loss "
        "logprob, logprob_torch, logprob_trl or value)");
  CHECK(msg(rl_request("logprob+entropies", 1, 64))
            .rfind("config.loss: 'logprob+entropies' is "
                   "not allowed",
                   0) == 0);
}

TEST_CASE(
    "RL loss value: PPO's critic keeps the score head's dropout mask and input and the value "
    "loss's tensors (rl_loss_saved.json critic, transformers GenericForTokenClassification, "
    "verl compute_value_loss)",
    "[rl_loss]") {
  const json m = measured();
  // The head: two [N, H] storages besides the final norm's output and the weight (on the CPU the
  // dropout's mask is a bf16 tensor; CUDA's native_dropout keeps it as bool, as the engine's
  // other dropout masks).
  std::uint64_t head = 0, head_tensors = 0;
  for (const json& e : m["critic"]["head"])
    if (!e["is_input"].get<bool>()) head += u(e["storage_bytes"]), ++head_tensors;
  CHECK(head_tensors == 2);
  CHECK(head == 2 * 64 * 64 * 2);
  const auto [fp32, masks, scalars] = per_token_saved(m["critic"]["value_loss"]);
  json req = rl_request("value", 4, 16, 16);
  req["model"]["hidden_size"] = 64;
  const auto r = records(run(req));
  CHECK(r.at("critic.score_in") == 4 * 16 * 64 * 2);
  CHECK(r.at("critic.dropout_mask") == 4 * 16 * 64);
  CHECK(r.at("value_loss.fp32") == fp32);
  CHECK(r.at("value_loss.mask") == masks);
  CHECK(r.at("value_loss.token_count") == scalars);
  CHECK(r.count("logits") == 0);
  CHECK(r.count("lm_head.in") == 0);
  // The head's parameters: score.weight (h) and its bias in place of lm_head (V x h).
  const json lm = run(rl_request("logprob", 4, 16));
  json value64 = rl_request("value", 4, 16);
  const json v = run(value64);
  CHECK(u(lm["static"]["params_bytes"]) - u(v["static"]["params_bytes"]) ==
        (1000 * 64 - 64 - 1) * 2);
}

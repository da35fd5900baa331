// Properties every profile must satisfy: linear in b, flash removes s^2, recompute never adds,
// exact TP/SP/CP divisions, GQA-aware KV cache, and overflow reported instead of wrapped.
#include <cmath>

#include "actmem/read/presets.hpp"
#include "helpers.hpp"

using namespace actmem::test;

namespace {
const char* const kProfiles[] = {"megatron", "textbook", "pytorch", "hf"};
const char* const kAttention[] = {"eager", "sdpa_math", "flash"};
}  // namespace

TEST_CASE(
    "Property: per-layer activations are linear in the micro-batch b (all profiles, attentions)",
    "[property]") {
  for (const char* prof : kProfiles)
    for (const char* att : kAttention) {
      INFO(prof << " " << att);
      json c = {{"profile", prof}, {"attention", att}, {"seq", 1024}, {"dropout", 0.1}};
      // The flash kernel's 24-byte RNG state (pytorch/hf) does not scale with b.
      const std::string p = prof;
      const std::uint64_t fixed =
          std::string(att) == "flash" && (p == "pytorch" || p == "hf") ? 24 : 0;
      c["micro_batch"] = 1;
      const std::uint64_t one =
          u(run_preset("llama-3.1-8b", c)["per_layer"]["activation_bytes"]) - fixed;
      c["micro_batch"] = 3;
      CHECK(u(run_preset("llama-3.1-8b", c)["per_layer"]["activation_bytes"]) - fixed == 3 * one);
    }
}

TEST_CASE("Property: flash attention removes every s^2 term (Dao et al. 2022)",
          "[property][flash]") {
  for (const char* prof : kProfiles) {
    INFO(prof);
    json c = {{"profile", prof}, {"attention", "flash"}, {"dropout", 0.1}, {"seq", 512}};
    const json r = run_preset("gpt2-xl", c);
    CHECK(u(r["per_layer"]["quadratic_bytes"]) == 0);
    const std::uint64_t at_s = u(r["per_layer"]["activation_bytes"]);
    c["seq"] = 1024;
    // Linear in s, up to the fixed 24-byte RNG state the flash kernel keeps.
    const std::uint64_t at_2s = u(run_preset("gpt2-xl", c)["per_layer"]["activation_bytes"]);
    CHECK(at_2s + (std::string(prof) == "pytorch" || std::string(prof) == "hf" ? 24 : 0) ==
          2 * at_s);
  }
}

TEST_CASE("Property: recompute never increases kept activations (none >= selective >= full)",
          "[property][recompute]") {
  for (const char* prof : kProfiles)
    for (const char* att : kAttention) {
      INFO(prof << " " << att);
      auto kept = [&](const char* rc) {
        const json r = run_preset(
            "llama-2-13b", {{"profile", prof}, {"attention", att}, {"recompute", rc}, {"pp", 2}});
        return u(r["stages"][0]["activations"]["layers_bytes"]);
      };
      const std::uint64_t none = kept("none"), sel = kept("selective"), full = kept("full"),
                          e4 = kept("every:4");
      CHECK(none >= sel);
      CHECK(sel >= full);
      CHECK(full >= e4);
    }
}

TEST_CASE(
    "Property: TP+SP divides every megatron per-layer tensor by t exactly (Korthikanti Table 2)",
    "[property][tp]") {
  for (std::uint64_t t : {1, 2, 4, 8}) {
    INFO("t=" << t);
    const json one = run_preset("megatron-22b", {{"profile", "megatron"}, {"dropout", 0.1}});
    const json r = run_preset("megatron-22b",
                              {{"profile", "megatron"}, {"dropout", 0.1}, {"tp", t}, {"sp", true}});
    CHECK(u(r["per_layer"]["activation_bytes"]) * t == u(one["per_layer"]["activation_bytes"]));
  }
}

TEST_CASE(
    "Property: context parallelism divides per-token tensors by c, local queries keep all keys",
    "[property][cp]") {
  const json one = run_preset("llama-3.1-8b", {{"attention", "flash"}, {"seq", 8192}});
  const json cp4 = run_preset("llama-3.1-8b", {{"attention", "flash"}, {"seq", 8192}, {"cp", 4}});
  CHECK(u(cp4["per_layer"]["activation_bytes"]) * 4 == u(one["per_layer"]["activation_bytes"]));
  const json eager = run_preset("llama-3.1-8b", {{"seq", 8192}, {"cp", 4}});
  for (const auto& t : eager["per_layer"]["tensors"])
    if (t["name"] == "attn.softmax_out") CHECK(u(t["bytes"]) == 2ULL * 32 * (8192 / 4) * 8192);
}

TEST_CASE("KV cache is GQA-aware: 2 * p * L * kv * d * s * b (seed 002 formula with H = KV heads)",
          "[property][kv]") {
  const json r =
      run_preset("llama-3.1-70b", {{"seq", 8192}, {"micro_batch", 4}, {"tp", 8}, {"pp", 2}});
  CHECK(u(r["kv_cache"]["total_bytes"]) == 2ULL * 2 * 80 * 8 * 128 * 8192 * 4);
  CHECK(u(r["kv_cache"]["per_gpu_bytes"]) == 2ULL * 2 * 40 * 1 * 128 * 8192 * 4);
}

TEST_CASE("Totals are the sum of named parts (inventory is the source of truth)",
          "[property][sum]") {
  for (const char* prof : kProfiles) {
    INFO(prof);
    const json r =
        run_preset("mixtral-8x7b",
                   {{"profile", prof}, {"pp", 2}, {"tp", 2}, {"sp", true}, {"ep", 2}, {"dp", 2}});
    CHECK(sum_tensors(r["per_layer"]["tensors"]) == u(r["per_layer"]["activation_bytes"]));
    CHECK(u(r["per_layer"]["linear_bytes"]) + u(r["per_layer"]["quadratic_bytes"]) ==
          u(r["per_layer"]["activation_bytes"]));
    for (const auto& s : r["stages"]) {
      const json& a = s["activations"];
      CHECK(u(a["layers_bytes"]) + u(a["input_layer_bytes"]) + u(a["output_layer_bytes"]) +
                u(a["recompute_working_bytes"]) ==
            u(a["total_bytes"]));
      CHECK(u(s["activations"]["total_bytes"]) + u(s["static"]["total_bytes"]) ==
            u(s["total_bytes"]));
    }
    // The explanation of the per-layer total ends in the same number.
    const json& e0 = r["explain"][0];
    CHECK(u(e0["bytes"]) == u(r["per_layer"]["activation_bytes"]));
  }
}

TEST_CASE(
    "MoE activations follow top-k routing: dropless expert tokens = k*b*s, capacity rounds per "
    "expert (GShard)",
    "[property][moe]") {
  const json r = run_preset("mixtral-8x7b", {{"seq", 4096}, {"micro_batch", 2}});
  for (const auto& t : r["per_layer"]["tensors"])
    if (t["name"] == "moe.expert_in")
      CHECK(u(t["bytes"]) == 2ULL * 2 * 4096 * 2 * 4096);  // p * k*b*s * h
  json model = {{"hidden_size", 64},
                {"num_attention_heads", 4},
                {"num_hidden_layers", 2},
                {"vocab_size", 100},
                {"num_local_experts", 8},
                {"num_experts_per_tok", 2},
                {"moe_intermediate_size", 128},
                {"capacity_factor", 1.25}};
  const json rc = run(
      json{{"model", model}, {"config", {{"seq", 100}, {"micro_batch", 1}, {"dtype", "fp32"}}}});
  for (const auto& t :
       rc["per_layer"]["tensors"])  // ceil(1.25 * 2 * 100 / 8) = 32 tokens per expert
    if (t["name"] == "moe.expert_in") CHECK(u(t["bytes"]) == 4ULL * 8 * 32 * 64);
}

TEST_CASE(
    "MoE routing imbalance: the busiest EP rank's expert tensors grow by rho (ceil(rho*k*b*s) "
    "routed tokens), refused where it would change nothing",
    "[property][moe]") {
  // Mixtral 8x7B, ep = 8, b = 1, s = 4096, bf16: k*b*s = 8,192 routed tokens per rank on average.
  auto layer = [](double rho) {
    return run_preset("mixtral-8x7b",
                      {{"seq", 4096}, {"ep", 8}, {"dp", 8}, {"moe_imbalance", rho}});
  };
  const json base = layer(1.0);
  // The records over routed tokens (expert input, GLU input, second-linear input, expert output)
  // and the router's per-token ones: per routed token p*(h + 2f_e + f_e + h) bytes.
  const std::uint64_t h = 4096, fe = 14336, per_token = 2 * (h + 2 * fe + fe + h);
  const std::uint64_t tokens = 2 * 4096;
  for (const double rho : {1.5, 2.0, 3.3, 8.0}) {
    INFO(rho);
    const json r = layer(rho);
    const auto busiest = static_cast<std::uint64_t>(std::ceil(rho * static_cast<double>(tokens)));
    CHECK(u(r["per_layer"]["activation_bytes"]) - u(base["per_layer"]["activation_bytes"]) ==
          (busiest - tokens) * per_token);
    CHECK(r["config"]["moe_imbalance"] == rho);
  }
  auto err = [](const json& req) { return actmem::evaluate_json(req)["error"]["field"]; };
  CHECK(err(json{{"preset", "mixtral-8x7b"}, {"config", {{"moe_imbalance", 2}}}}) ==
        "config.moe_imbalance");  // ep = 1: one rank sees every routed token
  CHECK(err(json{{"preset", "llama-2-7b"}, {"config", {{"moe_imbalance", 2}}}}) ==
        "config.moe_imbalance");  // dense
  CHECK(err(json{{"preset", "mixtral-8x7b"},
                 {"config", {{"moe_imbalance", 9}, {"ep", 8}, {"dp", 8}}}}) ==
        "config.moe_imbalance");  // beyond every token of the group on one rank
  CHECK(err(json{{"preset", "mixtral-8x7b"},
                 {"config", {{"moe_imbalance", 0.5}, {"ep", 8}, {"dp", 8}}}}) ==
        "config.moe_imbalance");
}

TEST_CASE("Overflow: s = 10^7, b = 10^4 is a field-named error, never a wrapped number",
          "[overflow]") {
  const json r = actmem::evaluate_json(
      json{{"preset", "llama-3.1-8b"}, {"config", {{"seq", 10000000}, {"micro_batch", 10000}}}});
  REQUIRE_FALSE(r["ok"].get<bool>());
  CHECK(r["error"]["code"] == "overflow");
  CHECK(r["error"]["message"].get<std::string>().find("2^63") != std::string::npos);
  CHECK(r["error"]["field"] == "config.seq");
  // Large but representable still computes exactly: the 2-byte softmax output of 32 heads at s =
  // 2^20.
  const json ok = run_preset("llama-3.1-8b", {{"seq", 1 << 20}, {"micro_batch", 1}});
  CHECK(u(ok["per_layer"]["quadratic_bytes"]) == 2ULL * 32 * (1 << 20) * (1 << 20));
}

TEST_CASE(
    "Overflow at the issue's corner (s = 10^7, b = 10^4, a = 10^3, L = 10^4): a config.seq error "
    "with eager and with flash attention, never a wrapped or negative number",
    "[overflow]") {
  const json model = {{"hidden_size", 128000},       {"num_attention_heads", 1000},
                      {"num_hidden_layers", 10000},  {"vocab_size", 50000},
                      {"intermediate_size", 512000}, {"ffn_type", "gelu"},
                      {"norm_type", "layernorm"},    {"position_embedding", "rope"}};
  for (const char* att : {"eager", "flash"}) {
    CAPTURE(att);
    const json r = actmem::evaluate_json(
        json{{"model", model},
             {"config", {{"seq", 10000000}, {"micro_batch", 10000}, {"attention", att}}}});
    REQUIRE_FALSE(r["ok"].get<bool>());
    CHECK(r["error"]["code"] == "overflow");
    CHECK(r["error"]["field"] == "config.seq");
    CHECK(r["error"]["message"].get<std::string>().rfind("config.seq: ", 0) == 0);
    CHECK(r["error"]["message"].get<std::string>().find("2^63-1") != std::string::npos);
  }
}

TEST_CASE(
    "Overflow edge: one head at s = 2^30 computes exactly at b = 1 (softmax 2^61 B, peak just "
    "over 2^62) and is a config.seq error at b = 2, where the step's peak passes 2^63 - 1",
    "[overflow]") {
  const json model = {{"hidden_size", 64},        {"num_attention_heads", 1},
                      {"num_hidden_layers", 1},   {"vocab_size", 128},
                      {"intermediate_size", 256}, {"ffn_type", "gelu"},
                      {"norm_type", "layernorm"}, {"position_embedding", "rope"}};
  auto req = [&](int b) {
    return actmem::evaluate_json(
        json{{"model", model},
             {"config",
              {{"seq", 1 << 30}, {"micro_batch", b}, {"attention", "eager"}, {"dropout", 0}}}});
  };
  const json one = req(1);
  REQUIRE(one["ok"].get<bool>());
  for (const auto& t : one["per_layer"]["tensors"])
    if (t["name"] == "attn.softmax_out") CHECK(u(t["bytes"]) == (1ULL << 61));
  // softmax_out and its gradient d_probs (2^61 each) are alive together in backward.
  CHECK(u(one["peak_bytes"]) > (1ULL << 62));
  CHECK(u(one["peak_bytes"]) < (1ULL << 63));
  const json two = req(2);
  REQUIRE_FALSE(two["ok"].get<bool>());
  CHECK(two["error"]["code"] == "overflow");
  CHECK(two["error"]["field"] == "config.seq");
  CHECK(two["error"]["message"] ==
        "config.seq: timeline.peak_bytes would exceed 2^63-1 bytes at micro_batch=2, "
        "seq=1073741824; reduce config.seq or config.micro_batch (or the model size)");
}

TEST_CASE(
    "Overflow in static memory: a model whose parameters or their bytes pass 2^63 - 1 is a "
    "model error",
    "[overflow]") {
  const json base = {{"num_attention_heads", 1},    {"num_hidden_layers", 1},
                     {"vocab_size", 128},           {"intermediate_size", 256},
                     {"ffn_type", "gelu"},          {"norm_type", "layernorm"},
                     {"position_embedding", "rope"}};
  json huge = base;
  huge["hidden_size"] = 1ULL << 40;  // h^2 = 2^80 parameters
  json r = actmem::evaluate_json(json{{"model", huge}, {"config", {{"seq", 16}}}});
  REQUIRE_FALSE(r["ok"].get<bool>());
  CHECK(r["error"]["code"] == "overflow");
  CHECK(r["error"]["field"] == "model");
  json deep = base;
  deep["hidden_size"] = 1 << 22;
  deep["intermediate_size"] = 1 << 22;
  deep["num_hidden_layers"] = 65536;  // ~2^60 parameters: their bytes and states pass 2^63
  r = actmem::evaluate_json(json{{"model", deep}, {"config", {{"seq", 16}}}});
  REQUIRE_FALSE(r["ok"].get<bool>());
  CHECK(r["error"]["code"] == "overflow");
  CHECK(r["error"]["field"] == "model");
  CHECK(r["error"]["message"].get<std::string>().rfind("model: static memory", 0) == 0);
}

TEST_CASE(
    "One answer: the peak's lines add up to peak_bytes, which is the timeline's peak, for "
    "every preset x recompute policy",
    "[properties][peak]") {
  int n = 0;
  for (const auto& p : actmem::all_presets()) {
    if (std::string(p.kind) != "models") continue;
    for (const char* rc : {"none", "selective", "full", "every:2"}) {
      const json c = {{"recompute", rc}, {"seq", 1024}, {"fragmentation_pct", 5}};
      const json e = run_preset(p.id, c);
      const json t = run(json{{"command", "timeline"}, {"preset", p.id}, {"config", c}});
      const json& pk = e["peak"];
      INFO(p.id << " " << rc);
      CHECK(u(pk["params_bytes"]) + u(pk["grads_bytes"]) + u(pk["master_bytes"]) +
                u(pk["optimizer_bytes"]) ==
            u(pk["static_bytes"]));
      CHECK(u(pk["static_bytes"]) + u(pk["kept_activations_bytes"]) + u(pk["recomputed_bytes"]) +
                u(pk["transient_bytes"]) + u(pk["fragmentation_bytes"]) ==
            u(e["peak_bytes"]));
      CHECK(u(pk["bytes"]) == u(e["peak_bytes"]));
      CHECK(u(e["peak_bytes"]) == u(t["peak_bytes"]));
      CHECK(pk["at"] == e["peak_at"]);
      // The explanation of the peak ends in the same number, and so does the summary answer.
      bool explained = false;
      for (const auto& x : e["explain"])
        if (x["id"] == "peak_bytes") explained = u(x["bytes"]) == u(e["peak_bytes"]);
      CHECK(explained);
      json sreq = {{"preset", p.id}, {"config", c}, {"summary", true}};
      CHECK(u(run(sreq)["peak_bytes"]) == u(e["peak_bytes"]));
      ++n;
    }
  }
  CHECK(n == 132);  // 33 model presets x 4 policies
}

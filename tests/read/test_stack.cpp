// A model as a stack of layer kinds: per-layer, per-stage and whole-model bytes of heterogeneous
// stacks against totals computed by hand from the megatron profile's records (Korthikanti et al.
// 2022, Sec. 4.1: per layer 2·b·s·(4h + 2ad + 2·kv·d + a·s + 2f) bytes in bf16 for a GeLU layer
// without dropout and eager attention; the MoE records of engine/src/inventory/moe_and_io.cpp).
#include "helpers.hpp"

using namespace actmem::test;

namespace {

// h = 256, d = 32, s = 128, b = 1, V = 1000, LayerNorm, GeLU, RoPE, no biases, no dropout.
json base_model() {
  return json{{"hidden_size", 256},        {"num_attention_heads", 8},
              {"num_key_value_heads", 8},  {"head_dim", 32},
              {"intermediate_size", 1024}, {"num_hidden_layers", 4},
              {"vocab_size", 1000},        {"norm_type", "layernorm"},
              {"ffn_type", "gelu"},        {"position_embedding", "rope"}};
}

// Wide: a = kv = 8, f = 1024: 2·128·(1024 + 512 + 512 + 1024 + 2048) = 1,310,720 B.
// Narrow: a = kv = 4, f = 512: 2·128·(1024 + 256 + 256 + 512 + 1024) = 786,432 B.
constexpr std::uint64_t kWide = 1310720, kNarrow = 786432;
// Attention half of a layer (ln1.in, qkv_in, q, k, softmax_out, v, proj_in, ln2.in) at a = kv = 8:
// 2·128·(3·256 + 512 + 512 + 1024) = 720,896; a MoE FFN with E = 4, k = 2, f_e = 256 (dropless,
// k·b·s = 256 routed rows): router_in 65,536 + router_probs (fp32) 2,048 + expert_in 131,072 +
// act_in 131,072 + fc2_in 131,072 + expert_out 131,072 = 591,872.
constexpr std::uint64_t kMoe = 720896 + 591872;
// Parameters of one layer: LayerNorms 4h, QKV h·(a + 2kv)·d, out a·d·h, FC1 + FC2 2·h·f.
constexpr std::uint64_t kWideParams = 4 * 256 + 256 * 24 * 32 + 256 * 256 + 2 * 256 * 1024;
constexpr std::uint64_t kNarrowParams = 4 * 256 + 256 * 12 * 32 + 128 * 256 + 2 * 256 * 512;
// MoE layer: attention as wide, router h·E, 4 experts of h·f_e + f_e·h.
constexpr std::uint64_t kMoeParams =
    4 * 256 + 256 * 24 * 32 + 256 * 256 + 256 * 4 + 4 * 2 * 256 * 256;
constexpr std::uint64_t kEmbed = 1000 * 256, kHead = 1000 * 256 + 2 * 256;

json alternating() {
  json m = base_model();
  m["layer_kinds"] = {
      {"narrow",
       {{"num_attention_heads", 4}, {"num_key_value_heads", 4}, {"intermediate_size", 512}}}};
  m["layer_stack"] = json::array({{{"kinds", {"base", "narrow"}}, {"repeat", 2}}});
  return m;
}

json dense_then_moe() {
  json m = base_model();
  m["layer_kinds"] = {
      {"moe",
       {{"num_local_experts", 4}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 256}}}};
  m["layer_stack"] = json::array({{{"kind", "base"}}, {{"kind", "moe"}, {"repeat", 3}}});
  return m;
}

json est(const json& model, json config) {
  config["seq"] = 128;
  config["attention"] = "eager";
  config["profile"] = "megatron";
  return run(json{{"model", model}, {"config", config}});
}

std::uint64_t stage_layers_bytes(const json& r, int s) {
  return u(r["stages"][s]["activations"]["layers_bytes"]);
}

}  // namespace

TEST_CASE("Stack alternating two kinds (a=8, f=1024 / a=4, f=512): per layer, by hand", "[stack]") {
  const json r = est(alternating(), json::object());
  const json& kinds = r["model"]["layer_kinds"];
  REQUIRE(kinds.size() == 2);
  CHECK(kinds[0]["name"] == "base");
  CHECK(u(kinds[0]["layers"]) == 2);
  CHECK(u(kinds[0]["full_bytes"]) == kWide);
  CHECK(sum_tensors(kinds[0]["tensors"]) == kWide);
  CHECK(kinds[1]["name"] == "narrow");
  CHECK(u(kinds[1]["full_bytes"]) == kNarrow);
  CHECK(sum_tensors(kinds[1]["tensors"]) == kNarrow);
  // The stack as runs of one kind.
  CHECK(r["model"]["layer_stack"].size() == 4);
  // One stage keeps all four layers for its one micro-batch.
  CHECK(stage_layers_bytes(r, 0) == 2 * kWide + 2 * kNarrow);
  CHECK(u(r["model"]["params"]) == 2 * kWideParams + 2 * kNarrowParams + kEmbed + kHead);
}

TEST_CASE(
    "Stack alternating two kinds: per pipeline stage under even, uneven and interleaved "
    "splits, by hand",
    "[stack]") {
  // Even, pp = 2, 1F1B with m = p = 2: stage 0 (layers 0, 1) holds 2 micro-batches, stage 1 one.
  json r = est(alternating(), {{"pp", 2}});
  CHECK(stage_layers_bytes(r, 0) == 2 * (kWide + kNarrow));
  CHECK(stage_layers_bytes(r, 1) == kWide + kNarrow);
  CHECK(u(r["stages"][0]["static"]["params"]) == kWideParams + kNarrowParams + kEmbed);
  CHECK(u(r["stages"][1]["static"]["params"]) == kWideParams + kNarrowParams + kHead);
  // Uneven 1 + 3: stage 0 holds the wide layer 0 only, stage 1 narrow, wide, narrow.
  r = est(alternating(), {{"pp", 2}, {"layer_split", {1, 3}}});
  CHECK(stage_layers_bytes(r, 0) == 2 * kWide);
  CHECK(stage_layers_bytes(r, 1) == 2 * kNarrow + kWide);
  CHECK(u(r["stages"][0]["static"]["params"]) == kWideParams + kEmbed);
  CHECK(u(r["stages"][1]["static"]["params"]) == kWideParams + 2 * kNarrowParams + kHead);
  // Interleaved pp = 2, vpp = 2: model chunk c·p + r is rank r's chunk c, so rank 0 holds layers
  // 0 and 2 (both wide) and rank 1 layers 1 and 3 (both narrow): each rank's kept bytes are its
  // in-flight chunks times its kind's layer.
  r = est(alternating(), {{"pp", 2}, {"vpp", 2}});
  const std::uint64_t f0 = u(r["stages"][0]["in_flight_chunks"]);
  const std::uint64_t f1 = u(r["stages"][1]["in_flight_chunks"]);
  CHECK(f0 > f1);
  CHECK(stage_layers_bytes(r, 0) == f0 * kWide);
  CHECK(stage_layers_bytes(r, 1) == f1 * kNarrow);
  CHECK(u(r["stages"][0]["static"]["params"]) == 2 * kWideParams + kEmbed);
  CHECK(u(r["stages"][1]["static"]["params"]) == 2 * kNarrowParams + kHead);
}

TEST_CASE("Dense-then-MoE stack (1 dense + 3 MoE layers, E=4, k=2): per layer, per stage, by hand",
          "[stack]") {
  json r = est(dense_then_moe(), json::object());
  const json& kinds = r["model"]["layer_kinds"];
  REQUIRE(kinds.size() == 2);
  CHECK(u(kinds[0]["full_bytes"]) == kWide);
  CHECK(u(kinds[1]["full_bytes"]) == kMoe);
  CHECK(u(kinds[1]["layers"]) == 3);
  CHECK(stage_layers_bytes(r, 0) == kWide + 3 * kMoe);
  CHECK(u(r["model"]["params"]) == kWideParams + 3 * kMoeParams + kEmbed + kHead);
  // pp = 2 even: stage 0 = dense + MoE for 2 micro-batches, stage 1 = 2 MoE for one.
  r = est(dense_then_moe(), {{"pp", 2}});
  CHECK(stage_layers_bytes(r, 0) == 2 * (kWide + kMoe));
  CHECK(stage_layers_bytes(r, 1) == 2 * kMoe);
  // Expert parameters live only where MoE layers are: 4 experts x 2 x h x f_e per MoE layer.
  CHECK(u(r["stages"][0]["static"]["params"]) == kWideParams + kMoeParams + kEmbed);
  CHECK(u(r["stages"][1]["static"]["params"]) == 2 * kMoeParams + kHead);
  // Uneven 1 + 3: the dense layer alone on stage 0.
  r = est(dense_then_moe(), {{"pp", 2}, {"layer_split", {1, 3}}});
  CHECK(stage_layers_bytes(r, 0) == 2 * kWide);
  CHECK(stage_layers_bytes(r, 1) == 3 * kMoe);
  // Interleaved pp = 2, vpp = 2: rank 0 holds layers 0 (dense) and 2 (MoE), rank 1 layers 1 and 3.
  r = est(dense_then_moe(), {{"pp", 2}, {"vpp", 2}});
  const json& st1 = r["stages"][1];
  CHECK(stage_layers_bytes(r, 1) == u(st1["in_flight_chunks"]) * kMoe);
  CHECK(u(r["stages"][0]["static"]["params"]) == kWideParams + kMoeParams + kEmbed);
  // Expert parallelism divides the MoE layers' experts only.
  r = est(dense_then_moe(), {{"ep", 2}, {"dp", 2}});
  CHECK(u(r["model"]["params"]) == kWideParams + 3 * kMoeParams + kEmbed + kHead);
  CHECK(u(r["stages"][0]["static"]["params"]) ==
        kWideParams + 3 * (kMoeParams - 2 * 2 * 256 * 256) + kEmbed + kHead);
}

TEST_CASE("Stack: the timeline's peak equals the estimate's, and recompute follows each kind",
          "[stack]") {
  for (const json& model : {alternating(), dense_then_moe()})
    for (const char* rc : {"none", "selective", "full", "every:2"})
      for (const json& par : {json{{"pp", 1}}, json{{"pp", 2}}, json{{"pp", 2}, {"vpp", 2}},
                              json{{"pp", 2}, {"layer_split", {1, 3}}}}) {
        json c = par;
        c["recompute"] = rc;
        c["seq"] = 128;
        const json e = run(json{{"model", model}, {"config", c}});
        const json t = run(json{{"command", "timeline"}, {"model", model}, {"config", c}});
        INFO(rc << " " << par.dump());
        CHECK(u(e["peak_bytes"]) == u(t["peak_bytes"]));
        for (std::size_t s = 0; s < e["stages"].size(); ++s)
          CHECK(u(e["stages"][s]["peak_bytes"]) == u(t["stages"][s]["peak_bytes"]));
      }
  // Full recompute keeps one layer input per layer whatever its kind: 2·b·s·h = 65,536 B.
  const json r = est(alternating(), {{"recompute", "full"}});
  CHECK(stage_layers_bytes(r, 0) == 4 * 65536);
}

TEST_CASE("A one-kind stack given as layer_kinds + layer_stack is the plain model, byte for byte",
          "[stack]") {
  json plain = base_model();
  json stacked = base_model();
  stacked["layer_kinds"] = {{"same", json::object()}};
  stacked["layer_stack"] = json::array({{{"kind", "same"}, {"repeat", 4}}});
  const json c = {{"pp", 2}, {"recompute", "selective"}};
  json a = run(json{{"model", plain}, {"config", c}});
  json b = run(json{{"model", stacked}, {"config", c}});
  CHECK(b["model"].count("layer_kinds") == 0);
  CHECK(a.dump() == b.dump());
}

TEST_CASE(
    "qwen2_moe: decoder_sparse_step and mlp_only_layers place dense Qwen2MoeMLP layers "
    "(transformers modeling_qwen2_moe.py)",
    "[stack]") {
  json q = {{"model_type", "qwen2_moe"},
            {"hidden_size", 256},
            {"num_attention_heads", 8},
            {"num_key_value_heads", 8},
            {"intermediate_size", 1024},
            {"moe_intermediate_size", 256},
            {"num_experts", 4},
            {"num_experts_per_tok", 2},
            {"num_hidden_layers", 4},
            {"vocab_size", 1000},
            // Qwen2MoeSparseMoeBlock always has its shared expert (Qwen2MoeConfig default 5632).
            {"shared_expert_intermediate_size", 512}};
  const json all_moe = run(json{{"model", q}, {"config", {{"seq", 128}}}});
  CHECK(all_moe["model"].count("layer_kinds") == 0);
  q["mlp_only_layers"] = {0};
  q["decoder_sparse_step"] = 2;  // layers 1 and 3 sparse; 0 also listed dense
  const json r = run(json{{"model", q}, {"config", {{"seq", 128}}}});
  const json& kinds = r["model"]["layer_kinds"];
  REQUIRE(kinds.size() == 2);
  CHECK(kinds[0]["name"] == "dense");
  CHECK(u(kinds[0]["layers"]) == 2);
  CHECK(u(kinds[0]["num_local_experts"]) == 0);
  CHECK(u(kinds[1]["layers"]) == 2);
  CHECK(u(kinds[1]["num_local_experts"]) == 4);
  CHECK(u(r["peak_bytes"]) != u(all_moe["peak_bytes"]));
}

TEST_CASE("Stack input errors name the field, the value and what is allowed", "[stack]") {
  struct Bad {
    json patch;
    const char* field;
    const char* says;
  };
  const Bad cases[] = {
      {{{"layer_kinds", {{"x", {{"num_attention_head", 4}}}}},
        {"layer_stack", {"x", "x", "x", "x"}}},
       "model.layer_kinds.x.num_attention_head",
       "did you mean 'num_attention_heads'"},
      {{{"layer_kinds", {{"x", json::object()}}}}, "model.layer_stack", "required"},
      {{{"layer_kinds", {{"x", json::object()}}}, {"layer_stack", {"x", "y", "x", "x"}}},
       "model.layer_stack[1]",
       "\"y\" is not a layer kind; allowed: base, x"},
      {{{"layer_kinds", {{"x", json::object()}}},
        {"layer_stack", {{{"kind", "x"}, {"repeat", 3}}}}},
       "model.layer_stack",
       "has 3 layers; num_hidden_layers is 4"},
      {{{"layer_kinds", {{"x", json::object()}, {"y", json::object()}}},
        {"layer_stack", {{{"kind", "x"}, {"repeat", 4}}}}},
       "model.layer_kinds.y",
       "not used by layer_stack"},
      {{{"layer_kinds", {{"x", {{"num_attention_heads", 6}}}}},
        {"layer_stack", {"base", "x", "base", "x"}}},
       "model.layer_kinds.x.num_key_value_heads",
       "does not divide num_attention_heads=6"},
      {{{"layer_kinds", {{"x", {{"num_experts_per_tok", 2}}}}},
        {"layer_stack", {"x", "x", "x", "x"}}},
       "model.layer_kinds.x.num_experts_per_tok",
       "no experts"},
      {{{"layer_stack", {{{"kind", "base"}, {"repeat", 18446744073709551615ull}}}}},
       "model.layer_stack",
       "more than 65536 layers"},
      {{{"decoder_sparse_step", 2}}, "model.decoder_sparse_step", "only qwen2_moe"},
  };
  for (const Bad& b : cases) {
    json m = base_model();
    for (auto it = b.patch.begin(); it != b.patch.end(); ++it) m[it.key()] = it.value();
    const json r = actmem::evaluate_json(json{{"model", m}});
    INFO(r.dump());
    REQUIRE_FALSE(r["ok"].get<bool>());
    CHECK(r["error"]["field"] == b.field);
    CHECK(r["error"]["message"].get<std::string>().find(b.says) != std::string::npos);
  }
  // tp must divide every kind: the narrow kind's 4 heads reject tp = 8.
  const json r = actmem::evaluate_json(json{{"model", alternating()}, {"config", {{"tp", 8}}}});
  CHECK(r["error"]["field"] == "config.tp");
  CHECK(r["error"]["message"].get<std::string>().find("layer kind 'narrow'") != std::string::npos);
}

TEST_CASE(
    "Per-GPU KV cache follows the layers each stage holds (seed 002_13aa127c0ff0c20b.txt: "
    "2·2·L·H·d·s·b): llama-3.1-8b split 10 + 22",
    "[stack][kv]") {
  // 2 (K and V) x 2 bytes x layers x 8 kv heads x 128 x s = 1024 x b = 1.
  const json r = run_preset("llama-3.1-8b", {{"seq", 1024}, {"pp", 2}, {"layer_split", {10, 22}}});
  CHECK(u(r["kv_cache"]["total_bytes"]) == 4ull * 32 * 8 * 128 * 1024);
  CHECK(u(r["kv_cache"]["per_gpu_bytes"]) == 4ull * 22 * 8 * 128 * 1024);
  // The stack's kinds each count their own kv heads: alternating 8 and 4 kv heads, 4 layers.
  const json a = est(alternating(), json::object());
  CHECK(u(a["kv_cache"]["total_bytes"]) == 4ull * 128 * 32 * (2 * 8 + 2 * 4));
}

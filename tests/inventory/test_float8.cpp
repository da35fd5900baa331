// Float8 block linears (issue 16; docs/frameworks.md, "Float8"): the records torchao's Float8Linear
// saves, checked against the saved tensors measured with torchao eab345c2's own code under
// torch 2.6 (tests/reference/float8_saved.json from tests/reference/measure_float8.py), by hand on
// Llama 3.1 8B, and the refusals.
#include <fstream>

#include "helpers.hpp"

namespace actmem::test {

namespace {

json float8_block(const json& c, const std::string& float8) {
  const json model = {{"hidden_size", c["h"]},
                      {"num_attention_heads", c["a"]},
                      {"num_key_value_heads", c["kv"]},
                      {"intermediate_size", c["f"]},
                      {"num_hidden_layers", 1},
                      {"vocab_size", 16},
                      {"max_position_embeddings", c["s"]},
                      {"ffn_type", "swiglu"},
                      {"norm_type", "rmsnorm"},
                      {"position_embedding", "rope"}};
  const std::string a = c["attention"];
  const json config = {{"micro_batch", c["b"]},
                       {"seq", c["s"]},
                       {"dtype", "bf16"},
                       {"profile", "pytorch"},
                       {"attention", a == "sdpa_flash" ? "flash" : a},
                       {"attention_dropout", 0.0},
                       {"hidden_dropout", 0.0},
                       {"float8", float8}};
  return {{"model", model}, {"config", config}};
}

json llama8b(const std::string& float8, const json& extra = json::object()) {
  json c = {{"profile", "pytorch"},
            {"attention", "flash"},
            {"seq", 8192},
            {"micro_batch", 2},
            {"float8", float8}};
  c.update(extra);
  return run_preset("llama-3.1-8b", c);
}

}  // namespace

TEST_CASE(
    "Float8 linears: what one Llama block keeps equals torchao eab345c2's saved tensors, 15 "
    "measured configurations (tests/reference/float8_saved.json)") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/float8_saved.json");
  REQUIRE(in.good());
  const json ref = json::parse(in);
  REQUIRE(ref["configs"].size() == 15);
  for (const auto& c : ref["configs"]) {
    INFO(c["id"].get<std::string>());
    CHECK(u(run(float8_block(c, "none"))["per_layer"]["full_bytes"]) == u(c["bf16_cuda_bytes"]));
    CHECK(u(run(float8_block(c, c["float8"]))["per_layer"]["full_bytes"]) == u(c["cuda_bytes"]));
  }
}

TEST_CASE(
    "Float8 tensorwise on Llama 3.1 8B, b 2, s 8192, flash: float8 inputs and weights in place of "
    "the bf16 linear inputs, by hand") {
  // N = 16,384 tokens. Gone: attn.qkv_in and mlp.fc1_in (N x 4096 x 2 B each) and mlp.fc2_in
  // (N x 14336 x 2 B); attn.proj_in stays, flash attention's saved output. Added: one e4m3 copy
  // of its input per linear (q, k, v, o, gate, up: N x 4096 B each; down: N x 14336 B), each
  // linear's weight in e4m3 (the block's 218,103,808 linear parameters) and 14 fp32 scales.
  const std::uint64_t n = 16384, h = 4096, f = 14336;
  const std::uint64_t gone = 2 * (n * h * 2) + n * f * 2;
  const std::uint64_t added = 6 * n * h + n * f + 218'103'808 + 14 * 4;
  const json bf16 = llama8b("none");
  const json tw = llama8b("tensorwise");
  CHECK(u(tw["per_layer"]["full_bytes"]) + gone == u(bf16["per_layer"]["full_bytes"]) + added);
  CHECK(added - gone == 117'440'568);
  // The rowwise recipe saves input_hp and weight_hp_t (float8_linear.py
  // manual_float8_matmul_with_args_in_hp): the same records as bf16.
  CHECK(u(llama8b("rowwise")["per_layer"]["full_bytes"]) == u(bf16["per_layer"]["full_bytes"]));
  // Full recompute keeps only each layer's input: float8 changes nothing kept.
  CHECK(u(llama8b("tensorwise", {{"recompute", "full"}})["per_layer"]["activation_bytes"]) ==
        u(llama8b("none", {{"recompute", "full"}})["per_layer"]["activation_bytes"]));
  bool named = false;
  for (const auto& t : tw["per_layer"]["tensors"])
    named = named || (t["name"] == "attn.q_proj.weight_fp8" && t["dtype"] == "fp8");
  CHECK(named);
  CHECK(tw["config"]["float8"] == "tensorwise");
  // MXFP8 (torchao's prototype MXLinear): the same e4m3 inputs and weights, each with one e8m0
  // byte per 32 in-features instead of one fp32 scale.
  const std::uint64_t mx_added =
      6 * n * h + n * f + 218'103'808 + (6 * n * h + n * f) / 32 + 218'103'808 / 32;
  CHECK(u(llama8b("mxfp8")["per_layer"]["full_bytes"]) + gone ==
        u(bf16["per_layer"]["full_bytes"]) + mx_added);
  CHECK(mx_added - gone == 144'179'200);
}

TEST_CASE(
    "Float8 all-gather under torchtitan's FSDP2: e4m3 block weights gathered, no saved weight "
    "copies (torchao eab345c2 fsdp_utils.py)") {
  auto answer = [](bool ag) {
    return run_preset("llama-3.1-8b", {{"framework", "torchtitan"},
                                       {"dp", 8},
                                       {"seq", 8192},
                                       {"micro_batch", 2},
                                       {"recompute", "full"},
                                       {"float8", "tensorwise"},
                                       {"float8_all_gather", ag}});
  };
  const json off = answer(false), on = answer(true);
  // FSDP2's root group (embedding, head: 128,256 x 4096 each; final norm 4096) stays bf16; the
  // last block's linears (218,103,808 weights) arrive in e4m3, its two norms (8,192) in bf16.
  const std::uint64_t embed = 525'336'576, linears = 218'103'808;
  CHECK(u(off["peak"]["gathered_params_bytes"]) == 2 * (2 * embed + 4096) + 2 * (linears + 8192));
  CHECK(u(on["peak"]["gathered_params_bytes"]) == 2 * (2 * embed + 4096) + linears + 2 * 8192);
  // The float8 matmul saves a view of the gathered weight: the e4m3 weight copies are gone.
  CHECK(u(off["per_layer"]["full_bytes"]) - u(on["per_layer"]["full_bytes"]) == linears);
  const json bad = evaluate_json(
      {{"preset", "llama-3.1-8b"},
       {"config", {{"profile", "pytorch"}, {"float8", "rowwise"}, {"float8_all_gather", true}}}});
  CHECK(bad["error"]["field"] == "config.float8_all_gather");
}

TEST_CASE(
    "TransformerEngine fp8 under the megatron profile (delayed scaling, TE v1.13): fp8 linear "
    "inputs per micro-batch, cached fp8 weights and transposes per run, by hand") {
  auto answer = [](const std::string& f, const json& extra = json::object()) {
    json c = {{"seq", 4096}, {"tp", 2}, {"sp", true}, {"attention", "flash"}, {"float8", f}};
    c.update(extra);
    return run_preset("llama-3.1-8b", c);
  };
  const json bf16 = answer("none"), fp8 = answer("delayed");
  // b = 1, s = 4096, t = 2 with SP. The qkv and fc1 LayerNormLinears' norm outputs
  // (1 x 2048 x 4096) and fc2's input (1 x 4096 x 7168) go from 2 B to 1 B per element; flash
  // attention keeps its bf16 output and proj saves an fp8 copy (1 x 4096 x 2048).
  const std::uint64_t saved = 2048ull * 4096 * 2 + 4096ull * 7168 - 4096ull * 2048;
  CHECK(u(bf16["per_layer"]["full_bytes"]) - u(fp8["per_layer"]["full_bytes"]) == saved);
  // Per layer: 218,103,808 / 2 linear weights on this TP rank, an fp8 weight and its transpose
  // each (2 B per weight), and four modules' fp8_meta of 4 x (5 x 1 + 10) B.
  const std::uint64_t per_layer = 218'103'808 / 2 * 2 + 4 * 4 * (5 + 10);
  CHECK(u(fp8["peak"]["fp8_weights_bytes"]) == 32 * per_layer);
  CHECK(u(answer("delayed", {{"fp8_amax_history", 1024}})["peak"]["fp8_weights_bytes"]) ==
        32 * (per_layer + 4 * 4 * 5 * 1023));
  // Megatron-LM's arguments read it, and write it back.
  const json read = run({{"preset", "llama-3.1-8b"},
                         {"config", {{"dp", 1}}},
                         {"megatron_args", "--bf16 --fp8-format hybrid --fp8-amax-history-len 4"}});
  CHECK(read["config"]["float8"] == "delayed");
  CHECK(read["config"]["fp8_amax_history"] == 4);
  auto field = [](const json& config) {
    const json r = evaluate_json({{"preset", "llama-3.1-8b"}, {"config", config}});
    REQUIRE_FALSE(r.value("ok", true));
    return r["error"]["field"].get<std::string>();
  };
  CHECK(field({{"float8", "delayed"}, {"profile", "pytorch"}}) == "config.float8");
  CHECK(field({{"fp8_amax_history", 16}}) == "config.fp8_amax_history");
  CHECK(field({{"float8", "delayed"}, {"dp", 2}, {"zero", 3}}) == "config.float8");
}

TEST_CASE("Float8 refuses what it does not model, naming config.float8") {
  auto field = [](const json& config) {
    json c = {{"profile", "pytorch"}, {"float8", "tensorwise"}};
    c.update(config);
    const json r = evaluate_json({{"preset", "llama-3.1-8b"}, {"config", c}});
    REQUIRE_FALSE(r.value("ok", true));
    return r["error"]["field"].get<std::string>();
  };
  CHECK(field({{"profile", "megatron"}}) == "config.float8");
  CHECK(field({{"dtype", "fp32"}}) == "config.float8");
  CHECK(field({{"tp", 2}}) == "config.float8");
  CHECK(field({{"recompute", "op:torchtitan"}}) == "config.float8");
  CHECK(field({{"float8", "fp4"}}) == "config.float8");
  // MX blocks of 32 in-features: GPT-2's 768 divide, a 100-wide toy does not.
  const json odd = evaluate_json({{"model",
                                   {{"hidden_size", 100},
                                    {"num_attention_heads", 4},
                                    {"intermediate_size", 400},
                                    {"num_hidden_layers", 1},
                                    {"vocab_size", 16},
                                    {"max_position_embeddings", 64},
                                    {"ffn_type", "swiglu"},
                                    {"norm_type", "rmsnorm"},
                                    {"position_embedding", "rope"}}},
                                  {"config", {{"profile", "pytorch"}, {"float8", "mxfp8"}}}});
  CHECK(odd["error"]["field"] == "config.float8");
  const json moe = evaluate_json(
      {{"preset", "mixtral-8x7b"}, {"config", {{"profile", "pytorch"}, {"float8", "tensorwise"}}}});
  CHECK(moe["error"]["field"] == "config.float8");
}

}  // namespace actmem::test

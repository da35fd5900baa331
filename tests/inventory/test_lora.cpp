// LoRA and QLoRA (issue 16): the inventory of a frozen Llama block with peft's adapters against
// the saved tensors measured under torch 2.6 (tests/reference/lora_saved.json from
// tests/reference/measure_lora.py), and the static memory of frozen, adapter and NF4 weights.
#include <fstream>

#include "helpers.hpp"

namespace actmem::test {

namespace {

// The measured block's linears by the names measure_lora.py wraps, as the engine names them.
std::string engine_name(const std::string& t) {
  if (t == "gate") return "gate_proj";
  if (t == "up") return "up_proj";
  if (t == "down") return "down_proj";
  return t;
}

json lora_block(const json& c) {
  json targets = json::array();
  for (const auto& t : c["targets"]) targets.push_back(engine_name(t));
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
  const json config = {{"micro_batch", c["b"]},
                       {"seq", c["s"]},
                       {"dtype", c["dtype"]},
                       {"profile", "pytorch"},
                       {"attention", c["attention"]},
                       {"attention_dropout", 0.0},
                       {"hidden_dropout", 0.0},
                       {"lora_rank", c["r"]},
                       {"lora_targets", targets},
                       {"lora_dropout", c["dropout"]},
                       {"lora_dtype", c["adapter_dtype"]}};
  return json{{"model", model}, {"config", config}};
}

// bitsandbytes quantize_4bit (blocksize 64) with double quantization (absmax blockwise at 256):
// the documented byte count (docs/frameworks.md, LoRA), per weight tensor.
std::uint64_t nf4(std::uint64_t n) {
  const std::uint64_t blocks = (n + 63) / 64;
  return (n + 1) / 2 + blocks + 4 * ((blocks + 255) / 256) + 4 + 64 + 1024;
}

}  // namespace

TEST_CASE(
    "LoRA: a frozen Llama block with peft adapters keeps what torch 2.6 saves "
    "(tests/reference/lora_saved.json)") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/lora_saved.json");
  REQUIRE(in.good());
  const json ref = json::parse(in);
  REQUIRE(ref["configs"].size() == 24);
  for (const auto& c : ref["configs"]) {
    INFO(c["id"].get<std::string>());
    REQUIRE(c["complete"] == true);
    CHECK(u(run(lora_block(c))["per_layer"]["full_bytes"]) == u(c["cuda_bytes"]));
  }
}

TEST_CASE("LoRA on Llama 3.1 8B: frozen weights keep no gradient or state, fp32 adapters do") {
  // peft: every base weight frozen (_mark_only_adapters_as_trainable), adapters upcast to fp32
  // (autocast_adapter_dtype=True): bf16 base 2 B/param; each adapter A [16, in], B [out, 16] with
  // fp32 weight, gradient and AdamW's two fp32 states (4 + 4 + 8 B).
  constexpr std::uint64_t params = 8'030'261'248;
  const std::uint64_t h = 4096, q = 4096, kv = 1024, f = 14336, r = 16;
  const std::uint64_t per_layer = r * (h + q) + r * (h + kv) * 2 + r * (q + h) + r * (h + f) * 3;
  const std::uint64_t adapters = 32 * per_layer;
  auto answer = [](bool qlora) {
    json c = {{"profile", "pytorch"},
              {"attention", "flash"},
              {"seq", 4096},
              {"lora_rank", 16},
              {"lora_targets",
               {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}}};
    if (qlora) c["qlora"] = true;
    return run_preset("llama-3.1-8b", c);
  };
  const json r1 = answer(false);
  const json& pk = r1["peak"];
  CHECK(u(pk["params_bytes"]) == 2 * params + 4 * adapters);
  CHECK(u(pk["grads_bytes"]) == 4 * adapters);
  CHECK(u(pk["optimizer_bytes"]) == 8 * adapters);
  CHECK(u(pk["master_bytes"]) == 0);
  // The frozen embedding, final norm weight and head keep nothing for their weights.
  for (const auto& t : r1["output_layer"]["tensors"])
    CHECK((t["name"] != "lm_head.in" && t["name"] != "final_norm.normed"));
  CHECK(r1["input_layer"]["tensors"].empty());
  // QLoRA: the blocks' linear weights in NF4 with double quantization, tensor by tensor (q, k, v,
  // o, gate, up, down); norms, embedding and head stay bf16.
  const json r2 = answer(true);
  const std::uint64_t linear_elems = h * q + 2 * h * kv + q * h + 3 * h * f;
  const std::uint64_t nf4_layer = nf4(h * q) + 2 * nf4(h * kv) + nf4(q * h) + 3 * nf4(h * f);
  CHECK(u(r2["peak"]["params_bytes"]) ==
        2 * params - 32 * (2 * linear_elems - nf4_layer) + 4 * adapters);
  CHECK(nf4(h * q) == 8'388'608 + 262'144 + 4096 + 4 + 64 + 1024);
  // The same activations: bitsandbytes' MatMul4Bit keeps no input either (ctx.tensors = (None, B)).
  CHECK(u(r2["per_layer"]["full_bytes"]) == u(r1["per_layer"]["full_bytes"]));
}

TEST_CASE("LoRA refusals name the field") {
  auto err = [](const json& config) {
    const json r = evaluate_json({{"preset", "llama-3.1-8b"}, {"config", config}});
    REQUIRE_FALSE(r.value("ok", true));
    return r["error"]["field"];
  };
  const json pt = {{"profile", "pytorch"}};
  auto with = [&](json extra) {
    json c = pt;
    for (auto it = extra.begin(); it != extra.end(); ++it) c[it.key()] = it.value();
    return c;
  };
  CHECK(err(with({{"lora_targets", {"q_proj"}}})) == "config.lora_rank");
  CHECK(err(with({{"lora_rank", 8}})) == "config.lora_targets");
  CHECK(err({{"lora_rank", 8}, {"lora_targets", {"q_proj"}}}) == "config.lora_rank");  // megatron
  // QLoRA under ZeRO-3: NF4 base weights partitioned and gathered, not modelled.
  CHECK(err(with({{"lora_rank", 8},
                  {"lora_targets", {"q_proj"}},
                  {"zero", 3},
                  {"dp", 2},
                  {"qlora", true}})) == "config.qlora");
  // ZeRO-3 with a stage kept gathered would count every weight's gradient (FSDP residency).
  CHECK(err(with({{"lora_rank", 8},
                  {"lora_targets", {"q_proj"}},
                  {"zero", 3},
                  {"dp", 2},
                  {"reshard_after_forward", false}})) == "config.lora_rank");
  CHECK(err(with({{"lora_rank", 8}, {"lora_targets", {"fc1"}}})) == "config.lora_targets");
  CHECK(err(with({{"lora_rank", 8}, {"lora_targets", {"qkv"}}})) == "config.lora_targets[0]");
  CHECK(err(with({{"lora_rank", 8}, {"lora_targets", {"q_proj", "q_proj"}}})) ==
        "config.lora_targets[1]");
}

}  // namespace actmem::test

// The device replay's static tensors (device/stream.cpp allocate_static, allocate_states) are the
// setup's own parameter records: what stays allocated between steps equals the static lines
// (params.cpp static_memory) where every tensor is a multiple of the allocator's 512 B. Hand-worked
// on a small Llama with LoRA (peft: frozen base weights keep no gradient or optimizer state) and
// on PPO's critic (its score head in place of lm_head).
#include <catch2/catch.hpp>

#include "actmem/config/config.hpp"
#include "actmem/device/device.hpp"
#include "actmem/json_io.hpp"
#include "actmem/setup/setup.hpp"
#include "helpers.hpp"

using namespace actmem;

namespace {

// h 256, 4 heads of 64 (kv 4), SwiGLU f 512, RMSNorm, V 128, 2 layers, untied: every parameter
// tensor, adapter and AdamW state below is a multiple of 512 B in bf16 or fp32.
ModelSpec small_llama() {
  std::vector<std::string> w;
  auto m = model_from_json(nlohmann::json{{"model_type", "llama"},
                                          {"vocab_size", 128},
                                          {"hidden_size", 256},
                                          {"intermediate_size", 512},
                                          {"num_hidden_layers", 2},
                                          {"num_attention_heads", 4},
                                          {"num_key_value_heads", 4},
                                          {"max_position_embeddings", 256},
                                          {"tie_word_embeddings", false}},
                           "small-llama", &w);
  REQUIRE(m.ok());
  return m.value();
}

TrainConfig bf16_config() {
  TrainConfig c;
  c.profile = Profile::kHf;
  c.attention = Attention::kFlash;
  c.act_dtype = c.param_dtype = c.grad_dtype = DType::kBf16;
  c.master_weights = false;
  c.seq = 64;
  c.micro_batch = 1;
  return c;
}

// What the allocator holds after the replayed step's zero_grad: the parameters, AdamW's states
// and the cuBLAS workspace.
Bytes held_after_step(const Setup& s) {
  auto d = device_memory(s, nullptr);
  REQUIRE(d.ok());
  return d.value().worst_stage().stats.allocated;
}

}  // namespace

TEST_CASE(
    "device replay, LoRA (peft 5d602fdb): the frozen base weights hold no AdamW state, the "
    "adapters theirs in fp32") {
  TrainConfig c = bf16_config();
  c.lora.rank = 4;
  c.lora.targets = {"q_proj", "v_proj"};
  auto s = make_setup(small_llama(), c);
  REQUIRE(s.ok());
  // Frozen, bf16: per layer q, k, v, o (4 x 256^2), gate, up, down (3 x 256 x 512), two norms
  // (2 x 256); the embedding and the head (2 x 128 x 256) and the final norm (256).
  constexpr Bytes frozen = 2 * (2 * (4 * 65536 + 3 * 131072 + 2 * 256) + 2 * 32768 + 256);
  // Adapters, fp32: q's and v's A [4, 256] and B [256, 4] in each layer.
  constexpr Bytes adapters = 4 * (2 * 2 * (1024 + 1024));
  CHECK(s.value().ranks[0].stat.params_bytes == frozen + adapters);
  // AdamW's exp_avg and exp_avg_sq, fp32, for the adapters only.
  CHECK(s.value().ranks[0].stat.optimizer_bytes == 2 * adapters);
  CHECK(held_after_step(s.value()) == frozen + adapters + 2 * adapters + s.value().workspace);
}

TEST_CASE("device replay, without LoRA: every weight's AdamW states (bf16 here) are held") {
  TrainConfig c = bf16_config();
  c.optimizer_dtype = DType::kBf16;
  auto s = make_setup(small_llama(), c);
  REQUIRE(s.ok());
  constexpr Bytes params = 2 * (2 * (4 * 65536 + 3 * 131072 + 2 * 256) + 2 * 32768 + 256);
  CHECK(s.value().ranks[0].stat.params_bytes == params);
  CHECK(held_after_step(s.value()) == params + 2 * params + s.value().workspace);
}

TEST_CASE(
    "device replay, PPO's critic (loss value): transformers' score head [1, h] and its bias in "
    "place of lm_head") {
  TrainConfig c = bf16_config();
  c.optimizer_dtype = DType::kBf16;
  REQUIRE(parse_loss("value", &c.loss));
  auto s = make_setup(small_llama(), c);
  INFO((s.ok() ? std::string() : s.error().message));
  REQUIRE(s.ok());
  // The layers, the embedding, the final norm and score.weight [1, 256]: multiples of 512 B;
  // score.bias (one bf16 element) and each of its two AdamW states take a 512 B block.
  constexpr Bytes blocks = 2 * (2 * (4 * 65536 + 3 * 131072 + 2 * 256) + 32768 + 256 + 256);
  CHECK(s.value().ranks[0].stat.params_bytes == blocks + 2);
  CHECK(s.value().ranks[0].stat.optimizer_bytes == 2 * (blocks + 2));
  CHECK(held_after_step(s.value()) == 3 * blocks + 3 * 512 + s.value().workspace);
}

TEST_CASE(
    "LoRA under bf16 optimizer states (hf-trainer's zeros_like(p)): fp32 adapters keep fp32 "
    "AdamW states, in the static lines and in the replay") {
  TrainConfig c = bf16_config();
  c.optimizer_dtype = DType::kBf16;
  c.lora.rank = 4;
  c.lora.targets = {"q_proj", "v_proj"};
  auto s = make_setup(small_llama(), c);
  REQUIRE(s.ok());
  constexpr Bytes frozen = 2 * (2 * (4 * 65536 + 3 * 131072 + 2 * 256) + 2 * 32768 + 256);
  constexpr Bytes adapters = 4 * (2 * 2 * (1024 + 1024));
  CHECK(s.value().ranks[0].stat.optimizer_bytes == 2 * adapters);
  CHECK(held_after_step(s.value()) == frozen + adapters + 2 * adapters + s.value().workspace);
  // bf16 adapters keep bf16 states when the optimizer's are bf16, fp32 ones when they are fp32.
  c.lora.dtype = DType::kBf16;
  auto b = make_setup(small_llama(), c);
  REQUIRE(b.ok());
  CHECK(b.value().ranks[0].stat.optimizer_bytes == 2 * (adapters / 2));
  c.optimizer_dtype = DType::kFp32;
  auto f = make_setup(small_llama(), c);
  REQUIRE(f.ok());
  CHECK(f.value().ranks[0].stat.optimizer_bytes == 2 * adapters);
}

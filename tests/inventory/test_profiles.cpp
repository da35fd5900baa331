// Each accounting profile's closed form equals its inventory sum at production sizes.
#include "helpers.hpp"

using namespace actmem::test;

namespace {
std::uint64_t per_layer(const char* preset, const json& cfg) {
  return u(run_preset(preset, cfg)["per_layer"]["activation_bytes"]);
}
}  // namespace

TEST_CASE(
    "textbook (seed 000 Sec. 2 table): 16bsh + 6bs*d_ff + 3bas^2 for SwiGLU, flash swaps 3bas^2 "
    "for 4bas",
    "[profile][textbook]") {
  const std::uint64_t b = 2, s = 4096, h = 8192, a = 64, f = 28672;
  const json eager = {
      {"profile", "textbook"}, {"micro_batch", b}, {"seq", s}, {"attention_dropout", 0.1}};
  CHECK(per_layer("llama-3.1-70b", eager) == 16 * b * s * h + 6 * b * s * f + 3 * b * a * s * s);
  const json flash = {
      {"profile", "textbook"}, {"micro_batch", b}, {"seq", s}, {"attention", "flash"}};
  CHECK(per_layer("llama-3.1-70b", flash) == 16 * b * s * h + 6 * b * s * f + 4 * b * a * s);
  // Without attention dropout the 1-byte mask is gone: 2bas^2 remains.
  const json nodrop = {{"profile", "textbook"}, {"micro_batch", b}, {"seq", s}, {"dropout", 0.0}};
  CHECK(per_layer("llama-3.1-70b", nodrop) == 16 * b * s * h + 6 * b * s * f + 2 * b * a * s * s);
}

TEST_CASE(
    "megatron with flash attention: Korthikanti's linear terms, s^2 replaced by the fp32 lse 4bas "
    "(FlashAttention-2)",
    "[profile][megatron]") {
  const std::uint64_t b = 1, s = 2048, h = 12288, a = 96;
  const json c = {{"profile", "megatron"}, {"attention", "flash"}, {"dropout", 0.1}};
  CHECK(per_layer("megatron-175b", c) == 34 * s * b * h + 4 * b * a * s);
}

TEST_CASE("pytorch profile closed forms (tests/reference/PROFILES.md) at Llama-3.1-8B scale",
          "[profile][pytorch]") {
  const std::uint64_t b = 1, s = 4096, h = 4096, a = 32, f = 14336, e = 2;
  const std::uint64_t bsh = b * s * h, bsf = b * s * f, abss = b * a * s * s, bs = b * s;
  // Llama block, eager: e(10bsh + 4bsf + abss + 2bs).
  CHECK(per_layer("llama-3.1-8b", {{"profile", "pytorch"}, {"seq", s}}) ==
        e * (10 * bsh + 4 * bsf + abss + 2 * bs));
  // Llama block, math SDPA (fp32 upcast, c = 4): e(7bsh + 4bsf + 2bs) + 4(3bsh + abss).
  CHECK(
      per_layer("llama-3.1-8b", {{"profile", "pytorch"}, {"seq", s}, {"attention", "sdpa_math"}}) ==
      e * (7 * bsh + 4 * bsf + 2 * bs) + 4 * (3 * bsh + abss));
  // Llama block, flash: e(10bsh + 4bsf + 2bs) + 4abs + 24.
  CHECK(per_layer("llama-3.1-8b", {{"profile", "pytorch"}, {"seq", s}, {"attention", "flash"}}) ==
        e * (10 * bsh + 4 * bsf + 2 * bs) + 4 * a * bs + 24);
  // hf Llama, eager, bf16: 8bsh + 8bs + e(8bsh + 4bsf) + 4abss + e*abss.
  CHECK(per_layer("llama-3.1-8b", {{"profile", "hf"}, {"seq", s}}) ==
        8 * bsh + 8 * bs + e * (8 * bsh + 4 * bsf) + 4 * abss + e * abss);
}

TEST_CASE("hf GPT-2: gelu_new in Python ops keeps 3 more b*s*f tensors than F.gelu",
          "[profile][hf]") {
  const std::uint64_t b = 4, s = 1024, f = 3072, e = 2;
  const json c = {{"micro_batch", b}, {"seq", s}, {"attention", "flash"}};
  json pt = c, hf = c;
  pt["profile"] = "pytorch";
  hf["profile"] = "hf";
  CHECK(per_layer("gpt2", hf) - per_layer("gpt2", pt) == 3 * e * b * s * f);
}

TEST_CASE(
    "Selective recompute drops exactly the attention core, its working set is one layer's core "
    "(Korthikanti Sec. 5)",
    "[profile][recompute]") {
  const json none = run_preset("megatron-22b", {{"dropout", 0.1}, {"tp", 8}, {"sp", true}});
  const json sel = run_preset(
      "megatron-22b", {{"dropout", 0.1}, {"tp", 8}, {"sp", true}, {"recompute", "selective"}});
  const std::uint64_t b = 1, s = 2048, a = 64, t = 8;
  CHECK(u(none["per_layer"]["activation_bytes"]) - u(sel["per_layer"]["activation_bytes"]) ==
        5 * a * s * s * b / t);
  CHECK(u(sel["activations"]["recompute_working_bytes"]) == 5 * a * s * s * b / t);
}

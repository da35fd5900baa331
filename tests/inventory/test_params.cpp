// Parameter counts against each preset's published count, and static memory (ZeRO, optimizers).
#include "actmem/inventory/params.hpp"
#include "actmem/read/presets.hpp"
#include "helpers.hpp"

using namespace actmem::test;

TEST_CASE(
    "Parameter counts: exact for checkpoints with an exact published count (HF safetensors totals)",
    "[params]") {
  // Exact counts from the checkpoints' safetensors metadata (presets/models/*.json,
  // metadata.published_params).
  const std::pair<const char*, std::uint64_t> exact[] = {
      {"llama-2-7b", 6738415616ULL},     {"llama-2-13b", 13015864320ULL},
      {"llama-2-70b", 68976648192ULL},   {"llama-3.1-8b", 8030261248ULL},
      {"llama-3.1-70b", 70553706496ULL}, {"mistral-7b", 7241732096ULL},
      {"mixtral-8x7b", 46702792704ULL},  {"qwen2.5-7b", 7615616512ULL},
      {"qwen2.5-72b", 72706203648ULL},   {"gpt2", 124439808ULL},
      {"gpt2-medium", 354823168ULL},     {"gpt2-large", 774030080ULL},
      {"gpt2-xl", 1557611200ULL},        {"qwen3-8b", 8190735360ULL},
      {"qwen3-30b-a3b", 30532122624ULL}, {"phi-3-mini-4k", 3821079552ULL},
      {"gemma-2-9b-it", 9241705984ULL},  {"gemma-3-1b-it", 999885952ULL},
      {"falcon-7b", 6921720704ULL},      {"deepseek-v3", 671026419200ULL},
      {"gpt-oss-20b", 20914757184ULL},   {"deepseek-v2-lite", 15706484224ULL},
      {"phi-3.5-moe", 41873153344ULL}};
  for (const auto& [id, n] : exact) {
    INFO(id);
    CHECK(u(run_preset(id, json::object())["model"]["params"]) == n);
  }
}

TEST_CASE("Parameter counts: every model preset within 1% of its published (rounded) count",
          "[params]") {
  int n = 0;
  for (const auto& p : actmem::all_presets()) {
    if (std::string(p.kind) != "models") continue;
    const json r = run_preset(p.id, json::object());
    const double ours = static_cast<double>(u(r["model"]["params"]));
    const double pub = static_cast<double>(u(r["model"]["published_params"]));
    INFO(p.id << ": engine " << ours << " vs published " << pub);
    CHECK(std::abs(ours - pub) / pub < 0.01);
    ++n;
  }
  CHECK(n >= 16);
}

TEST_CASE(
    "Static memory: mixed-precision AdamW is 16 bytes/param (ZeRO paper Sec. 3.1, seed 002 16Psi)",
    "[static]") {
  const json r = run_preset("llama-2-7b", {{"dtype", "bf16"}, {"optimizer", "adamw"}});
  const std::uint64_t P = 6738415616ULL;
  CHECK(u(r["static"]["params_bytes"]) == 2 * P);
  CHECK(u(r["static"]["grads_bytes"]) == 2 * P);
  CHECK(u(r["static"]["master_bytes"]) == 4 * P);
  CHECK(u(r["static"]["optimizer_bytes"]) == 8 * P);
  CHECK(u(r["static"]["total_bytes"]) == 16 * P);
}

TEST_CASE(
    "Static memory: ZeRO stages 1-3 partition optimizer, gradients, parameters over dp "
    "(Rajbhandari et al. 2020, Fig. 1)",
    "[static][zero]") {
  const std::uint64_t P = 6738415616ULL, N = 64;
  auto z = [&](int stage) {
    return run_preset("llama-2-7b", {{"dp", N}, {"zero", stage}})["static"];
  };
  const json z0 = z(0), z1 = z(1), z2 = z(2), z3 = z(3);
  CHECK(u(z0["total_bytes"]) == 16 * P);
  // Stage 1: 2P + 2P + 12P/N; stage 2: 2P + 14P/N; stage 3: 16P/N (each part rounded up).
  CHECK(u(z1["total_bytes"]) == 4 * P + (4 * P + N - 1) / N + (8 * P + N - 1) / N);
  CHECK(u(z2["grads_bytes"]) == (2 * P + N - 1) / N);
  CHECK(u(z2["params_bytes"]) == 2 * P);
  CHECK(u(z3["params_bytes"]) == (2 * P + N - 1) / N);
}

TEST_CASE(
    "Optimizer states: SGD 0, SGD+momentum 4, Adafactor factored (Shazeer & Stern 2018), 8-bit "
    "Adam blockwise (Dettmers et al. 2022)",
    "[static][optimizer]") {
  const std::uint64_t P = 124439808ULL;  // GPT-2 small
  CHECK(u(run_preset("gpt2", {{"optimizer", "sgd"}})["static"]["optimizer_bytes"]) == 0);
  CHECK(u(run_preset("gpt2", {{"optimizer", "sgd_momentum"}})["static"]["optimizer_bytes"]) ==
        4 * P);
  // Adafactor: GPT-2 small's matrices (r + c) x 4 bytes, vectors n x 4.
  const std::uint64_t h = 768, L = 12, V = 50257, T = 1024;
  const std::uint64_t per_layer =
      4 * ((h + 3 * h) + (h + h) + (h + 4 * h) + (4 * h + h)) +  // qkv, o, fc1, fc2
      4 * (3 * h + h + 4 * h + h) +                              // their biases
      4 * (4 * h);                                               // ln1, ln2 weight+bias
  const std::uint64_t adafactor = L * per_layer + 4 * (V + h) + 4 * (T + h) + 4 * 2 * h;
  CHECK(u(run_preset("gpt2", {{"optimizer", "adafactor"}})["static"]["optimizer_bytes"]) ==
        adafactor);
  // 8-bit Adam: the token embedding (V x h) keeps 2 bytes/param + 8 bytes per 2048-block.
  const json a8 = run_preset("gpt2", {{"optimizer", "adam8bit"}})["static"];
  CHECK(u(a8["optimizer_bytes"]) < 3 * P);
  CHECK(u(a8["optimizer_bytes"]) > 2 * P);
}

TEST_CASE(
    "Tensor parallelism shards layer weights by t and the vocabulary by ceil(V/t), norms stay "
    "replicated",
    "[static][tp]") {
  const json r1 = run_preset("llama-3.1-8b", {{"tp", 1}});
  const json r8 = run_preset("llama-3.1-8b", {{"tp", 8}});
  const std::uint64_t h = 4096, L = 32, V = 128256;
  const std::uint64_t norms = L * 2 * h + h;
  // Everything but the norms divides by 8 (V = 128256 is divisible by 8).
  CHECK(u(r8["static"]["params"]) == (u(r1["static"]["params"]) - norms) / 8 + norms);
  CHECK(V % 8 == 0);
}

TEST_CASE(
    "Pipeline parallelism: the first stage holds the embedding, the last the head, tied weights "
    "get a copy",
    "[static][pp]") {
  const json r = run_preset("gpt2", {{"pp", 4}});
  const std::uint64_t h = 768, V = 50257, T = 1024;
  const std::uint64_t layer = 7087872;  // GPT-2 small block: 12h^2 + 13h
  CHECK(u(r["stages"][0]["static"]["params"]) == 3 * layer + V * h + T * h);
  CHECK(u(r["stages"][1]["static"]["params"]) == 3 * layer);
  CHECK(u(r["stages"][3]["static"]["params"]) == 3 * layer + 2 * h + V * h);
}

TEST_CASE("Mixtral EP: routed experts divide by ep, ZeRO for experts over dp/ep", "[static][moe]") {
  const json r1 = run_preset("mixtral-8x7b", {{"dp", 8}});
  const json r8 = run_preset("mixtral-8x7b", {{"dp", 8}, {"ep", 8}});
  const std::uint64_t experts_per_layer = 8ULL * 3 * 4096 * 14336;
  CHECK(u(r1["static"]["params"]) - u(r8["static"]["params"]) ==
        32 * (experts_per_layer - experts_per_layer / 8));
}

// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models":
// Table 2 closed forms against the inventory sum, and Figure 1's per-GPU activations (s=2048, t=8).
#include "helpers.hpp"

using namespace actmem::test;

namespace {

// The paper's four models (Table 3): micro-batch, pipeline size, interleaving.
struct PaperModel {
  const char* preset;
  std::uint64_t a, h, L, b, p, v;
  double no_recompute_gib;  // Figure 1, tensor parallel only
  double sp_selective_gib;  // Figure 1, sequence parallel + selective recompute
};
const PaperModel kModels[] = {
    {"megatron-22b", 64, 6144, 48, 4, 1, 1, 59.25, 9.5625},
    {"megatron-175b", 96, 12288, 96, 1, 8, 3, 66.84375, 12.3515625},
    {"megatron-530b", 128, 20480, 105, 1, 35, 3, 114.0234375, 23.076171875},
    {"megatron-1t", 160, 25600, 128, 1, 64, 1, 131.25, 26.5625},
};

json paper_config(const PaperModel& m, bool sp, const char* recompute) {
  return json{{"micro_batch", m.b},
              {"seq", 2048},
              {"tp", 8},
              {"sp", sp},
              {"pp", m.p},
              {"vpp", m.v},
              {"dtype", "fp16"},
              {"dropout", 0.1},
              {"attention", "eager"},
              {"profile", "megatron"},
              {"recompute", recompute}};
}

}  // namespace

TEST_CASE("Korthikanti 2022 Figure 1: activations per GPU, tensor parallel, no recompute",
          "[korthikanti][figure1]") {
  for (const auto& m : kModels) {
    INFO(m.preset);
    const json r = run_preset(m.preset, paper_config(m, false, "none"));
    // Layer activations of the first stage only (the figure excludes the input/output layers).
    CHECK(u(r["stages"][0]["activations"]["layers_bytes"]) ==
          static_cast<std::uint64_t>(m.no_recompute_gib * kGiB));
  }
}

TEST_CASE("Korthikanti 2022 Figure 1: activations per GPU, sequence parallel + selective recompute",
          "[korthikanti][figure1]") {
  for (const auto& m : kModels) {
    INFO(m.preset);
    const json r = run_preset(m.preset, paper_config(m, true, "selective"));
    CHECK(u(r["stages"][0]["activations"]["layers_bytes"]) ==
          static_cast<std::uint64_t>(m.sp_selective_gib * kGiB));
  }
}

TEST_CASE("Korthikanti 2022 Table 2: closed forms equal the inventory sum",
          "[korthikanti][table2]") {
  for (const auto& m : kModels) {
    INFO(m.preset);
    const std::uint64_t s = 2048, b = m.b, h = m.h, a = m.a, t = 8;
    const std::uint64_t sbh = s * b * h;
    auto per_layer = [&](bool sp, const char* rc, std::uint64_t tp) {
      json c = paper_config(m, sp, rc);
      c["tp"] = tp;
      c["pp"] = 1;
      c["vpp"] = 1;
      const json r = run_preset(m.preset, c);
      CHECK(sum_tensors(r["per_layer"]["tensors"]) == u(r["per_layer"]["activation_bytes"]));
      return u(r["per_layer"]["activation_bytes"]);
    };
    // No parallelism: sbh(34 + 5as/h) = 34sbh + 5as^2b.
    CHECK(per_layer(false, "none", 1) == 34 * sbh + 5 * a * s * s * b);
    // Tensor parallel: sbh(10 + 24/t + 5as/(ht)).
    CHECK(per_layer(false, "none", t) == 10 * sbh + 24 * sbh / t + 5 * a * s * s * b / t);
    // Tensor + sequence parallel: sbh/t (34 + 5as/h).
    CHECK(per_layer(true, "none", t) == 34 * sbh / t + 5 * a * s * s * b / t);
    // Selective recompute with TP+SP: 34sbh/t.
    CHECK(per_layer(true, "selective", t) == 34 * sbh / t);
    // Tensor parallel + selective: sbh(10 + 24/t).
    CHECK(per_layer(false, "selective", t) == 10 * sbh + 24 * sbh / t);
    // Full recompute: 2sbh, divided by t with SP.
    CHECK(per_layer(false, "full", t) == 2 * sbh);
    CHECK(per_layer(true, "full", t) == 2 * sbh / t);
  }
}

TEST_CASE("Korthikanti 2022 Sec. 4.2.3: interleaved first stage holds L(1 + (p-1)/(pv)) layers",
          "[korthikanti][pipeline]") {
  // 175B: L=96, p=8, v=3 -> 96 * (1 + 7/24) = 124 layers' worth; 530B: 105 -> 139.
  const json r175 = run_preset("megatron-175b", paper_config(kModels[1], true, "selective"));
  CHECK(u(r175["stages"][0]["kept_layer_slots"]) == 124);
  const json r530 = run_preset("megatron-530b", paper_config(kModels[2], true, "selective"));
  CHECK(u(r530["stages"][0]["kept_layer_slots"]) == 139);
  // Without interleaving the first stage holds p micro-batches of L/p layers: L layers' worth.
  const json r1t = run_preset("megatron-1t", paper_config(kModels[3], true, "selective"));
  CHECK(u(r1t["stages"][0]["kept_layer_slots"]) == 128);
  // The last 1F1B stage holds one micro-batch.
  CHECK(u(r1t["stages"][63]["kept_layer_slots"]) == 2);
}

TEST_CASE(
    "Korthikanti 2022 Sec. 4.3: output layer 4sbh/t (1 + v/h) with SP, input dropout mask sbhp/t",
    "[korthikanti][io]") {
  const auto& m = kModels[3];  // 1T: p = 64
  const json r = run_preset(m.preset, paper_config(m, true, "selective"));
  const std::uint64_t s = 2048, b = 1, h = 25600, t = 8, p = 64, v = 51200;
  CHECK(u(r["stages"][63]["activations"]["output_layer_bytes"]) ==
        4 * s * b * h / t + 4 * s * b * v / t);
  CHECK(u(r["stages"][0]["activations"]["input_layer_bytes"]) == s * b * h * p / t);
}

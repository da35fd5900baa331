// Mamba-2 and Nemotron-H against transformers 5.17's modules measured on the H200
// (tests/reference/gpu/hf_layers.json; docs/validation.md section 4.4), and the Mamba-2 mixer's
// records under the fused mamba_ssm kernels and Megatron-LM's MambaMixer, from their code
// (docs/formulas.md, "Mamba-2 mixer").
#include <algorithm>
#include <map>

#include "hf_reference.hpp"

using namespace actmem::test;

namespace {

// Each layer kind's bytes (a stack of kinds) or the one kind's (a single-kind model).
std::uint64_t kind_bytes(const json& r, const char* name) {
  if (!r["model"].contains("layer_kinds")) return u(r["per_layer"]["activation_bytes"]);
  for (const json& k : r["model"]["layer_kinds"])
    if (k["name"] == name) return u(k["full_bytes"]);
  FAIL("no layer kind " << name);
  return 0;
}

// The tiny Nemotron-H the script measured (h = 256; Mamba: 8 heads of 32, state 16, 2 groups,
// kernel 4, chunk 32; MLP 512; attention 4 heads of 64, 2 KV heads).
json tiny_nemotron() {
  return {{"model_type", "nemotron_h"},
          {"hidden_size", 256},
          {"intermediate_size", 512},
          {"num_hidden_layers", 4},
          {"hybrid_override_pattern", "M-M*"},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 64},
          {"mamba_num_heads", 8},
          {"mamba_head_dim", 32},
          {"ssm_state_size", 16},
          {"n_groups", 2},
          {"conv_kernel", 4},
          {"chunk_size", 32},
          {"vocab_size", 1024}};
}

json run_tiny(const json& model, const json& config) {
  json c = {{"micro_batch", 2}, {"seq", 64}};
  for (auto it = config.begin(); it != config.end(); ++it) c[it.key()] = it.value();
  return run(json{{"model", model}, {"config", c}});
}

std::string error_of(const json& model, const json& config = json::object()) {
  json c = {{"seq", 64}};
  for (auto it = config.begin(); it != config.end(); ++it) c[it.key()] = it.value();
  const json e = actmem::evaluate_json(json{{"model", model}, {"config", c}});
  REQUIRE(e["ok"] == false);
  return e["error"]["field"].get<std::string>() + " | " + e["error"]["message"].get<std::string>();
}

}  // namespace

TEST_CASE(
    "nemotron_h and mamba2 (hf_layers.json): parameters exact, every Mamba-2, MLP and attention "
    "layer equals its measured transformers layer (eager, SDPA: the attention layer 8 B below "
    "flash, cuDNN's RNG state)",
    "[hf][families][mamba]") {
  const json ref = measured_layers();
  int checked = 0;
  for (const json& row : ref["results"]) {
    const std::string type = row["model_type"];
    if ((type != "nemotron_h" && type != "mamba2") || !row.contains("tensors")) continue;
    const bool eager = row["attn_implementation"] == "eager";
    INFO(type << " " << row["attn_implementation"] << " s=" << row["s"]);
    // The measured Mamba layers ran transformers' PyTorch path (mamba_ssm was not installed), in
    // either attention setting; flash runs the engine's attention layers as the SDPA kernel did.
    const json torch_path = run_row(row, "eager");
    const json sdpa = run_row(row, "flash");
    CHECK(u(torch_path["model"]["params"]) == u(row["parameters"]));
    const json& bm = row["by_module"];
    if (type == "mamba2") {
      for (const char* layer : {"backbone.layers.0", "backbone.layers.1"})
        CHECK(kind_bytes(torch_path, "mamba") == u(bm[layer]));
    } else {
      const std::string pattern = row["config"]["hybrid_override_pattern"];
      for (std::size_t i = 0; i < pattern.size(); ++i) {
        const std::uint64_t measured = u(bm["model.layers." + std::to_string(i)]);
        if (pattern[i] == 'M') CHECK(kind_bytes(torch_path, "mamba") == measured);
        if (pattern[i] == '-') CHECK(kind_bytes(torch_path, "mlp") == measured);
        if (pattern[i] == '*')
          CHECK(kind_bytes(eager ? torch_path : sdpa, "attention") ==
                (eager ? measured : measured + 8));
      }
    }
    ++checked;
  }
  CHECK(checked == 6);
}

TEST_CASE(
    "Mamba-2 mixer, PyTorch path: each record's bytes equal a tensor the measured Mamba2Mixer "
    "saved, one for one (hf_layers.json, mamba2 eager, s = 128)",
    "[hf][mamba]") {
  const json ref = measured_layers();
  for (const json& row : ref["results"]) {
    if (row["model_type"] != "mamba2" || !row.contains("tensors") || row["s"] != 128) continue;
    std::vector<std::uint64_t> measured, engine;
    for (const json& t : row["tensors"])
      if (t["module"].get<std::string>().rfind("backbone.layers.1.", 0) == 0)
        measured.push_back(u(t["bytes"]));
    for (const auto& [name, bytes] : kind_records(run_row(row, "eager"), "mamba"))
      engine.push_back(bytes);
    std::sort(measured.begin(), measured.end());
    std::sort(engine.begin(), engine.end());
    CHECK(engine == measured);
    CHECK(measured.size() == 38);
  }
}

TEST_CASE(
    "Mamba-2 mixer, PyTorch path: the closed form over b, s, H, P, N, G, K, Q equals the "
    "inventory (transformers 5.17 torch_forward, s not a multiple of Q pads to whole chunks)",
    "[mamba][formula]") {
  // The tiny Nemotron-H at b = 2 and s = 80: 3 chunks of 32 (96 padded tokens), bf16.
  const std::uint64_t b = 2, s = 80, h = 256, H = 8, P = 32, N = 16, G = 2, K = 4, Q = 32;
  const std::uint64_t I = H * P, c = (s + Q - 1) / Q, sp = c * Q;
  const std::uint64_t conv = I + 2 * G * N, in = 2 * I + 2 * G * N + H;
  const std::uint64_t norm = 4 * b * s * h + 4 * b * s + 2 * b * s * h;  // the layer's RMSNorm
  const std::uint64_t mixer =
      2 * b * s * h + 4 * H + 2 * b * s * in + 2 * b * conv * (s + K - 1)     // in_proj, A, conv
      + 2 * (2 * b * s * H)                                                   // dt + bias, softplus
      + 4 * b * sp * I + 4 * b * s * I + 2 * (4 * b * s * H) + 4 * H          // x, dt in fp32, A
      + 2 * Q * Q + 4 * b * H * c * Q * Q                                     // masks, L
      + 2 * (4 * b * sp * H * N) + 2 * (4 * b * sp * Q * H) + 4 * b * sp * I  // C, B, G, M, x dt
      + 4 * b * H * sp + 4 * b * sp * H * N                                   // decay, B decay
      + 2 * (c + 1) * (c + 1) + 4 * b * H * (c + 1) * (c + 1)                 // chunk masks, decay
      + 2 * (4 * b * (c + 1) * H * P * N) + 4 * b * H * sp + 4 * b * sp * I   // states, Y_off
      + 4 * b * s * I + 4 * b * sp * I + 3 * (4 * b * s * I) + 4 * b * s * G  // gated norm
      + 2 * b * s * I;                                                        // out_proj
  const json r = run_tiny(tiny_nemotron(), {{"seq", s}, {"profile", "hf"}});
  CHECK(kind_bytes(r, "mamba") == norm + mixer);
}

TEST_CASE(
    "Mamba-2 mixer, fused kernels (flash): zxbcdt, out_x and the per-group rstd, from mamba_ssm's "
    "MambaSplitConv1dScanCombinedFn.save_for_backward, Megatron-LM's MambaMixer keeps the norm and "
    "out_proj inputs besides",
    "[mamba][formula]") {
  const std::uint64_t b = 2, s = 64, h = 256, H = 8, P = 32, N = 16, G = 2;
  const std::uint64_t I = H * P, in = 2 * I + 2 * G * N + H;
  // hf / pytorch with flash: the layer's RMSNorm, in_proj's input, exp(A_log) and A (4H each),
  // zxbcdt, out_x and rstd (b·s·G fp32).
  const json hf = run_tiny(tiny_nemotron(), {{"profile", "hf"}, {"attention", "flash"}});
  const std::uint64_t norm = 4 * b * s * h + 4 * b * s + 2 * b * s * h;
  CHECK(kind_bytes(hf, "mamba") ==
        norm + 2 * b * s * h + 2 * 4 * H + 2 * b * s * in + 2 * b * s * I + 4 * b * s * G);
  // megatron (its Mamba path is the fused one whatever config.attention says): ln1's and
  // in_proj's inputs, the contiguous zxBCdt, out_x, the norm's input and out_proj's input.
  for (const char* att : {"eager", "flash"}) {
    const json mg = run_tiny(tiny_nemotron(), {{"attention", att}});
    CHECK(kind_bytes(mg, "mamba") == 2 * (2 * b * s * h) + 2 * b * s * in + 3 * (2 * b * s * I));
  }
  // Under tp = 2 (Megatron-LM: heads and groups per rank): every per-channel tensor halves.
  const json tp2 = run_tiny(tiny_nemotron(), {{"tp", 2}});
  CHECK(kind_bytes(tp2, "mamba") ==
        2 * (2 * b * s * h) + 2 * b * s * (in / 2) + 3 * (2 * b * s * (I / 2)));
}

TEST_CASE(
    "nemotron_h's hybrid_override_pattern places Mamba-2, MLP and attention layers, each kind "
    "has the parameters its transformers module holds",
    "[hf][mamba]") {
  const json r = run_tiny(tiny_nemotron(), json::object());
  const json& kinds = r["model"]["layer_kinds"];
  REQUIRE(kinds.size() == 3);
  CHECK(kinds[0]["name"] == "mamba");
  CHECK(kinds[0]["mixer"] == "mamba2");
  CHECK(kinds[0]["ffn_type"] == "none");
  CHECK(kinds[0]["mamba"]["num_heads"] == 8);
  CHECK(kinds[1]["name"] == "mlp");
  CHECK(kinds[1]["mixer"] == "none");
  CHECK(kinds[1]["ffn_type"] == "relu2");
  CHECK(kinds[2]["name"] == "attention");
  CHECK(kinds[2]["ffn_type"] == "none");
  const json& stack = r["model"]["layer_stack"];
  REQUIRE(stack.size() == 4);
  CHECK(stack[3]["kind"] == "attention");
  // Parameters by hand (modeling_nemotron_h.py): a Mamba layer is its norm, in_proj h x (2I + 2GN
  // + H), conv1d (I + 2GN) x K plus bias, dt_bias, A_log and D, the gated norm's I and out_proj
  // I x h; an MLP layer its norm and up/down h x f; attention its norm, q/k/v/o; then the
  // embedding, the final norm and the untied head.
  const std::uint64_t mamba = 256 + 256 * 584 + 320 * 4 + 320 + 3 * 8 + 256 + 256 * 256;
  const std::uint64_t mlp = 256 + 2 * 256 * 512;
  const std::uint64_t attn = 256 + 256 * (256 + 2 * 128) + 256 * 256;
  CHECK(u(r["model"]["params"]) == 2 * mamba + mlp + attn + 1024 * 256 + 256 + 1024 * 256);
  // No KV cache in the Mamba or MLP layers: the one attention layer's 2 x 2 KV heads x 64.
  CHECK(u(r["kv_cache"]["total_bytes"]) == 2 * 1 * 2 * 2 * 64 * 64 * 2);
}

TEST_CASE(
    "Mamba-2 and Nemotron-H configs: what is not modelled is refused by name (MoE layers, other "
    "activations, dropout, mismatched widths, the textbook profile, context parallelism)",
    "[hf][mamba][errors]") {
  json m = tiny_nemotron();
  m["hybrid_override_pattern"] = "M-X*";
  CHECK(error_of(m) ==
        "model.hybrid_override_pattern | model.hybrid_override_pattern: letter 2 'X' is not a "
        "layer type; allowed: M (Mamba-2), * (attention), - (MLP), E (MoE)");
  m["hybrid_override_pattern"] = "M-E*";
  m["n_routed_experts"] = 8;
  m["moe_latent_size"] = 64;
  CHECK(error_of(m) ==
        "model.moe_latent_size | model.moe_latent_size: 64 (the experts' latent "
        "projections) is not modelled; allowed: null");
  m.erase("moe_latent_size");
  m["num_nextn_predict_layers"] = 1;
  CHECK(error_of(m) ==
        "model.num_nextn_predict_layers | model.num_nextn_predict_layers: 1 (nemotron_h's "
        "multi-token-prediction layers) is not modelled; allowed: 0");
  m.erase("num_nextn_predict_layers");
  m["num_experts_per_tok"] = 9;
  CHECK(error_of(m) ==
        "model.num_experts_per_tok | model.num_experts_per_tok: 9 must be between "
        "1 and n_routed_experts=8");
  // Characters, not bytes: an em dash is one (wrong) letter, named whole.
  m = tiny_nemotron();
  m["hybrid_override_pattern"] = std::string("M\xe2\x80\x94M*");
  CHECK(error_of(m) ==
        "model.hybrid_override_pattern | model.hybrid_override_pattern: letter 1 \"\\u2014\" "
        "is not a layer type; allowed: M (Mamba-2), * (attention), - (MLP), E (MoE)");
  // The older names NemotronHConfig still takes (mamba_conv_bias for use_conv_bias), and the
  // layer list transformers prefers to the pattern (layers_block_type).
  m = tiny_nemotron();
  m["mamba_conv_bias"] = false;
  const json no_bias = run_tiny(m, json::object());
  CHECK(u(no_bias["model"]["params"]) == 1418160 - 2 * 320);
  m["use_conv_bias"] = true;
  CHECK(error_of(m) ==
        "model.mamba_conv_bias | model.mamba_conv_bias: false conflicts with "
        "model.use_conv_bias: true; give one");
  m = tiny_nemotron();
  m.erase("hybrid_override_pattern");
  m["layers_block_type"] = {"linear_attention", "mlp", "mamba", "full_attention"};
  CHECK(u(run_tiny(m, json::object())["model"]["params"]) == 1418160);
  m["hybrid_override_pattern"] = "M--*";
  CHECK(error_of(m) ==
        "model.hybrid_override_pattern | model.hybrid_override_pattern: \"M--*\" "
        "conflicts with model.layers_block_type (\"M-M*\" as letters); give one");
  m = tiny_nemotron();
  m["use_mamba_kernels"] = false;
  CHECK(error_of(m) ==
        "model.use_mamba_kernels | model.use_mamba_kernels: false is config.attention's choice "
        "here (eager or sdpa_math: transformers' PyTorch path; flash: the fused kernels); "
        "allowed: true");
  m = tiny_nemotron();
  m["chunk_size"] = 1 << 20;
  CHECK(error_of(m) ==
        "model.chunk_size | model.chunk_size: 1048576 is larger than the supported "
        "65536");
  // num_hidden_layers follows the pattern (NemotronHConfig derives it), with a warning.
  m = tiny_nemotron();
  m["num_hidden_layers"] = 7;
  const json warned = run_tiny(m, json::object());
  CHECK(u(warned["model"]["layers"]) == 4);
  CHECK(warned["warnings"][0] ==
        "model.num_hidden_layers: 7 differs from the layer list's 4 layers; the list is used "
        "(NemotronHConfig derives the count from it)");
  m = tiny_nemotron();
  m["num_heads"] = 8;
  CHECK(error_of(m) ==
        "model.num_heads | model.num_heads: not read for model_type nemotron_h; this model reads "
        "mamba_num_heads");
  m = tiny_nemotron();
  m["mlp_hidden_act"] = "silu";
  CHECK(error_of(m) ==
        "model.mlp_hidden_act | model.mlp_hidden_act: 'silu' is not supported for "
        "nemotron_h; allowed: relu2");
  m = tiny_nemotron();
  m["hidden_dropout"] = 0.1;
  CHECK(error_of(m) ==
        "model.hidden_dropout | model.hidden_dropout: 0.1 is not modelled for "
        "nemotron_h; allowed: 0");
  m = tiny_nemotron();
  m["n_groups"] = 3;
  CHECK(error_of(m) ==
        "model.n_groups | model.n_groups: 3 does not divide mamba_num_heads=8 "
        "(each group's B and C serve whole heads); allowed: 1, 2, 4, 8");
  CHECK(error_of(tiny_nemotron(), {{"profile", "textbook"}}) ==
        "config.profile | config.profile: textbook has no rule for Mamba-2 layers (the seed has "
        "none); allowed: megatron, pytorch, hf");
  CHECK(error_of(tiny_nemotron(), {{"cp", 2}}) ==
        "config.cp | config.cp: cp=2 with Mamba-2 layers is not modelled (Megatron-LM shards "
        "their heads over cp by all-to-all); allowed: 1");
  CHECK(error_of(tiny_nemotron(), {{"tp", 4}}) ==
        "config.tp | config.tp: tp=4 does not divide the Mamba layers' n_groups=2 (layer kind "
        "'mamba'); allowed: 1, 2");
  const json mamba2 = {{"model_type", "mamba2"}, {"hidden_size", 256}, {"num_hidden_layers", 2},
                       {"num_heads", 8},         {"head_dim", 32},     {"state_size", 16},
                       {"n_groups", 2},          {"vocab_size", 1024}};
  CHECK(error_of(mamba2) ==
        "model.num_heads | model.num_heads: num_heads x head_dim = 8 x 32 must equal expand x "
        "hidden_size = 2 x 256 (Mamba2Mixer reshapes into it)");
}

TEST_CASE(
    "nemotron_h with MoE layers (Nemotron 3 Nano, tests/data/hf): 31,577,940,288 parameters, the "
    "card's 31.6B, each 'E' layer keeps the Megatron-style records of k routed copies and the "
    "shared expert, squared ReLU without a gate",
    "[hf][mamba][moe]") {
  const json nano = actmem::evaluate_json(
      json{{"model_text", source_file("tests/data/hf/nemotron-3-nano-30b-a3b.config.json")},
           {"config", {{"seq", 4096}}}});
  REQUIRE(nano["ok"] == true);
  CHECK(u(nano["model"]["params"]) == 31577940288ULL);
  // The tiny Nemotron-H with its MLP layer replaced by an MoE layer: 8 experts of 128, top-2,
  // one shared expert of 256, 2 groups keeping 1.
  json m = tiny_nemotron();
  m["hybrid_override_pattern"] = "MEM*";
  m["n_routed_experts"] = 8;
  m["num_experts_per_tok"] = 2;
  m["moe_intermediate_size"] = 128;
  m["moe_shared_expert_intermediate_size"] = 256;
  m["n_group"] = 2;
  m["topk_group"] = 1;
  const json r = run_tiny(m, json::object());
  const std::uint64_t b = 2, s = 64, h = 256, E = 8, k = 2, fe = 128, fs = 256;
  // megatron: ln2's input, the router's input (2bsh each), the fp32 router probabilities, each
  // routed copy's input, activation (relu's output), second-linear input and output, the shared
  // expert's activation and second-linear input (build_moe_mlp).
  CHECK(kind_bytes(r, "moe") == 2 * (2 * b * s * h) + 4 * b * s * E +
                                    2 * k * b * s * (h + fe + fe + h) + 2 * b * s * (fs + fs));
  CHECK(kind_records(r, "moe").count("moe.act_in") == 1);
  CHECK(kind_records(r, "moe").count("mlp.fc1_in") == 0);
  // Parameters (NemotronHMoE): the norm, the router E x h and its score-correction bias E, the
  // experts' up and down E x 2 x h x f_e, the shared expert's 2 x h x f_s.
  const std::uint64_t moe = h + E * h + E + E * 2 * h * fe + 2 * h * fs;
  const std::uint64_t mamba = 256 + 256 * 584 + 320 * 4 + 320 + 3 * 8 + 256 + 256 * 256;
  const std::uint64_t attn = 256 + 256 * (256 + 2 * 128) + 256 * 256;
  CHECK(u(r["model"]["params"]) == 2 * mamba + moe + attn + 1024 * 256 + 256 + 1024 * 256);
}

TEST_CASE(
    "Mamba-2 layer, PyTorch path, on PyTorch 2.6 (CPU, tests/reference/mamba_cpu.json, the "
    "torch_forward op sequence re-implemented): fp32 exact at s = 64, 80 (padded to 3 chunks) "
    "and 128, bf16 exact but for the dt PyTorch 2.11 keeps twice in fp32 (6·b·s·H)",
    "[hf][mamba]") {
  const json ref = json::parse(source_file("tests/reference/mamba_cpu.json"));
  int checked = 0;
  for (const json& row : ref["results"]) {
    const bool nemotron = row["model_type"] == "nemotron_h";
    const json m =
        nemotron ? tiny_nemotron()
                 : json{{"model_type", "mamba2"}, {"hidden_size", 256}, {"num_hidden_layers", 2},
                        {"num_heads", 8},         {"head_dim", 64},     {"state_size", 16},
                        {"n_groups", 2},          {"conv_kernel", 4},   {"chunk_size", 32},
                        {"vocab_size", 1024}};
    const bool fp32 = row["dtype"] == "float32";
    const std::uint64_t b = u(row["b"]), s = u(row["s"]), H = 8;
    INFO(row["model_type"] << " " << row["dtype"] << " s=" << s);
    const json r = run_tiny(
        m, {{"seq", s}, {"micro_batch", b}, {"profile", "hf"}, {"dtype", fp32 ? "fp32" : "bf16"}});
    CHECK(kind_bytes(r, "mamba") == u(row["saved_bytes"]) + (fp32 ? 0 : 6 * b * s * H));
    ++checked;
  }
  CHECK(checked == 12);
}

TEST_CASE(
    "Layer kinds without attention (review, fifth session): tp and ep checks still apply to their "
    "experts, full recompute counts an MLP-only layer's ln2 input as the checkpoint itself, "
    "Mamba2's fp32 residual stream makes the hf checkpoint fp32, n_shared_experts is ignored as "
    "NemotronHMoE ignores it",
    "[hf][mamba]") {
  const json moe = {{"model_type", "nemotron_h"},
                    {"hidden_size", 256},
                    {"vocab_size", 512},
                    {"hybrid_override_pattern", "EE"},
                    {"n_routed_experts", 4},
                    {"num_experts_per_tok", 2},
                    {"moe_intermediate_size", 128},
                    {"moe_shared_expert_intermediate_size", 256}};
  CHECK(error_of(moe, {{"tp", 3}})
            .rfind("config.tp | config.tp: tp=3 does not divide the expert "
                   "width 128",
                   0) == 0);
  CHECK(error_of(moe, {{"ep", 3}, {"dp", 3}})
            .rfind("config.ep | config.ep: ep=3 does not divide", 0) == 0);
  json shared = moe;
  shared["n_shared_experts"] = 2;
  const json one = run_tiny(moe, json::object()), two = run_tiny(shared, json::object());
  CHECK(u(two["model"]["params"]) == u(one["model"]["params"]));
  CHECK(two["warnings"][0] ==
        "model.n_shared_experts: 2 ignored (NemotronHMoE builds one shared expert of "
        "moe_shared_expert_intermediate_size)");
  // transformers writes mtp_layers_block_type into every NemotronHConfig it saves.
  json saved = moe;
  saved["num_nextn_predict_layers"] = 0;
  saved["mtp_layers_block_type"] = {"full_attention", "moe"};
  CHECK(u(run_tiny(saved, json::object())["model"]["params"]) == u(one["model"]["params"]));
  // MLP-only layers under full recompute (megatron, b = 1, s = 32): each keeps its input (ln2's
  // input, 2bsh) and regenerates the rest: ln2.in + fc1_in + relu_out + fc2_in - the input.
  const json mlp = {{"model_type", "nemotron_h"},
                    {"hidden_size", 256},
                    {"vocab_size", 512},
                    {"hybrid_override_pattern", "--"},
                    {"intermediate_size", 512}};
  const json full = run_tiny(mlp, {{"micro_batch", 1}, {"seq", 32}, {"recompute", "full"}});
  const std::uint64_t bsh = 32 * 256, bsf = 32 * 512;
  CHECK(u(full["activations"]["recompute_working_bytes"]) == 2 * bsh + 2 * bsf + 2 * bsf);
  // Mamba2 under hf: the blocks read the fp32 residual stream, the checkpoint is fp32.
  const json m2 = {{"model_type", "mamba2"}, {"hidden_size", 256}, {"num_hidden_layers", 2},
                   {"num_heads", 8},         {"head_dim", 64},     {"state_size", 16},
                   {"n_groups", 2},          {"vocab_size", 1024}};
  const json hf = run_tiny(m2, {{"profile", "hf"}, {"recompute", "full"}});
  const json mg = run_tiny(m2, {{"recompute", "full"}});
  CHECK(u(hf["per_layer"]["activation_bytes"]) == 4 * 2 * 64 * 256);
  CHECK(u(mg["per_layer"]["activation_bytes"]) == 2 * 2 * 64 * 256);
}

TEST_CASE("explain names layer 0's kind and explains every other kind of a stack by its records",
          "[mamba][explain]") {
  const json r = run_tiny(tiny_nemotron(), json::object());
  std::vector<std::uint64_t> explained;
  for (const json& x : r["explain"]) {
    if (x["id"] == "per_layer.activation_bytes")
      CHECK(x["title"] == "What layer 0 (kind 'mamba') keeps for backward (none)");
    if (x["id"] == "model.layer_kinds.full_bytes") explained.push_back(u(x["bytes"]));
  }
  const json& kinds = r["model"]["layer_kinds"];
  CHECK(explained ==
        std::vector<std::uint64_t>{u(kinds[1]["full_bytes"]), u(kinds[2]["full_bytes"])});
}

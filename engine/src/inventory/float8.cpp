// Float8 training's records (docs/frameworks.md, "Float8"): torchao's Float8Linear under
// tensorwise dynamic scaling casts each linear's input and weight to float8 and saves the casts
// (each an fp8 tensor and a 0-d fp32 scale) for its backward, not the high-precision input; the
// rowwise recipe saves the high-precision input and weight and changes no record; the prototype
// MX linear saves both as MX tensors (e4m3 elements, an e8m0 scale per block of 32).
// Measured: tests/reference/float8_saved.json (tests/reference/measure_float8.py, torch 2.6).
#include "inventory/builder.hpp"

namespace actmem::detail {

namespace {

constexpr const char* kTorchao =
    "pytorch/ao eab345c2 torchao/float8/float8_linear.py: manual_float8_matmul_with_args_in_float8 "
    "ctx.save_for_backward(input_fp8, weight_fp8_t); measured: tests/reference/float8_saved.json";
constexpr const char* kMx =
    "pytorch/ao eab345c2 torchao/prototype/mx_formats/mx_linear.py MXLinear.forward: "
    "F.linear(MXTensor.to_mx(x), MXTensor.to_mx(weight)) saves both MX tensors (mx_tensor.py: "
    "_data e4m3, _scale_e8m0 one byte per 32 elements); measured: tests/reference/"
    "float8_saved.json";
constexpr const char* kTe =
    "TransformerEngine v1.13 module/layernorm_linear.py and linear.py _Linear.forward: the fp8 "
    "ln_out / inputmat saved for the weight gradient (Megatron-LM core_v0.10.0 TE layer specs); "
    "not measured";
// MX block size (torchao mx_formats constants.py; MXLinear.from_float(mod, e4m3, 32)).
constexpr std::uint64_t kMxBlock = 32;

// One linear: its records' ids (literals: records keep views of them) and its weight [out, in].
struct Linear {
  const char* in_fp8;
  const char* in_scale;
  const char* weight_fp8;
  const char* weight_scale;
  Dim out;
  Dim in;
  Dim in_blocks;  // MX: in / 32 scales per row
};

// One high-precision input record and the linears that read it, in the forward's order.
struct Reader {
  const char* input;
  Linear linears[3];
  int n;
};

}  // namespace

void apply_float8(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g, Profile profile,
                  LayerInventory& inv, Checked& ck) {
  // TransformerEngine under Megatron-LM (delayed scaling): the qkv and fc1 LayerNormLinears keep
  // their norm output in fp8, the proj and fc2 Linears their input in fp8, in place of the bf16
  // copies; the activation function and the attention core keep bf16 (TE v1.13 module/
  // linear.py, layernorm_linear.py; Megatron-LM core_v0.10.0 TE specs; fp8_dpa off).
  if (g.float8 == Float8::kDelayed) {
    if (profile != Profile::kMegatron) return;
    std::vector<TensorRecord> added;
    RecordBuilder rb(&added, &ck);
    for (TensorRecord& t : inv.tensors) {
      const bool proj = t.id == "attn.proj_in";
      if (!(proj || t.id == "attn.qkv_in" || t.id == "mlp.fc1_in" || t.id == "mlp.fc2_in"))
        continue;
      // Flash attention keeps its output, attn.proj_in's storage, in bf16 besides.
      if (proj && g.flash) {
        rb.add("attn.proj_in_fp8", t.shape, DType::kFp8, "linear weight gradient (fp8 GEMM)",
               "TERowParallelLinear's input cast to fp8", kTe);
        continue;
      }
      t.bytes /= dtype_bytes(t.dtype);
      t.dtype = DType::kFp8;
      t.source = kTe;
    }
    inv.tensors.insert(inv.tensors.end(), added.begin(), added.end());
    return;
  }
  // The rowwise recipe saves input_hp and weight_hp_t (float8_linear.py
  // manual_float8_matmul_with_args_in_hp): the bf16 records stand as they are.
  if (g.float8 == Float8::kNone || g.float8 == Float8::kRowwise ||
      !op_policy_supported(m, k, profile))
    return;
  const bool mx = g.float8 == Float8::kMxfp8;
  const Dim qd{"a·d", g.a.value * g.d.value};
  const Dim kd{"kv·d", g.kv.value * g.d.value};
  const Dim vd{"kv·dv", g.kv.value * g.dv.value};
  const Dim od{"a·dv", g.a.value * g.dv.value};
  // validate.cpp checks the in-features divide into MX blocks.
  const Dim hb{"h/32", g.h.value / kMxBlock};
  const Dim ob{"a·dv/32", od.value / kMxBlock};
  const Dim fb{"f/32", g.f.value / kMxBlock};
  const bool gated = is_gated(k.ffn);
  const Reader readers[] = {
      {"attn.qkv_in",
       {{"attn.q_proj.in_fp8", "attn.q_proj.in_scale", "attn.q_proj.weight_fp8",
         "attn.q_proj.weight_scale", qd, g.h, hb},
        {"attn.k_proj.in_fp8", "attn.k_proj.in_scale", "attn.k_proj.weight_fp8",
         "attn.k_proj.weight_scale", kd, g.h, hb},
        {"attn.v_proj.in_fp8", "attn.v_proj.in_scale", "attn.v_proj.weight_fp8",
         "attn.v_proj.weight_scale", vd, g.h, hb}},
       3},
      {"attn.proj_in",
       {{"attn.o_proj.in_fp8", "attn.o_proj.in_scale", "attn.o_proj.weight_fp8",
         "attn.o_proj.weight_scale", g.h, od, ob}},
       1},
      gated ? Reader{"mlp.fc1_in",
                     {{"mlp.gate_proj.in_fp8", "mlp.gate_proj.in_scale", "mlp.gate_proj.weight_fp8",
                       "mlp.gate_proj.weight_scale", g.f, g.h, hb},
                      {"mlp.up_proj.in_fp8", "mlp.up_proj.in_scale", "mlp.up_proj.weight_fp8",
                       "mlp.up_proj.weight_scale", g.f, g.h, hb}},
                     2}
            : Reader{"mlp.fc1_in",
                     {{"mlp.fc1.in_fp8", "mlp.fc1.in_scale", "mlp.fc1.weight_fp8",
                       "mlp.fc1.weight_scale", g.f, g.h, hb}},
                     1},
      gated ? Reader{"mlp.fc2_in",
                     {{"mlp.down_proj.in_fp8", "mlp.down_proj.in_scale", "mlp.down_proj.weight_fp8",
                       "mlp.down_proj.weight_scale", g.h, g.f, fb}},
                     1}
            : Reader{"mlp.fc2_in",
                     {{"mlp.fc2.in_fp8", "mlp.fc2.in_scale", "mlp.fc2.weight_fp8",
                       "mlp.fc2.weight_scale", g.h, g.f, fb}},
                     1},
  };
  const Dim one{"1", 1};
  std::vector<TensorRecord> added;
  RecordBuilder rb(&added, &ck);
  for (const Reader& r : readers) {
    auto it = inv.tensors.begin();
    while (it != inv.tensors.end() && it->id != r.input) ++it;
    if (it == inv.tensors.end()) continue;
    const Shape shape = it->shape;
    // Each Float8Linear casts its own input (cast_input_to_float8), so linears sharing an input
    // keep one float8 copy each.
    for (int i = 0; i < r.n; ++i) {
      const Linear& l = r.linears[i];
      const char* src = mx ? kMx : kTorchao;
      rb.add(l.in_fp8, shape, DType::kFp8, "linear weight gradient (float8 mm)",
             mx ? "the linear's input cast to MX: e4m3 elements"
                : "the linear's input cast to float8 e4m3 (tensorwise dynamic scale)",
             src);
      if (mx)
        rb.add(l.in_scale, {shape[0], shape[1], l.in_blocks}, DType::kInt8,
               "linear weight gradient (float8 mm)",
               "the MX input's e8m0 scales (uint8), one per 32 in-features", src);
      else
        rb.add(l.in_scale, {one}, DType::kFp32, "linear weight gradient (float8 mm)",
               "the input cast's scale: one fp32 amax-derived number", src);
      // The weight is cast on every forward and its transpose saved; with FSDP the cast is of
      // the gathered bf16 weight, a new unsharded float8 tensor (torchao's config.py comment on
      // force_recompute_fp8_weight_in_bwd; measured unchanged by that flag in eager).
      // With FSDP's float8 all-gather the weight is already e4m3 and the saved transpose is a view
      // of FSDP's gathered buffer (float8_linear.py cast_weight_to_float8_t: weight.t()).
      if (!g.float8_all_gather)
        rb.add(l.weight_fp8, {l.out, l.in}, DType::kFp8, "linear input gradient (float8 mm)",
               mx ? "the weight cast to MX: e4m3 elements"
                  : "the weight cast to float8 e4m3, saved transposed",
               src);
      if (mx)
        rb.add(l.weight_scale, {l.out, l.in_blocks}, DType::kInt8,
               "linear input gradient (float8 mm)",
               "the MX weight's e8m0 scales (uint8), one per 32 in-features", src);
      else
        rb.add(l.weight_scale, {one}, DType::kFp32, "linear input gradient (float8 mm)",
               "the weight cast's scale", src);
    }
    // No backward reads the high-precision input any more, except flash attention's saved output
    // (attn.proj_in's storage).
    const bool flash_out = std::string_view(r.input) == "attn.proj_in" && g.flash &&
                           !has_record(inv.tensors, "attn.out");
    if (!flash_out) inv.tensors.erase(it);
  }
  inv.tensors.insert(inv.tensors.end(), added.begin(), added.end());
}

}  // namespace actmem::detail

// Dispatches to the profile builders and applies recompute policies to an inventory.

#include "inventory/builder.hpp"

namespace actmem {

Result<LayerInventory> build_inventory(const ModelSpec& m, const LayerKind& k,
                                       const LayerGeometry& g, Profile profile) {
  LayerInventory inv;
  inv.tensors.reserve(32);  // the largest profile's layer has fewer records
  Checked ck;
  detail::RecordBuilder rb(&inv.tensors, &ck);
  switch (profile) {
    case Profile::kMegatron:
      detail::build_megatron(m, k, g, rb);
      break;
    case Profile::kTextbook:
      detail::build_textbook(m, k, g, rb);
      break;
    case Profile::kPytorch:
      detail::build_pytorch(m, k, g, rb, false);
      break;
    case Profile::kHf:
      detail::build_pytorch(m, k, g, rb, true);
      break;
  }
  std::vector<TensorRecord> cp;
  detail::RecordBuilder cb(&cp, &ck);
  // Full recompute keeps only each layer's input: 2sbh, divided by t under SP (Korthikanti et
  // al. 2022, Table 2, "full" row). Mamba2's residual_in_fp32 stream (hf) makes the block inputs
  // fp32 after the first layer (Mamba2Block: residual.to(float32) + output).
  const bool fp32_stream = profile == Profile::kHf && m.hf_modules == HfModules::kMamba2;
  cb.add("layer.in", {g.b, g.s_rep, g.h}, fp32_stream ? DType::kFp32 : g.act,
         "recompute of the whole layer in backward",
         fp32_stream ? "the checkpoint from which the layer's forward is replayed (the fp32 "
                       "residual stream)"
                     : "the checkpoint from which the layer's forward is replayed",
         "Chen et al. 2016; Korthikanti et al. 2022, Table 2 (full recompute: 2sbh)");
  inv.checkpoint = cp.front();
  detail::RecordBuilder in(&inv.input_layer, &ck);
  detail::RecordBuilder out(&inv.output_layer, &ck);
  detail::build_io_layers(m, g, profile, in, out);
  inv.backward_grads = detail::build_backward_grads(m, k, g, ck);
  detail::add_weight_grad_store(m, k, g, inv, ck);
  detail::apply_lora(m, k, g, profile, inv, ck);
  detail::apply_lora_io(g, inv);
  detail::apply_float8(m, k, g, profile, inv, ck);
  detail::add_op_outputs(m, k, g, profile, inv, ck);
  if (ck.overflowed())
    return make_error("overflow", "config.seq",
                      "config.seq: tensor '" + ck.field() +
                          "' would hold more than 2^63-1 bytes at micro_batch=" +
                          std::to_string(g.b.value) + ", seq=" + std::to_string(g.s_keys.value) +
                          "; reduce config.seq or config.micro_batch");
  return inv;
}

std::string shape_symbol(const Shape& shape) {
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += "·";
    const std::string sym(shape[i].sym);
    // Parenthesize compound symbols so "2·b·s/t·h" reads unambiguously.
    bool compound = sym.find_first_of("/·") != std::string::npos && sym.front() != '(' &&
                    sym.find("⌈") == std::string::npos;
    s += compound && shape.size() > 1 ? "(" + sym + ")" : sym;
  }
  return s;
}

std::string shape_values(const Shape& shape) {
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i)
    out += (i ? "·" : "") + std::to_string(shape[i].value);
  return out;
}

}  // namespace actmem

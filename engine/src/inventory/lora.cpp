// LoRA fine-tuning's records (docs/frameworks.md, "LoRA"): with every base weight frozen, autograd
// keeps no input for a frozen linear's or norm's weight gradient; each targeted linear's adapters
// keep their own input (a copy in the adapters' dtype, or its dropout) and A's output.
// Measured: tests/reference/lora_saved.json (tests/reference/measure_lora.py, torch 2.6).
#include "inventory/builder.hpp"

namespace actmem::detail {

namespace {

constexpr const char* kPeft =
    "huggingface/peft 5d602fdb src/peft/tuners/lora/layer.py Linear.forward L1049-1074: "
    "lora_B(lora_A(dropout(x.to(lora_A.weight.dtype)))); measured: tests/reference/lora_saved.json";

// One base input record and the linears that read it, in the forward's order.
struct Reader {
  const char* input;  // the record the base linear saves for its weight gradient
  const char* names[3];
  const char* adapter_in[3];
  const char* adapter_mask[3];
  const char* adapter_out[3];
};

bool drop(std::vector<TensorRecord>& v, std::string_view id) {
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it->id == id) {
      v.erase(it);
      return true;
    }
  return false;
}

}  // namespace

void apply_lora(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g, Profile profile,
                LayerInventory& inv, Checked& ck) {
  const Lora& l = g.lora;
  // LoRA is modelled where op outputs are named: the same dense layers (validate.cpp).
  if (!l.on() || !op_policy_supported(m, k, profile)) return;
  // Frozen norm weights: the multiply by the weight keeps nothing for it.
  drop(inv.tensors, "ln1.normed");
  drop(inv.tensors, "ln2.normed");
  const bool gated = is_gated(k.ffn);
  const Reader readers[] = {
      {"attn.qkv_in",
       {"q_proj", "k_proj", "v_proj"},
       {"lora.q_proj.in", "lora.k_proj.in", "lora.v_proj.in"},
       {"lora.q_proj.dropout_mask", "lora.k_proj.dropout_mask", "lora.v_proj.dropout_mask"},
       {"lora.q_proj.a_out", "lora.k_proj.a_out", "lora.v_proj.a_out"}},
      {"attn.proj_in",
       {"o_proj"},
       {"lora.o_proj.in"},
       {"lora.o_proj.dropout_mask"},
       {"lora.o_proj.a_out"}},
      gated ? Reader{"mlp.fc1_in",
                     {"gate_proj", "up_proj"},
                     {"lora.gate_proj.in", "lora.up_proj.in"},
                     {"lora.gate_proj.dropout_mask", "lora.up_proj.dropout_mask"},
                     {"lora.gate_proj.a_out", "lora.up_proj.a_out"}}
            : Reader{"mlp.fc1_in",
                     {"fc1"},
                     {"lora.fc1.in"},
                     {"lora.fc1.dropout_mask"},
                     {"lora.fc1.a_out"}},
      gated ? Reader{"mlp.fc2_in",
                     {"down_proj"},
                     {"lora.down_proj.in"},
                     {"lora.down_proj.dropout_mask"},
                     {"lora.down_proj.a_out"}}
            : Reader{"mlp.fc2_in",
                     {"fc2"},
                     {"lora.fc2.in"},
                     {"lora.fc2.dropout_mask"},
                     {"lora.fc2.a_out"}},
  };
  std::vector<TensorRecord> added;
  RecordBuilder rb(&added, &ck);
  for (const Reader& r : readers) {
    const TensorRecord* in = nullptr;
    for (const TensorRecord& t : inv.tensors)
      if (t.id == r.input) in = &t;
    if (in == nullptr) continue;
    const Shape shape = in->shape;
    const DType act = in->dtype;
    // The adapters read the base input itself when it needs no cast and no dropout.
    bool shares_input = false;
    for (int i = 0; i < 3 && r.names[i] != nullptr; ++i) {
      if (!l.targets_linear(r.names[i])) continue;
      if (l.dtype == act && l.dropout == 0.0) {
        shares_input = true;
      } else {
        // A cast copy (lora_A's input when the dtypes differ), or dropout's output; dropout
        // keeps its bool mask beside it.
        rb.add(r.adapter_in[i], shape, l.dtype, "lora_A weight gradient",
               l.dropout > 0.0 ? "lora_A's input: the dropout of the (cast) linear input"
                               : "lora_A's input: the linear input cast to the adapters' dtype",
               kPeft);
        if (l.dropout > 0.0)
          rb.add(r.adapter_mask[i], shape, DType::kBool, "lora dropout backward",
                 "the same mask scales the gradient", kPeft);
      }
      // [b, s, r]: the input's batch and token axes (attn.proj_in is [b, s, a, d]).
      const Shape a_shape{shape[0], shape[1], Dim{"r", l.rank}};
      rb.add(r.adapter_out[i], a_shape, l.dtype, "lora_B weight gradient",
             "lora_B's input: lora_A's output", kPeft);
    }
    // The frozen base linear keeps no input. Flash attention's saved output is attn.proj_in's
    // storage, so that record stays whatever o_proj does.
    const bool flash_out = std::string_view(r.input) == "attn.proj_in" && g.flash &&
                           !has_record(inv.tensors, "attn.out");
    if (!shares_input && !flash_out) drop(inv.tensors, r.input);
  }
  inv.tensors.insert(inv.tensors.end(), added.begin(), added.end());
}

void apply_lora_io(const LayerGeometry& g, LayerInventory& inv) {
  if (!g.lora.on()) return;
  // The embedding, the final norm's weight and the head are frozen: no backward reads the token
  // ids, the normalized input or the head's input for their weights.
  drop(inv.input_layer, "embed.token_ids");
  drop(inv.input_layer, "embed.position_ids");
  drop(inv.output_layer, "final_norm.normed");
  drop(inv.output_layer, "lm_head.in");
}

}  // namespace actmem::detail

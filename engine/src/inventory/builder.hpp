// Internal: the record builder every profile uses, so bytes are always dims x width,
// overflow-checked.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "actmem/core/checked.hpp"
#include "actmem/inventory/inventory.hpp"

namespace actmem::detail {

// Whether a record with this id is in the list.
inline bool has_record(const std::vector<TensorRecord>& v, std::string_view id) {
  for (const TensorRecord& r : v)
    if (r.id == id) return true;
  return false;
}

class RecordBuilder {
 public:
  RecordBuilder(std::vector<TensorRecord>* out, Checked* ck) : out_(out), ck_(ck) {}

  // Adds a record. Its id, backward, why, source and dimension symbols must be string literals:
  // the record keeps views of them (no allocation per record).
  TensorRecord& add(const char* id, std::initializer_list<Dim> shape, DType dt,
                    const char* backward, const char* why, const char* source) {
    return add(id, Shape(shape), dt, backward, why, source);
  }
  TensorRecord& add(const char* id, const Shape& shape, DType dt, const char* backward,
                    const char* why, const char* source) {
    TensorRecord r;
    r.id = id;
    r.shape = shape;
    r.dtype = dt;
    Bytes n = dtype_bytes(dt);
    for (const Dim& d : r.shape) n = ck_->mul(n, d.value, id);
    r.bytes = n;
    r.backward = backward;
    r.why = why;
    r.source = source;
    out_->push_back(std::move(r));
    return out_->back();
  }

 private:
  std::vector<TensorRecord>* out_;
  Checked* ck_;
};

// Marks a record as part of the s x s attention core that selective recompute drops.
inline TensorRecord& core(TensorRecord& r) {
  r.quadratic = true;
  r.attn_core = true;
  return r;
}

// One norm's saved tensors in the PyTorch profiles. LayerNorm is native_layer_norm (input + fp32
// mean/rstd on CUDA); RMSNorm is written out in Python ops, and the hf variants upcast to fp32
// first. The ids are literals (records keep views of them): {"ln1.in", "ln1.mean", ...}.
struct NormIds {
  const char* in;
  const char* mean;
  const char* rstd;
  const char* normed;
  const char* scale;
};
// `fp32_input`: the norm reads an fp32 tensor (Mamba2's fp32 residual stream at the final norm).
void add_norm(const NormIds& id, const ModelSpec& m, const LayerGeometry& g, RecordBuilder& rb,
              bool hf, bool shares_input = false, bool fp32_input = false);

void build_megatron(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                    RecordBuilder& rb);
void build_textbook(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                    RecordBuilder& rb);
// config.compile's block (compiled.cpp): what inductor's partitioner saves, measured.
void build_compiled(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                    RecordBuilder& rb);
void build_pytorch(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                   RecordBuilder& rb, bool hf);
// The Mamba-2 mixer after its norm (engine/src/inventory/mamba.cpp): transformers' PyTorch
// reference path, the fused mamba_ssm kernels, Megatron-LM's MambaMixer.
void add_mamba_torch(const LayerKind& k, const LayerGeometry& g, RecordBuilder& rb);
void add_mamba_fused(const LayerGeometry& g, RecordBuilder& rb);
void add_mamba_megatron(const LayerGeometry& g, RecordBuilder& rb);
void build_moe_mlp(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                   RecordBuilder& rb);
void build_hf_moe(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                  RecordBuilder& rb);
std::vector<GradPhase> build_backward_grads(const ModelSpec& m, const LayerKind& k,
                                            const LayerGeometry& g, Checked& ck);
// Split-backward schedules: marks the linear inputs and adds their output gradients
// (inventory/wgrad.cpp); false when the kind is not split.
bool add_weight_grad_store(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                           LayerInventory& inv, Checked& ck);
// LoRA: frozen base weights' inputs dropped, the adapters' records added (inventory/lora.cpp);
// the input and output layers' frozen embedding, final norm weight and head.
void apply_lora(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g, Profile profile,
                LayerInventory& inv, Checked& ck);
void apply_lora_io(const LayerGeometry& g, LayerInventory& inv);
// Float8 block linears (engine/src/inventory_float8.cpp): tensorwise saves float8 copies of each
// linear's input and weight in place of the high-precision input.
void apply_float8(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g, Profile profile,
                  LayerInventory& inv, Checked& ck);
// Op-level policies: the op outputs of a dense layer's forward (inventory/ops.cpp).
void add_op_outputs(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g, Profile profile,
                    LayerInventory& inv, Checked& ck);
void build_io_layers(const ModelSpec& m, const LayerGeometry& g, Profile p, RecordBuilder& in,
                     RecordBuilder& out);

// The output layer's records under an RL policy loss (rl_loss.cpp): logits, log-probabilities,
// the entropy and PPO's clipped surrogate as verl's actor keeps them.
void build_rl_loss(const LayerGeometry& g, RecordBuilder& out);
// ... and under PPO's critic (loss value): the score head's dropout and input, the value loss.
void build_value_head(const LayerGeometry& g, RecordBuilder& out);

}  // namespace actmem::detail

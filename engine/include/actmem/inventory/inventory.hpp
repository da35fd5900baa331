// The per-tensor inventory: every activation byte the engine reports is one of these named records.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "actmem/config/config.hpp"
#include "actmem/core/checked.hpp"
#include "actmem/core/dtype.hpp"
#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem {

// One axis of a tensor: its symbol as a student writes it ("s/t", "a/t", "f") and its value on
// this GPU. Symbols, ids and citations are string literals of the builders (static storage), held
// as views so building an inventory allocates no strings.
struct Dim {
  std::string_view sym;
  std::uint64_t value = 0;
};

// A tensor's axes, held inline (records have at most kMaxDims axes), so a record allocates nothing.
class Shape {
 public:
  static constexpr std::size_t kMaxDims = 6;
  Shape() = default;
  Shape(std::initializer_list<Dim> dims) {
    for (const Dim& d : dims) push_back(d);
  }
  void push_back(const Dim& d) { dims_[n_ < kMaxDims ? n_++ : kMaxDims - 1] = d; }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const Dim& operator[](std::size_t i) const { return dims_[i]; }
  const Dim* begin() const { return dims_; }
  const Dim* end() const { return dims_ + n_; }

 private:
  Dim dims_[kMaxDims] = {};
  std::size_t n_ = 0;
};

struct TensorRecord {
  std::string_view id;     // stable, e.g. "attn.softmax_out"
  std::string_view scope;  // "" or a prefix of the name, e.g. "mtp1." (an MTP depth's copies)
  Shape shape;
  DType dtype = DType::kBf16;
  Bytes bytes = 0;
  bool quadratic = false;  // scales with s^2 (the attention score family)
  bool attn_core = false;  // dropped by selective recompute (Korthikanti et al. 2022, Sec. 5)
  // A linear layer's input, which its weight gradient reads (dW = X^T dY): a split-backward
  // schedule keeps it from the input-gradient part (I) until the weight part (W) runs.
  bool wgrad_input = false;
  std::string_view backward;  // the backward op that reads it
  std::string_view why;       // why that backward needs it
  std::string_view source;    // citation for the record
};

// The resolved geometry of one layer on one GPU, shared by every profile's builder so the
// TP/SP/CP divisions are decided in exactly one place.
struct LayerGeometry {
  Dim b;              // micro-batch
  Dim s_rep;          // tokens of tensors TP replicates (divided by t only under SP, by c under CP)
  Dim s_tp;           // tokens of tensors TP shards by heads/columns (divided by c under CP)
  Dim s_keys;         // key length each local query attends to (the full sequence)
  Dim h;              // hidden size
  Dim a;              // query heads on this GPU
  Dim kv;             // key/value heads on this GPU
  Dim d;              // head dimension (of queries and keys)
  Dim dv;             // each head's value width (d, or MLA's v_head_dim)
  Dim rq;             // MLA: query latent width (0 without a query latent)
  Dim rkv;            // MLA: key/value latent width (0: not MLA)
  Dim dr;             // MLA: the RoPE part of d, one key shared by the heads
  Dim f;              // FFN width on this GPU
  Dim v;              // vocabulary shard on this GPU
  Dim response;       // an RL loss's response tokens per sequence (response_len, or s)
  Dim expert_tokens;  // MoE: tokens processed by this GPU's experts (top-k routing, capacity)
  Dim expert_f;       // MoE: routed expert width on this GPU
  Dim shared_f;       // MoE: total shared-expert width on this GPU
  Dim experts;        // MoE: router width (all experts)
  // Mamba-2 mixer axes (zero for other kinds): heads and groups are split by TP (Megatron-LM
  // MambaMixer: nheads and ngroups per TP rank), the rest is per head or per token.
  Dim mh;       // H: SSM heads on this GPU
  Dim mp;       // P: channels per head
  Dim mn;       // N: state size
  Dim mi;       // I = H·P: the mixer's inner width on this GPU
  Dim mconv;    // I + 2GN: the convolved channels [x, B, C] on this GPU
  Dim min;      // 2I + 2GN + H: in_proj's output width on this GPU
  Dim mgroups;  // G: the B/C groups on this GPU (the gated norm's groups too)
  Dim mq;       // Q: chunk length
  Dim mc;       // ⌈s/Q⌉ chunks; the torch path pads the sequence to mc·mq tokens
  Dim mc1;      // ⌈s/Q⌉ + 1: the chunk states with the initial (zero) state
  Dim s_pad;    // ⌈s/Q⌉·Q tokens, the padded sequence
  Dim s_conv;   // s + K - 1: the convolution's output length before its causal slice
  DType act = DType::kBf16;
  DType weight = DType::kBf16;  // the weights as the forward reads them (sharding.hpp gather_dtype)
  Loss loss;                    // how the output layer computes the loss (framework.hpp)
  Lora lora;                    // LoRA fine-tuning (off: full training)
  Float8 float8 = Float8::kNone;   // float8 block linears (framework.hpp)
  bool float8_all_gather = false;  // the weights arrive in e4m3 from FSDP's all-gather
  bool attn_dropout = false;
  bool hidden_dropout = false;
  bool flash = false;      // a fused kernel: flash, or cuDNN (which also sets cudnn)
  bool cudnn = false;      // SDPA's cuDNN backend under transformers (hf profile only)
  bool compiled = false;   // config.compile: the partitioner's saved set (inventory/compiled.cpp)
  bool sdpa_math = false;  // only the pytorch/hf profiles distinguish it from eager
};

// Rows of Liger-Kernel's fused linear cross entropy chunk: next_power_of_2(ceil(N / ceil(V / h)))
// for N = b·s tokens on this GPU, at most N (Liger-Kernel 77ff1a9
// src/liger_kernel/ops/fused_linear_cross_entropy.py).
std::uint64_t liger_chunk(const LayerGeometry& g);

// One step of a layer's backward and the gradient buffers alive while it runs
// (engine/src/inventory/grads.cpp).
struct GradPhase {
  std::string_view at;                // e.g. "attn.dQ"
  std::vector<TensorRecord> buffers;  // gradient buffers, in the activation dtype unless noted
  Bytes bytes = 0;
};

// One op of a layer's forward whose outputs an op-level selective-activation-checkpoint policy
// may save (torch.utils.checkpoint's SAC policies decide per aten op), in call order. Its outputs
// are not autograd's saved tensors: a policy that saves them keeps them beside the layer input.
struct OpOutput {
  std::string_view id;    // "attn.q_proj", "attn.sdpa", "mlp.down_proj", ...
  std::string_view aten;  // the op the policy sees: "aten.mm", "aten.addmm" (a linear with a bias)
  std::vector<TensorRecord> outputs;
  double flops = 0;  // its forward FLOPs, which saving it spares the recompute
  // torchtitan's op policy saves it: an odd-numbered aten.mm of the layer (1st, 3rd, ...), or
  // flash / memory-efficient SDPA (torchtitan 9dec370 parallelize_llama.py l.214-263).
  bool torchtitan_saves = false;
};

struct LayerInventory {
  std::vector<TensorRecord> tensors;       // everything one layer saves with no recompute
  TensorRecord checkpoint;                 // the layer input a full / every-k checkpoint keeps
  std::vector<TensorRecord> input_layer;   // embedding side (first pipeline stage)
  std::vector<TensorRecord> output_layer;  // final norm, logits and loss (last pipeline stage)
  std::vector<GradPhase> backward_grads;   // the backward working set, step by step
  // Split-backward schedules (zero-bubble, DualPipe): each linear's output gradient dY, kept from
  // the layer's I to its W beside the wgrad_input records. Empty where a linear's input is not a
  // record of its own (Mamba's fused kernel, whose backward computes out_proj's weight gradient
  // itself): a split-backward schedule is refused there (split_refusal).
  std::vector<TensorRecord> wgrad_dy;
  // The op outputs an op-level policy may save (recompute op:...), pytorch and hf profiles, dense
  // attention and MLP layers (op_policy_supported); empty otherwise.
  std::vector<OpOutput> ops;
};

// The geometry of one layer of kind `k` (its heads, widths and experts) on one GPU.
Result<LayerGeometry> resolve_geometry(const ModelSpec& m, const LayerKind& k, const TrainConfig& c,
                                       DType act, double attn_dropout, double hidden_dropout);

// Builds the inventory of one layer of kind `k` under `profile`. Errors only on overflow (field
// named).
Result<LayerInventory> build_inventory(const ModelSpec& m, const LayerKind& k,
                                       const LayerGeometry& g, Profile profile);

// Why a kind whose weight-gradient store is empty (LayerInventory::wgrad_dy) cannot run a
// split-backward schedule: the setup's error and the advisor's note say it alike.
std::string split_refusal(const LayerKind& k);

// Whether the engine names this kind's op outputs for op-level policies: dense attention (not
// MLA) and a dense FFN in sequential layout, under the pytorch and hf profiles.
bool op_policy_supported(const ModelSpec& m, const LayerKind& k, Profile profile);

// "b·s·h" for a shape; "2·b·s·h" when prefixed with the element width.
std::string shape_symbol(const Shape& shape);
std::string shape_values(const Shape& shape);

}  // namespace actmem

// Parameter inventory and static memory: weights, gradients, master weights, optimizer states,
// ZeRO.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actmem/config/config.hpp"
#include "actmem/core/checked.hpp"
#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem {

enum class ParamPlace { kLayer, kEmbedding, kHead };

// One parameter tensor as held by one GPU (after TP/EP sharding); rows x cols, cols = 1 for
// vectors. Adafactor's factored statistics need the matrix shape, the rest only the count.
struct ParamRecord {
  std::string_view id;  // a string literal of params.cpp
  std::uint64_t rows = 0;
  std::uint64_t cols = 1;
  ParamPlace place = ParamPlace::kLayer;
  bool expert = false;       // routed-expert weights: sharded by EP, ZeRO over the expert-DP group
  std::uint64_t copies = 1;  // identical tensors it stands for (one per layer of a stage)
  // LoRA (config.lora): a frozen base weight keeps no gradient, master copy or optimizer state;
  // nf4_bytes > 0 stores it in QLoRA's 4-bit format, that many bytes per copy; an adapter is
  // held, with its gradient, in the adapters' dtype.
  bool frozen = false;
  Bytes nf4_bytes = 0;
  bool adapter = false;
};

// Bytes of one weight of n elements stored by bitsandbytes' 4-bit NF4 with double quantization
// (quantize_4bit, blocksize 64; absmax quantized blockwise at 256): n/2 packed + one uint8
// absmax per 64 + one fp32 nested absmax per 256 blocks + one fp32 offset + the 16-value NF4 and
// 256-value nested code tables in fp32.
Bytes nf4_bytes(std::uint64_t n);

// LoRA (config.lora, validated: a dense attention and MLP layer, tp = 1): freezes one layer's
// parameters (QLoRA: its linear weights in NF4) and adds each targeted linear's adapters.
void apply_lora_params(const ModelSpec& m, const LayerKind& k, const Lora& l,
                       std::vector<ParamRecord>* v);

struct ParamShards {
  std::uint64_t tp = 1;
  std::uint64_t ep = 1;
  // PPO's critic (loss value): transformers' GenericForTokenClassification with one label, a
  // score head Linear(h, 1) with its bias in place of lm_head.
  bool value_head = false;
};

// One layer's (of kind k) parameters on one GPU, and the embedding/head/final-norm parameters.
// Counts stay far below 2^63 for any accepted model (validated dims are bounded).
std::vector<ParamRecord> layer_params(const ModelSpec& m, const LayerKind& k, const ParamShards& s);
std::vector<ParamRecord> embedding_params(const ModelSpec& m, const ParamShards& s);
std::vector<ParamRecord> head_params(const ModelSpec& m, const ParamShards& s, bool separate_stage);

// Whole-model parameter count (no sharding), the number checked against published counts.
Result<std::uint64_t> total_params(const ModelSpec& m);
// The multi-token-prediction depths' own parameters (DeepSeek-V3), counted apart: 0 without.
Result<std::uint64_t> mtp_params(const ModelSpec& m);
// Their records on one GPU (the last pipeline stage holds them when training with MTP).
std::vector<ParamRecord> mtp_param_records(const ModelSpec& m, const ParamShards& s);

struct StaticMemory {
  std::uint64_t params = 0;         // parameters held by this GPU before ZeRO-3 partitioning
  std::uint64_t expert_params = 0;  // of which routed-expert parameters
  Bytes params_bytes = 0;
  Bytes grads_bytes = 0;
  Bytes master_bytes = 0;
  Bytes optimizer_bytes = 0;
  // FSDP residency (config.reshard_after_forward, config.accumulate_unsharded): the stage's
  // parameters gathered in the compute dtype, and its unsharded gradient accumulators.
  Bytes gathered_params_bytes = 0;
  Bytes unsharded_grads_bytes = 0;
  // PyTorch DDP without gradient_as_bucket_view (config.ddp_bucket_view = false): its reduce
  // buckets, a copy of this GPU's gradients allocated when DDP wraps the model.
  Bytes ddp_buckets_bytes = 0;
  // TransformerEngine fp8 (config.float8 delayed): each linear's cached fp8 weight and its
  // transpose, and each module's fp8_meta (amax histories, scales).
  Bytes fp8_weights_bytes = 0;
  Bytes total_bytes = 0;  // on the GPU
  // ZeRO-Offload (config.optimizer_offload): the fp32 parameter partition, its fp32 gradient
  // partition and the optimizer states, in host memory (not in total_bytes).
  Bytes host_bytes = 0;
};

// The static lines of a GPU, one row each, in the order they are listed (the view's bar, the
// explanations, the flat buffers' allocation): the one list that every writer, bar, explained
// total and the allocation stream read. A new static line is a StaticMemory field, the code that
// computes it (params.cpp or setup.cpp), a row here and its explanation (report/estimate.cpp).
enum class StaticPlace : std::uint8_t {
  kCore,      // parameters, gradients, master weights, optimizer states: always listed
  kResident,  // a framework switch's line: listed only when held
  kHost,      // in host memory, not on the GPU (ZeRO-Offload): explained only
};
struct StaticLine {
  const char* key;        // the JSON key in "static" and "peak" (docs/schema.md)
  const char* id;         // the view's bar segment
  const char* label;      // ... and its label
  const char* part;       // the line in the explained closed-form total
  const char* peak_part;  // ... and in the explained peak
  Bytes StaticMemory::*bytes;
  StaticPlace place;
  bool flat;  // one flat buffer when the framework allocates them so (not DDP's own buckets)
};
const std::vector<StaticLine>& static_lines();

// Static bytes on one GPU for the given parameter records (one pipeline stage's worth).
Result<StaticMemory> static_memory(const std::vector<ParamRecord>& params, const TrainConfig& c);
// A transformer block's linear weight (a matrix of a layer): what float8 recipes cast, torchao's
// float8 all-gather gathers in e4m3 and TransformerEngine caches in fp8.
inline bool is_block_linear(const ParamRecord& q) {
  return q.place == ParamPlace::kLayer && q.cols > 1;
}
// Bytes per element ZeRO-3 / FSDP gathers a parameter in: gather_dtype (sharding.hpp), or one byte
// for a block linear's weight under torchao's float8 all-gather (config.float8_all_gather:
// fsdp_utils.py WeightWithDynamicFloat8CastTensor all-gathers the e4m3 _data).
Bytes gather_width(const ParamRecord& q, const TrainConfig& c);
// The gathered bytes of these records, each in its gather_width.
Bytes gathered_bytes(const std::vector<ParamRecord>& v, const TrainConfig& c, const char* field,
                     Checked& ck);

// Bytes of optimizer state for one tensor of n elements (shape rows x cols), element-wise states
// in `state` (8-bit Adam and Adafactor keep their own formats).
Bytes optimizer_state_bytes(Optimizer o, DType state, const ParamRecord& p, Checked& ck);
// The dtype of a trainable record's element-wise optimizer states: config.optimizer_dtype, or for
// a LoRA adapter the wider of it and the adapters' dtype: torch.optim's states are
// zeros_like(p), so an fp32 adapter keeps fp32 states where bf16 weights keep bf16 ones, and
// optimizers that keep fp32 states keep them for a bf16 adapter too.
DType optimizer_state_dtype(const ParamRecord& p, const TrainConfig& c);
// A record's weight and gradient dtypes (an adapter's are the adapters' dtype) and whether it has
// an fp32 master copy (trainable, master_weights on and its weight not fp32): static_memory's
// rules, which the device replay and compare follow.
DType weight_dtype(const ParamRecord& p, const TrainConfig& c);
DType grad_dtype_of(const ParamRecord& p, const TrainConfig& c);
bool keeps_master(const ParamRecord& p, const TrainConfig& c);

}  // namespace actmem

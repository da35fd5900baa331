// The training configuration: batch geometry, precision, optimizer, parallelism and recompute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actmem/config/allocator_config.hpp"
#include "actmem/config/framework.hpp"
#include "actmem/core/checked.hpp"
#include "actmem/core/dtype.hpp"
#include "actmem/schedules/schedule.hpp"

namespace actmem {

// Which autograd accounting the inventory follows (see docs/formulas.md).
enum class Profile { kMegatron, kTextbook, kPytorch, kHf };
// eager: hand-written matmul/softmax/matmul; sdpa_math: PyTorch's math SDPA backend (fp32 upcast
// of q/k/v since PyTorch 2.5); flash: a fused kernel keeping only Q, K, V, O and the log-sum-exp;
// sdpa_cudnn: SDPA's cuDNN backend as transformers' `sdpa` runs it (what PyTorch 2.11 picked on an
// H200: flash's tensors, its own RNG state, and the mask and layouts transformers hands it).
enum class Attention { kEager, kSdpaMath, kFlash, kSdpaCudnn };
enum class Optimizer { kAdamW, kSgd, kSgdMomentum, kAdam8bit, kAdafactor };
// How torch.optim.AdamW runs its step (torch/optim/adamw.py, its foreach and fused flags):
// foreach (the default on CUDA, _default_to_fused_or_foreach) computes over every parameter's
// tensor at once, fused in one kernel per tensor list, for-loop one tensor at a time
// (docs/formulas.md, "The optimizer step"). Auto, resolved by the setup: the profile's own
// framework's, Megatron-LM's FusedAdam (megatron, textbook) or torch.optim's foreach (pytorch, hf).
enum class OptimizerImpl { kAuto, kForeach, kFused, kForLoop };
// kPattern: an explicit per-layer pattern, one letter per layer of a chunk, repeated:
// K keep, S selective, C checkpoint, R recompute (inside a segment), X custom.
enum class RecomputeKind { kNone, kSelective, kFull, kEveryK, kCustom, kPattern };

struct Parallel {
  std::uint64_t tp = 1;
  bool sp = false;  // sequence parallelism, only meaningful with tp > 1
  std::uint64_t pp = 1;
  std::uint64_t vpp = 1;  // virtual (interleaved) stages per pipeline rank
  std::uint64_t cp = 1;
  std::uint64_t dp = 1;
  int zero = 0;  // ZeRO stage 0..3
  std::uint64_t ep = 1;
  // Which ranks ZeRO/FSDP shard over (framework.hpp): dp, or dp × cp.
  ShardGroup shard_group = ShardGroup::kDp;
  // Hybrid sharding (FSDP's HYBRID_SHARD / torchtitan's HSDP, Megatron-LM's
  // --num-distributed-optimizer-instances): the dp ranks form dp_replicate replicas, each
  // sharding over dp / dp_replicate ranks (× cp with shard_group dp-cp). 1: one shard group.
  std::uint64_t dp_replicate = 1;
};

struct Recompute {
  RecomputeKind kind = RecomputeKind::kNone;
  std::uint64_t every_k = 0;             // for kEveryK: a checkpoint every k layers
  bool offload = false;                  // kept activations live in host memory
  std::vector<std::string> custom_keep;  // kCustom: record ids kept besides the layer input
  std::string pattern;                   // kPattern: e.g. "CRRR" or "KKSS"
  // Op-level policies (kCustom): "op:LIST" names op ids in custom_keep (ops = true);
  // "op:torchtitan" is torchtitan's list (op_policy = "torchtitan"), resolved per layer kind.
  bool ops = false;
  std::string op_policy;
};

// A byte setting left at its documented default.
constexpr Bytes kDefaultBytes = ~Bytes{0};

struct TrainConfig {
  // The framework whose documented defaults filled the keys the user left out (framework.cpp).
  Framework framework = Framework::kPlain;
  // The defaults the framework filled (framework_defaults), for the answer to cite.
  std::vector<FrameworkDefault> framework_filled;
  std::uint64_t micro_batch = 1;
  std::uint64_t seq = 0;  // 0: 2048, or the learned position table if shorter
  // With an RL loss (logprob, logprob_torch): the response tokens per sequence the policy loss
  // runs over (verl pads responses to response_length); 0: the whole sequence.
  std::uint64_t response_len = 0;
  // Micro-batches per step per pipeline (gradient accumulation). 0 = auto: just enough to fill
  // the pipeline (pp), the steady state Korthikanti et al. 2022 assume.
  std::uint64_t grad_accum = 0;
  DType act_dtype = DType::kBf16;
  DType param_dtype = DType::kBf16;
  DType grad_dtype = DType::kBf16;
  bool master_weights = true;  // an fp32 master copy when params are not fp32
  Optimizer optimizer = Optimizer::kAdamW;
  // The element-wise optimizers' state dtype: fp32 (mixed precision: the states live beside the
  // fp32 master weights), or the parameters' own when torch.optim runs on bf16 parameters without
  // a master copy (torch/optim/adamw.py _init_group: zeros_like(p)).
  DType optimizer_dtype = DType::kFp32;
  OptimizerImpl optimizer_impl = OptimizerImpl::kAuto;  // AdamW only
  // torch.compile of each block (torchtitan's apply_compile): what inductor's partitioner saves
  // for backward (docs/validation.md 6.2), at torch._functorch.config.activation_memory_budget.
  bool compile = false;
  double activation_memory_budget = 1.0;
  double attention_dropout = -1.0;  // < 0: take the model's default
  double hidden_dropout = -1.0;
  Attention attention = Attention::kEager;
  Profile profile = Profile::kMegatron;
  Parallel par;
  Recompute recompute;
  Schedule schedule = Schedule::k1F1B;     // 1F1B becomes interleaved when vpp > 1
  std::vector<std::uint64_t> layer_split;  // optional uneven layers per pipeline stage (vpp = 1)
  double fragmentation_pct = 0.0;          // allocator-fragmentation allowance, % of the peak
  // Dropless MoE routing imbalance: the busiest expert-parallel rank's routed tokens over the mean
  // (1: perfectly balanced; at most ep, every routed token of the group on one rank).
  double moe_imbalance = 1.0;
  // Train with the model's multi-token-prediction depths (DeepSeek-V3 Sec. 2.2): their layers,
  // heads and losses on the last pipeline stage. Off: inference and plain next-token training.
  bool mtp = false;
  // FSDP (ZeRO-3) residency, named as FSDP2's fully_shard names it. reshard_after_forward = false:
  // each layer's gathered parameters stay from its forward to its backward. accumulate_unsharded:
  // between micro-batches every layer keeps its gathered parameters and accumulates an unsharded
  // gradient, reduce-scattered only at the last micro-batch (torch.distributed.pipelining's
  // non-last backward: set_reshard_after_backward(False), set_requires_gradient_sync(False)).
  bool reshard_after_forward = true;
  // Which FSDP runs the data-parallel sharding under a framework that offers both: 1 (FSDP1's
  // FlatParameter units), 2 (fully_shard's per-parameter groups). 0: the framework's own (verl's
  // strategy fsdp: 1; torchtitan: 2). Read with framework verl or torchtitan.
  std::uint64_t fsdp_version = 0;
  Loss loss;                      // how the loss is computed (framework.hpp)
  Lora lora;                      // LoRA / QLoRA fine-tuning (framework.hpp)
  Float8 float8 = Float8::kNone;  // float8 block linears (framework.hpp)
  // torchao's enable_fsdp_float8_all_gather (tensorwise, zero 3): FSDP gathers the block linears'
  // weights in e4m3, and the float8 matmul saves a view of the gathered weight.
  bool float8_all_gather = false;
  // TransformerEngine's amax history length (Megatron-LM --fp8-amax-history-len, default 1).
  std::uint64_t fp8_amax_history = 1;
  bool accumulate_unsharded = false;
  // ZeRO-Offload (zero 2 or 3): the fp32 parameter partition, its fp32 gradients and the
  // optimizer states live in host memory and the optimizer steps on the CPU (DeepSpeed
  // offload_optimizer.device = "cpu"); the GPU keeps the parameters.
  bool optimizer_offload = false;
  // PyTorch DDP's gradient_as_bucket_view (zero 0, dp > 1, the PyTorch profiles): false, DDP's
  // default, keeps its reduce buckets as a second copy of every gradient for the whole run
  // (static.ddp_buckets_bytes); true makes the gradients views of the buckets.
  bool ddp_bucket_view = true;
  // Asynchronous tensor parallelism (docs/frameworks.md, "Async TP"): Megatron-LM's
  // --tp-comm-overlap (TransformerEngine userbuffers, the megatron profile) or torchtitan's
  // micro-pipelined TP over symmetric memory (the pytorch profile); buffers outside the caching
  // allocator, device overhead lines.
  bool async_tp = false;
  Bytes cublas_workspace = 32ull << 20;  // cuBLAS workspace (PyTorch default on sm90: 4096 KiB x 8)
  Bytes grad_bucket = 25ull << 20;       // gradient reduce bucket (PyTorch DDP bucket_cap_mb = 25)
  // PYTORCH_CUDA_ALLOC_CONF's size settings, for the allocator model (device.hpp).
  AllocatorConfig alloc;
  // Fixed costs per GPU (device.hpp); kDefaultBytes takes the documented default.
  Bytes cuda_context_bytes = kDefaultBytes;  // CUDA context + PyTorch start-up + loaded kernels
  Bytes nccl_comm_bytes = kDefaultBytes;     // device memory of one NCCL communicator
  std::uint64_t gpus_per_node = 8;  // which NCCL groups stay inside a node (NVLink) or cross it
  // The allocator replays the most loaded stage; true: every pipeline stage (per-stage figures,
  // pp times the work).
  bool device_all_stages = false;
  std::string gpu_id;           // optional GPU preset id
  std::uint64_t gpu_bytes = 0;  // optional explicit budget (overrides the preset's memory)
};

// 1F1B with vpp > 1 chunks per rank is Megatron-LM's interleaved schedule.
inline Schedule effective_schedule(const TrainConfig& c) {
  return c.par.vpp > 1 && c.schedule == Schedule::k1F1B ? Schedule::kInterleaved : c.schedule;
}

// Micro-batches per step: the configured count, or (0 = auto) the fewest that reach the
// schedule's steady state: p for 1F1B and ZB-H1, 2p for the interleaved schedule (Megatron-LM
// runs all-forward-then-backward when m == p), ZB-V, DualPipeV and DualPipe (the least DualPipe
// and DualPipeV accept). The one definition every caller uses.
// Whether the framework filled `key` (its default, not the user's value).
inline bool framework_filled(const TrainConfig& c, const char* key) {
  for (const FrameworkDefault& d : c.framework_filled)
    if (std::string(d.key) == key) return true;
  return false;
}

inline std::uint64_t default_micro_batches(const TrainConfig& c) {
  if (c.grad_accum != 0) return c.grad_accum;
  return c.par.vpp > 1 || c.schedule == Schedule::kDualPipe ? 2 * c.par.pp : c.par.pp;
}

// optimizer_impl as the step runs it: auto is the profile's framework's, Megatron-LM 0011998's
// TransformerEngine or Apex FusedAdam (megatron/core/optimizer/__init__.py l.13-19) for the
// megatron and textbook profiles, torch 2.6's foreach for pytorch and hf (torch/optim/adamw.py,
// _default_to_fused_or_foreach on CUDA tensors). An emitted launch config follows what was asked.
inline OptimizerImpl effective_optimizer_impl(const TrainConfig& c) {
  if (c.optimizer_impl != OptimizerImpl::kAuto) return c.optimizer_impl;
  return c.profile == Profile::kMegatron || c.profile == Profile::kTextbook
             ? OptimizerImpl::kFused
             : OptimizerImpl::kForeach;
}

const char* profile_name(Profile p);
const char* attention_name(Attention a);
const char* optimizer_name(Optimizer o);
const char* optimizer_impl_name(OptimizerImpl i);
std::string recompute_name(const Recompute& r);
bool parse_profile(const std::string& s, Profile* out);
bool parse_attention(const std::string& s, Attention* out);
bool parse_optimizer(const std::string& s, Optimizer* out);
bool parse_optimizer_impl(const std::string& s, OptimizerImpl* out);
// "none" | "selective" | "full" | "every:K" (K >= 1).
bool parse_recompute(const std::string& s, Recompute* out);

}  // namespace actmem

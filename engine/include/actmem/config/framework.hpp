// The training framework a run uses and the switches through which it changes memory: which ranks
// ZeRO/FSDP shard over, what FSDP keeps gathered, how the loss is computed. A framework is a set
// of documented defaults for these switches (framework.cpp cites each); every default is also a
// config key of its own that a user may override.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "actmem/core/dtype.hpp"

namespace actmem {

// plain: today's accounting, no framework defaults applied. verl: its FSDP actor (volcengine/verl
// b178a3c fsdp_workers.py, dp_actor.py), what the rl command trains.
enum class Framework { kPlain, kMegatronLm, kTorchtitan, kDeepspeed, kHfTrainer, kVerl };

// The ranks ZeRO / FSDP shard parameters, gradients and optimizer states over: the data-parallel
// ranks, or data × context parallel ranks (Megatron-LM's distributed optimizer and torchtitan's
// FSDP mesh both flatten dp and cp).
enum class ShardGroup { kDp, kDpCp };

// Float8 training of the block linears as torchao runs it (pytorch/ao eab345c2, the torchao of
// torchtitan's December 2024 tables; docs/frameworks.md, "Float8"): tensorwise dynamic scaling
// saves each linear's input and weight cast to float8 (e4m3, 1 byte) with an fp32 scale; the
// rowwise recipe (ALL_AXISWISE) saves the high-precision input and weight, as bf16 does; mxfp8
// (torchao's prototype MXLinear) saves both cast to MX: e4m3 elements with one e8m0 (uint8) scale
// per block of 32 along the in-features.
// delayed: TransformerEngine's DelayedScaling recipe as Megatron-LM runs it (--fp8-format, the
// megatron profile): each linear keeps its input in fp8 and a cached fp8 weight and transpose.
enum class Float8 { kNone, kTensorwise, kRowwise, kMxfp8, kDelayed };

// How the loss turns the last hidden states into a scalar (docs/frameworks.md, "The loss"):
// eager: F.cross_entropy(logits.float()), keeping the fp32 log-softmax of every token;
// chunked:K: torchtune's CEWithChunkedOutputLoss, K chunks each upcast and kept on its own (the
// same kept bytes, a K-times smaller upcast); compiled: torch.compile of that loss, keeping its
// bf16 logits input and two fp32 numbers per token; fused: Liger-Kernel's fused linear cross
// entropy, keeping the input's and the weight's gradients computed in the forward instead.
// value: verl's PPO critic (dp_critic.py, padding removed): transformers'
// GenericForTokenClassification head (dropout 0.1, Linear(h, 1)) in place of lm_head, and the
// clipped value loss (core_algos.py compute_value_loss) over the response.
// logprob: verl's FSDP actor (volcengine/verl b178a3c dp_actor.py _forward_micro_batch, padding
// removed) computing each token's log-probability with flash-attn's Triton cross entropy, and
// PPO's clipped policy loss over the response (core_algos.py compute_policy_loss_vanilla);
// logprob_torch: the same where flash-attn is absent (torch_functional.py
// logprobs_from_logits_v2: one log_softmax per token row). Either may add the entropy bonus.
// logprob_trl: TRL's GRPOTrainer (huggingface/trl f2cd577 grpo_trainer.py _compute_loss): logits
// only for the response (transformers' logits_to_keep), selective_log_softmax's row loop, the
// entropy under no_grad (entropy_coef 0), the "dapo" clipped loss; +kl adds beta's KL term.
// dpo_trl: TRL's DPOTrainer (dpo_trainer.py _compute_loss): chosen and rejected sequences
// concatenated, one log_softmax per sequence over every token, the sigmoid loss, and the
// reference's forward inside the loss.
// logprob_openrlhf: OpenRLHF's actor (models/actor.py at 3c3be62): every token's logits copied to
// fp32 and passed to flash-attn's cross entropy, PPO's clipped loss over the s - 1 positions;
// +entropy: --actor.entropy_coef given and not 0 (its compiled compute_entropy in the loss).
// parallel: torchtitan's loss under tensor parallelism (torch.distributed.tensor.parallel's
// loss_parallel, torch 2.6.0 parallel/loss.py): the head's output stays sharded over the
// vocabulary, and DTensor's own log_softmax and nll_loss handlers run cross_entropy on the shards.
enum class LossImpl {
  kEager,
  kParallel,
  kChunked,
  kCompiled,
  kFused,
  kLogprob,
  kLogprobTorch,
  kValue,
  kLogprobTrl,
  kDpoTrl,
  kLogprobOpenrlhf
};

// verl's entropy of each token's distribution (entropy_coeff != 0 or calculate_entropy):
// compiled (torch.compile of entropy_from_logits, use_torch_compile: verl's default), eager,
// chunked (entropy_from_logits_with_chunking), checkpoint (entropy_checkpointing).
enum class Entropy { kNone, kCompiled, kEager, kChunked, kCheckpoint };

struct Loss {
  LossImpl impl = LossImpl::kEager;
  std::uint64_t chunks = 1;          // kChunked: K >= 2
  Entropy entropy = Entropy::kNone;  // kLogprob, kLogprobTorch; kLogprobOpenrlhf (compiled)
  bool kl = false;                   // kLogprobTrl: beta != 0 (the reference's KL term)
};

// verl's actor and critic losses and TRL's (the hf profile, tp = cp = pp = 1, response_len).
inline bool rl_loss(const Loss& l) {
  return l.impl == LossImpl::kLogprob || l.impl == LossImpl::kLogprobTorch ||
         l.impl == LossImpl::kValue || l.impl == LossImpl::kLogprobTrl ||
         l.impl == LossImpl::kDpoTrl || l.impl == LossImpl::kLogprobOpenrlhf;
}

std::string loss_name(const Loss& l);
// "eager" | "parallel" | "chunked:K" (2 <= K <= 2^20) | "compiled" | "fused" | "value" |
// "logprob" | "logprob_torch", the last two optionally followed by "+entropy" (compiled) or
// "+entropy:MODE" | "logprob_trl" | "logprob_trl+kl" | "dpo_trl" | "logprob_openrlhf", optionally
// "+entropy".
bool parse_loss(const std::string& s, Loss* out);
// The listing error messages give.
const char* loss_names();

// LoRA fine-tuning (Hu et al. 2021) as huggingface/peft runs it: every base weight frozen, each
// targeted linear given adapters A [r, in] and B [out, r]; QLoRA (Dettmers et al. 2023) stores the
// block linears' frozen weights in 4-bit NF4 with double quantization (docs/frameworks.md, LoRA).
struct Lora {
  std::uint64_t rank = 0;            // r; 0: no LoRA
  std::vector<std::string> targets;  // linear names: q_proj, k_proj, v_proj, o_proj, gate_proj,
                                     // up_proj, down_proj (gated) or fc1, fc2
  double dropout = 0.0;              // lora_dropout
  DType dtype = DType::kFp32;        // the adapters' (peft autocast_adapter_dtype: fp32)
  bool qlora = false;
  bool on() const { return rank > 0; }
  bool targets_linear(const std::string& name) const {
    for (const std::string& t : targets)
      if (t == name) return true;
    return false;
  }
};

struct TrainConfig;

// One documented default of a framework: the config key it fills when the user leaves it out,
// its value as JSON text (read by the same parser as the user's keys), and the framework's code
// it follows, at a named version.
struct FrameworkDefault {
  const char* key;
  std::string value;
  const char* source;
};

struct Parallel;

// Whether torchtitan (9dec370 parallelize_llama.py l.79-110) applies FSDP2 to a layout: when
// dp_shard x cp > 1, dp_shard = dp / dp_replicate (HSDP); else DDP across replicas, or one rank.
// What it shards decides its precision, residency and buckets (framework defaults, its TOML
// writer, the advisor's layouts).
bool torchtitan_fsdp(const Parallel& p);

// The defaults c.framework sets, given the keys the user gave (`given`) and their values in `c`:
// some depend on the layout (torchtitan shards with FSDP only when dp x cp > 1). Plain: none.
std::vector<FrameworkDefault> framework_defaults(const TrainConfig& c,
                                                 const std::function<bool(const char*)>& given);

const char* framework_name(Framework f);
bool parse_framework(const std::string& s, Framework* out);
const char* shard_group_name(ShardGroup g);
const char* float8_name(Float8 f);
bool parse_float8(const std::string& s, Float8* out);
bool parse_shard_group(const std::string& s, ShardGroup* out);

}  // namespace actmem

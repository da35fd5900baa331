// Each framework's documented defaults (framework.hpp): the config keys it fills when a user
// leaves them out, each cited to the framework's code at a named version. A default is applied
// through the same config reader as a user's key, so it is checked exactly as one would be.
#include "actmem/config/framework.hpp"

#include "actmem/config/config.hpp"

namespace actmem {

namespace {

constexpr const char* kMegatronArgs =
    "Megatron-LM megatron/training/arguments.py (bf16 branch): 'bfloat16 requires gradient "
    "accumulation and all-reduce to be done in fp32', accumulate_allreduce_grads_in_fp32 = True";
constexpr const char* kMegatronGroups =
    "Megatron-LM 0011998 megatron/core/distributed/distributed_data_parallel.py: dense "
    "parameters' grad buffers (and the distributed optimizer's shards) over intra_dp_cp_group = "
    "get_data_parallel_group(with_context_parallel=True)";

constexpr std::uint64_t kMaxLossChunks = std::uint64_t{1} << 20;

}  // namespace

bool torchtitan_fsdp(const Parallel& p) {
  // validate.cpp refuses a dp_replicate that does not divide dp; dp and cp are at least 1.
  const std::uint64_t dp_shard = p.dp_replicate > 1 ? p.dp / p.dp_replicate : p.dp;
  return dp_shard > 1 || p.cp > 1;
}

namespace {

const char* const kEntropyNames[] = {"none", "compiled", "eager", "chunked", "checkpoint"};

// "logprob[_torch][+entropy[:MODE]]" | "logprob_trl[+kl]".
bool parse_rl_loss(const std::string& s, Loss* out) {
  if (s == "logprob_openrlhf" || s == "logprob_openrlhf+entropy") {
    *out = Loss{LossImpl::kLogprobOpenrlhf, 1, s.size() > 16 ? Entropy::kCompiled : Entropy::kNone};
    return true;
  }
  if (s == "logprob_trl" || s == "logprob_trl+kl") {
    *out = Loss{LossImpl::kLogprobTrl, 1, Entropy::kNone, s.size() > 11};
    return true;
  }
  const std::size_t plus = s.find('+');
  const std::string base = s.substr(0, plus);
  if (base != "logprob" && base != "logprob_torch") return false;
  Loss l{base == "logprob" ? LossImpl::kLogprob : LossImpl::kLogprobTorch, 1, Entropy::kNone};
  if (plus != std::string::npos) {
    const std::string rest = s.substr(plus + 1);
    if (rest == "entropy") {
      l.entropy = Entropy::kCompiled;
    } else if (rest.rfind("entropy:", 0) == 0) {
      bool found = false;
      for (int i = 1; i < 5; ++i)
        if (rest.substr(8) == kEntropyNames[i]) l.entropy = static_cast<Entropy>(i), found = true;
      if (!found) return false;
    } else {
      return false;
    }
  }
  *out = l;
  return true;
}

}  // namespace

std::string loss_name(const Loss& l) {
  switch (l.impl) {
    case LossImpl::kEager:
      return "eager";
    case LossImpl::kParallel:
      return "parallel";
    case LossImpl::kChunked:
      return "chunked:" + std::to_string(l.chunks);
    case LossImpl::kCompiled:
      return "compiled";
    case LossImpl::kFused:
      return "fused";
    case LossImpl::kValue:
      return "value";
    case LossImpl::kLogprobTrl:
      return l.kl ? "logprob_trl+kl" : "logprob_trl";
    case LossImpl::kDpoTrl:
      return "dpo_trl";
    case LossImpl::kLogprobOpenrlhf:
      return l.entropy == Entropy::kCompiled ? "logprob_openrlhf+entropy" : "logprob_openrlhf";
    case LossImpl::kLogprob:
    case LossImpl::kLogprobTorch: {
      std::string n = l.impl == LossImpl::kLogprob ? "logprob" : "logprob_torch";
      if (l.entropy == Entropy::kCompiled) n += "+entropy";
      if (l.entropy != Entropy::kNone && l.entropy != Entropy::kCompiled)
        n += std::string("+entropy:") + kEntropyNames[static_cast<int>(l.entropy)];
      return n;
    }
  }
  return "?";
}

bool parse_loss(const std::string& s, Loss* out) {
  if (s == "dpo_trl") {
    *out = Loss{LossImpl::kDpoTrl, 1};
    return true;
  }
  if (s == "eager" || s == "parallel" || s == "compiled" || s == "fused" || s == "value") {
    *out = Loss{s == "eager"      ? LossImpl::kEager
                : s == "parallel" ? LossImpl::kParallel
                : s == "compiled" ? LossImpl::kCompiled
                : s == "value"    ? LossImpl::kValue
                                  : LossImpl::kFused,
                1};
    return true;
  }
  if (s.rfind("logprob", 0) == 0) return parse_rl_loss(s, out);
  if (s.rfind("chunked:", 0) != 0 || s.size() == 8 || s.size() > 8 + 7) return false;
  std::uint64_t k = 0;
  for (std::size_t i = 8; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    k = k * 10 + static_cast<std::uint64_t>(s[i] - '0');
  }
  if (k < 2 || k > kMaxLossChunks || s[8] == '0') return false;
  *out = Loss{LossImpl::kChunked, k};
  return true;
}

const char* loss_names() {
  return "eager, parallel, chunked:K (2 <= K <= 1048576), compiled, fused, logprob, logprob_torch "
         "(each "
         "optionally +entropy or +entropy:compiled|eager|chunked|checkpoint), logprob_trl, "
         "logprob_trl+kl, dpo_trl, logprob_openrlhf, logprob_openrlhf+entropy, value";
}

namespace {

void megatron_defaults(std::vector<FrameworkDefault>& d) {
  d.push_back({"profile", "\"megatron\"",
               "Megatron-LM's transformer layer: the activations Korthikanti et al. 2022 "
               "count (docs/formulas.md, megatron profile)"});
  d.push_back({"grad_dtype", "\"fp32\"", kMegatronArgs});
  d.push_back({"shard_group", "\"dp-cp\"", kMegatronGroups});
  d.push_back({"optimizer_impl", "\"fused\"",
               "Megatron-LM 0011998 megatron/core/optimizer/__init__.py l.13-19: "
               "TransformerEngine's FusedAdam, else Apex's (multi_tensor_apply, in place); the "
               "distributed optimizer's main gradients are views of the fp32 grad buffer "
               "(distrib_optimizer.py l.2441)"});
}

void torchtitan_defaults(const TrainConfig& c, const std::function<bool(const char*)>& given,
                         std::vector<FrameworkDefault>& d) {
  // torchtitan at 9dec370 (2024-12-26), the commit of its Llama 3.1 H100 benchmark tables;
  // torch.distributed at 2.6.0 (branch cut December 2024).
  d.push_back({"profile", "\"pytorch\"",
               "torchtitan 9dec370 torchtitan/models/llama/model.py: plain PyTorch modules "
               "under autograd (the pytorch profile's records)"});
  d.push_back({"attention", "\"flash\"",
               "torchtitan 9dec370 torchtitan/models/llama/model.py l.209: "
               "F.scaled_dot_product_attention(xq, xk, xv, is_causal=True), the flash "
               "backend in bf16 on sm80+"});
  const bool sharded = torchtitan_fsdp(c.par);
  // FSDP2's mixed precision: fp32 sharded parameters (the model is built in fp32), computed
  // in bf16, gradients reduced and kept in fp32. Without FSDP there is no mixed precision
  // policy and no autocast: fp32 throughout.
  const char* mp =
      sharded ? "torchtitan 9dec370 parallelize_llama.py l.320: MixedPrecisionPolicy(param_dtype="
                "bfloat16, reduce_dtype=float32) (config_manager.py l.378-392 defaults) over the "
                "fp32 parameters train.py l.110-111 builds on meta and never casts"
              : "torchtitan 9dec370 parallelize_llama.py l.79-110: mixed precision is FSDP2's "
                "MixedPrecisionPolicy, applied only when dp_shard x cp > 1; DDP and a single "
                "rank run the fp32 model train.py l.110-111 builds, with no autocast";
  d.push_back({"dtype", sharded ? "\"bf16\"" : "\"fp32\"", mp});
  d.push_back({"param_dtype", "\"fp32\"", mp});
  d.push_back({"grad_dtype", "\"fp32\"", mp});
  d.push_back({"master_weights", "false", mp});
  d.push_back({"optimizer_impl", "\"foreach\"",
               "torchtitan 9dec370 torchtitan/optimizer.py l.132-138: fused = "
               "job_config.optimizer.fused (config_manager.py l.194: store_true, off), foreach = "
               "not fused; one AdamW over the model part's local shards"});
  if (c.par.tp > 1)
    d.push_back({"loss", "\"parallel\"",
                 "torchtitan 9dec370 train.py l.57 and parallel_dims.py l.119-120: loss "
                 "parallel whenever tp > 1 (training.disable_loss_parallel off); "
                 "parallelize_llama.py l.138-141: the head's output stays Shard(-1); utils.py "
                 "l.196-201: cross_entropy runs under torch's loss_parallel()"});
  else
    d.push_back({"loss", "\"eager\"",
                 "torchtitan 9dec370 train.py l.131-138: cross_entropy(pred.flatten(0, 1)"
                 ".float(), labels.flatten(0, 1)); compiling the loss turned off (PR #755)"});
  d.push_back({"recompute", "\"layers:KC\"",
               "torchtitan 9dec370 config_manager.py l.515-524: activation_checkpoint.mode "
               "'selective', selective_ac_option '2' (parallelize_llama.py l.277-285: every "
               "second block fully checkpointed, the others keep everything)"});
  const char* fsdp =
      "torchtitan 9dec370 parallelize_llama.py l.79-85: fully_shard when dp_shard > 1 or "
      "cp > 1, over the dp_shard_cp mesh (parallel_dims.py l.68-88 flattens dp_shard x cp; "
      "with dp_replicate > 1 the mesh is (dp_replicate, dp_shard_cp), HSDP), else DDP";
  d.push_back({"shard_group", "\"dp-cp\"", fsdp});
  if (c.par.tp > 1)
    d.push_back({"sp", "true",
                 "torchtitan 9dec370 parallelize_llama.py apply_tp l.117-190: the norms run "
                 "SequenceParallel() and the blocks' inputs are Shard(1) (sequence "
                 "parallelism whenever tp > 1)"});
  const int zero = given("zero") ? c.par.zero : (sharded ? 3 : 0);
  d.push_back({"zero", sharded ? "3" : "0", fsdp});
  if (!sharded && c.par.dp > 1) {
    // DDP: composable replicate() with bucket_cap_mb=100 over DDP's default
    // gradient_as_bucket_view=False: its buckets copy every gradient for the whole run, and
    // the reduction happens inside them (no further bucket).
    const char* ddp =
        "torchtitan 9dec370 parallelize_llama.py l.342-356: replicate(model, "
        "device_mesh=dp_mesh, bucket_cap_mb=100), DistributedDataParallel's "
        "gradient_as_bucket_view=False";
    d.push_back({"ddp_bucket_view", "false", ddp});
    d.push_back({"grad_bucket_bytes", "0", ddp});
  }
  if (zero == 3 && c.par.pp > 1) {
    d.push_back({"reshard_after_forward", "false",
                 "torchtitan 9dec370 parallelize_llama.py l.325-339: reshard_after_forward = "
                 "False when pipeline parallel ('avoid per-microbatch all-gathers')"});
    d.push_back({"accumulate_unsharded", "true",
                 "torch 2.6.0 distributed/pipelining/stage.py l.636-646: every micro-batch's "
                 "backward runs set_reshard_after_backward(False) and "
                 "set_requires_gradient_sync(False); only the last syncs"});
  }
}

void deepspeed_defaults(const TrainConfig& c, const std::function<bool(const char*)>& given,
                        std::vector<FrameworkDefault>& d) {
  // DeepSpeed v0.16.0 (e5570b10, 2024-11-25) running the user's module as it is.
  d.push_back({"profile", "\"hf\"",
               "DeepSpeed v0.16.0 runtime/engine.py: the engine calls the user's module "
               "unchanged (most often a transformers model through its Trainer integration)"});
  // bf16 and fp16 are off unless the DeepSpeed config enables them: fp32 training.
  const bool bf16 = given("dtype") && c.act_dtype == DType::kBf16;
  if (!given("dtype"))
    d.push_back({"dtype", "\"fp32\"",
                 "DeepSpeed v0.16.0 runtime/constants.py l.127 BFLOAT16_ENABLED_DEFAULT = "
                 "False, l.154 FP16_ENABLED_DEFAULT = False"});
  d.push_back({"param_dtype", bf16 ? "\"bf16\"" : "\"fp32\"",
               bf16 ? "DeepSpeed v0.16.0 runtime/engine.py l.1154-1157: bf16 enabled casts "
                      "the module, self.module.bfloat16()"
                    : "DeepSpeed v0.16.0 runtime/engine.py: without bf16 or fp16 the module "
                      "stays in fp32"});
  // peft's adapters are made before DeepSpeed wraps the model, whose cast takes them along.
  if (bf16 && c.lora.on() && !given("lora_dtype"))
    d.push_back({"lora_dtype", "\"bf16\"",
                 "DeepSpeed v0.16.0 runtime/engine.py l.1154-1157: bf16 enabled casts the whole "
                 "module, self.module.bfloat16(), peft's adapters with it"});
  d.push_back({"master_weights", bf16 ? "true" : "false",
               bf16 ? "DeepSpeed v0.16.0 runtime/zero/stage_1_and_2.py l.393-394 and "
                      "stage3.py l.900-901: an fp32 copy of this rank's partition"
                    : "DeepSpeed v0.16.0: fp32 parameters are the optimizer's own"});
  const int zero = given("zero") ? c.par.zero : 0;
  d.push_back({"grad_dtype", bf16 ? "\"bf16\"" : "\"fp32\"",
               "DeepSpeed v0.16.0 runtime/engine.py l.943-947 get_data_types: "
               "grad_accum_dtype None is the model's dtype under ZeRO (fp32 only for bf16 "
               "without ZeRO)"});
  d.push_back(
      {"zero", "0", "DeepSpeed v0.16.0 runtime/zero/config.py l.89: stage: ZeroStageEnum = 0"});
  d.push_back({"optimizer_impl", "\"fused\"",
               "DeepSpeed v0.16.0 runtime/engine.py l.1361: optimizer type Adam/AdamW builds "
               "deepspeed.ops.adam.FusedAdam (multi_tensor_adam, in place)"});
  d.push_back({"shard_group", "\"dp\"",
               "DeepSpeed v0.16.0 utils/groups.py l.517-523: ZeRO shards over "
               "seq_data_parallel_group, the data-parallel ranks"});
  // The gradient bucket: reduce_bucket_size 5e8 elements in the gradients' dtype, one buffer
  // (overlap_comm is off below stage 3), or 5e8-element all-reduce chunks without ZeRO.
  d.push_back({"grad_bucket_bytes", bf16 ? "1000000000" : "2000000000",
               zero >= 1 ? "DeepSpeed v0.16.0 runtime/zero/config.py l.107 "
                           "reduce_bucket_size 5e8, l.336 overlap_comm only for stage 3; "
                           "stage_1_and_2.py l.2040-2051 and stage3.py l.528-531: a bucket "
                           "of reduce_bucket_size elements in the gradients' dtype"
                         : "DeepSpeed v0.16.0 runtime/engine.py l.110 "
                           "MEMORY_OPT_ALLREDUCE_SIZE = 500000000: gradients flattened and "
                           "all-reduced in chunks of 5e8 elements"});
}

// verl at b178a3c (2026-01-29): the FSDP actor of its PPO/GRPO trainer (strategy fsdp, the
// defaults of verl/trainer/config/_generated_ppo_trainer.yaml).
void verl_defaults(const TrainConfig& c, const std::function<bool(const char*)>& given,
                   std::vector<FrameworkDefault>& d) {
  const char* mp =
      "verl b178a3c fsdp_workers.py l.324-326 (model_dtype fp32: the actor is built in fp32) and "
      "l.493-503 (MixedPrecision(param_dtype=bf16, reduce_dtype=fp32)): fp32 shards computed "
      "in bf16";
  d.push_back({"profile", "\"hf\"",
               "verl b178a3c fsdp_workers.py l.331-333: AutoModelForCausalLM with "
               "attn_implementation flash_attention_2 (the hf profile's records)"});
  d.push_back({"attention", "\"flash\"", "verl b178a3c fsdp_workers.py l.331 (flash_attention_2)"});
  d.push_back({"dtype", "\"bf16\"", mp});
  d.push_back({"param_dtype", "\"fp32\"", mp});
  d.push_back({"grad_dtype", "\"fp32\"", mp});
  d.push_back({"master_weights", "false", mp});
  d.push_back({"zero", "3",
               "verl b178a3c fsdp_workers.py l.108-124, 521-535: FULL_SHARD over the data-parallel "
               "ranks (fsdp_size -1)"});
  d.push_back({"fsdp_version", "1",
               "verl b178a3c trainer/config/actor/dp_actor.yaml: strategy fsdp (FSDP1, "
               "fsdp_workers.py l.527-539); strategy fsdp2 is fully_shard (l.540-560)"});
  d.push_back({"optimizer_impl", "\"foreach\"",
               "verl b178a3c optim/fsdp.yaml: torch.optim AdamW (foreach on CUDA)"});
  d.push_back({"loss", "\"logprob\"",
               "verl b178a3c dp_actor.py l.255-270: logprobs_from_logits (flash-attn's cross "
               "entropy) over the unpadded logits; actor.entropy_coeff 0 (no entropy)"});
  d.push_back({"recompute", "\"full\"",
               "verl b178a3c model/hf_model.yaml: enable_gradient_checkpointing True (every "
               "decoder layer checkpointed)"});
  // LoRA (actor_rollout_ref.model.lora_rank > 0): peft's "all-linear", every linear of the
  // decoder layers (a gated MLP's three), lm_head excluded.
  if (c.lora.on() && !given("lora_targets"))
    d.push_back({"lora_targets",
                 "[\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\", \"gate_proj\", "
                 "\"up_proj\", \"down_proj\"]",
                 "verl b178a3c _generated_ppo_trainer.yaml l.309: target_modules all-linear "
                 "(fsdp_workers.py l.463-471: peft LoraConfig, bias none)"});
}

void hf_trainer_defaults(const TrainConfig& c, const std::function<bool(const char*)>& given,
                         std::vector<FrameworkDefault>& d) {
  // transformers' Trainer (training_args.py and trainer.py at 9feae5fb, 4.48.0.dev0) with
  // accelerate 1.2.1, on a model as from_pretrained loads it.
  constexpr const char* kArgs =
      "transformers 9feae5fb training_args.py TrainingArguments: bf16 = False, fp16 = False";
  const bool bf16 = given("dtype") && c.act_dtype == DType::kBf16;
  d.push_back(
      {"profile", "\"hf\"", "transformers' eager modules (the hf profile's measured records)"});
  if (!given("dtype")) d.push_back({"dtype", "\"fp32\"", kArgs});
  // from_pretrained without torch_dtype loads fp32; dtype bf16 with fp32 parameters is the
  // Trainer's bf16 = True autocast, which validate.cpp refuses by name.
  d.push_back({"param_dtype", "\"fp32\"",
               "transformers 9feae5fb modeling_utils.py from_pretrained: torch_dtype None "
               "loads the model in torch.float (fp32)"});
  const bool bf16_params = bf16 && given("param_dtype") && c.param_dtype == DType::kBf16;
  const char* w = bf16_params ? "\"bf16\"" : "\"fp32\"";
  d.push_back({"grad_dtype", w, "torch autograd: a parameter's gradient has its dtype"});
  d.push_back({"master_weights", "false",
               "the Trainer's torch.optim optimizer updates the parameters themselves"});
  d.push_back({"optimizer_dtype", w,
               "transformers 9feae5fb TrainingArguments optim = 'adamw_torch': torch AdamW's "
               "exp_avg and exp_avg_sq are zeros_like(p), in the parameters' dtype"});
  d.push_back({"optimizer_impl", "\"foreach\"",
               "transformers 9feae5fb TrainingArguments optim = 'adamw_torch': torch.optim.AdamW "
               "without foreach or fused, which torch 2.6 runs as foreach on CUDA "
               "(_default_to_fused_or_foreach)"});
  d.push_back({"loss", "\"eager\"",
               "transformers loss_utils.py ForCausalLMLoss: cross_entropy on "
               "logits.float()"});
  d.push_back({"recompute", "\"none\"",
               "transformers 9feae5fb TrainingArguments gradient_checkpointing = False"});
  d.push_back({"zero", "0",
               "the Trainer wraps the model in DDP unless DeepSpeed or FSDP is "
               "configured"});
  const char* ddp =
      "accelerate 1.2.1 DistributedDataParallelKwargs gradient_as_bucket_view = False (the "
      "Trainer never sets it; trainer.py _wrap_model passes bucket_cap_mb only)";
  d.push_back({"ddp_bucket_view", "false", ddp});
  // DDP reduces inside its buckets, which static.ddp_buckets_bytes already counts.
  d.push_back({"grad_bucket_bytes", "0", ddp});
}

}  // namespace

// One function per framework, each in the order its keys are applied.
std::vector<FrameworkDefault> framework_defaults(const TrainConfig& c,
                                                 const std::function<bool(const char*)>& given) {
  std::vector<FrameworkDefault> d;
  switch (c.framework) {
    case Framework::kPlain:
      break;
    case Framework::kMegatronLm:
      megatron_defaults(d);
      break;
    case Framework::kTorchtitan:
      torchtitan_defaults(c, given, d);
      break;
    case Framework::kDeepspeed:
      deepspeed_defaults(c, given, d);
      break;
    case Framework::kHfTrainer:
      hf_trainer_defaults(c, given, d);
      break;
    case Framework::kVerl:
      verl_defaults(c, given, d);
      break;
  }
  return d;
}

}  // namespace actmem

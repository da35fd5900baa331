// A torchtitan job config TOML for one configuration (emit.hpp): the keys of torchtitan 9dec370's
// config_manager.py that say the layout, batch, precision, schedule, checkpointing and float8,
// written only when what torchtitan would run for them is the configuration estimated; read back
// by json_torchtitan.cpp to the same estimate.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "actmem/frameworks/emit.hpp"
#include "actmem/names/names.hpp"
#include "actmem/setup/policy.hpp"

namespace actmem {

namespace {

Error cannot(const std::string& what) {
  return make_error("invalid_value", "emit", "emit: torchtitan: " + what);
}

std::string quoted(const std::string& s) {
  return "\"" + s + "\"";
}

// What torchtitan 9dec370 cannot run whatever the layout: the model, the step's modules, loss,
// optimizer and offload.
std::optional<Error> check_model_and_step(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  for (const LayerKind& k : m.kinds)
    if (!k.has_attention() || k.is_moe() || k.is_mla())
      return cannot("torchtitan 9dec370 trains Llama 3 models; " + m.name +
                    " has MoE, latent-attention or Mamba layers");
  if (c.profile != Profile::kPytorch)
    return cannot(std::string("profile ") + profile_name(c.profile) +
                  ": torchtitan runs plain PyTorch modules (the pytorch profile)");
  if (c.attention != Attention::kFlash)
    return cannot(std::string("attention ") + attention_name(c.attention) +
                  ": torchtitan calls scaled_dot_product_attention, flash in bf16 (allowed: "
                  "flash)");
  const double ad = c.attention_dropout >= 0 ? c.attention_dropout : m.attention_dropout;
  const double hd = c.hidden_dropout >= 0 ? c.hidden_dropout : m.hidden_dropout;
  if (ad != 0 || hd != 0)
    return cannot("dropout: torchtitan's Llama has none (allowed: attention and hidden dropout 0)");
  const LossImpl tt_loss = p.tp > 1 ? LossImpl::kParallel : LossImpl::kEager;
  if (c.loss.impl != tt_loss)
    return cannot("loss " + loss_name(c.loss) +
                  ": torchtitan 9dec370 computes cross_entropy on the fp32 logits, vocabulary-"
                  "parallel under tensor parallelism (allowed: " +
                  loss_name(Loss{tt_loss}) + " at tp " + std::to_string(p.tp) + ")");
  if (c.lora.rank > 0) return cannot("LoRA: torchtitan 9dec370 trains every weight");
  if (c.optimizer != Optimizer::kAdamW)
    return cannot(std::string("optimizer ") + optimizer_name(c.optimizer) +
                  ": torchtitan 9dec370 builds Adam or AdamW (allowed: adamw)");
  if (c.optimizer_offload || any_offload(c.recompute))
    return cannot("offload: torchtitan 9dec370 has no activation or optimizer offload");
  if (c.optimizer_impl == OptimizerImpl::kForLoop)
    return cannot(
        "optimizer_impl for-loop: torchtitan 9dec370 steps AdamW foreach or fused "
        "(optimizer.py l.132-138; allowed: foreach, fused)");
  if (c.async_tp && !c.compile)
    return cannot(
        "async_tp: torchtitan's async TP needs torch.compile ('Async TP requires "
        "--training.compile'); give compile true");
  if (p.ep > 1) return cannot("ep: torchtitan 9dec370 has no expert parallelism");
  if (c.mtp) return cannot("mtp: torchtitan 9dec370 trains no multi-token prediction");
  return std::nullopt;
}

// The data parallelism torchtitan applies: its ZeRO stage, shard group, mesh and sequence
// parallelism.
std::optional<Error> check_data_parallel(const Parallel& p, bool fsdp,
                                         const std::string& dp_words) {
  if (p.zero != (fsdp ? 3 : 0))
    return cannot("zero " + std::to_string(p.zero) + ": torchtitan runs " + dp_words + ", zero " +
                  (fsdp ? "3" : "0"));
  if (fsdp && p.shard_group != ShardGroup::kDpCp)
    return cannot("shard_group dp: FSDP2 shards over dp_shard x cp (allowed: dp-cp)");
  if (!fsdp && p.dp > 1 && (p.tp > 1 || p.pp > 1))
    return cannot(
        "DDP with tensor or pipeline parallelism: torchtitan runs DDP on a 1-D mesh "
        "only");
  if (p.tp > 1 && !p.sp)
    return cannot(
        "sp false: torchtitan's tensor parallelism shards the norms' sequence "
        "(allowed: sp with tp > 1)");
  return std::nullopt;
}

// Precision, FSDP2's residency, DDP's buckets and float8 under that data parallelism.
std::optional<Error> check_precision(const TrainConfig& c, bool fsdp, std::uint64_t shard,
                                     const std::string& dp_words) {
  const Parallel& p = c.par;
  // Precision: FSDP2's MixedPrecisionPolicy over fp32 parameters, or fp32 throughout.
  const bool bf16 = c.act_dtype == DType::kBf16;
  if (c.param_dtype != DType::kFp32 || c.grad_dtype != DType::kFp32 || c.master_weights ||
      c.optimizer_dtype != DType::kFp32 || !(c.act_dtype == DType::kFp32 || (bf16 && fsdp)))
    return cannot(std::string("dtype ") + dtype_name(c.act_dtype) + ", param_dtype " +
                  dtype_name(c.param_dtype) + ", grad_dtype " + dtype_name(c.grad_dtype) +
                  (c.master_weights ? ", master weights" : "") + ": torchtitan under " + dp_words +
                  " keeps fp32 parameters, gradients and states" +
                  (fsdp ? " and computes in bf16 or fp32" : " and computes in fp32"));
  // FSDP2's residency under pipelining (parallelize_llama.py l.325-339; torch 2.6 stage.py).
  const bool pp_fsdp = fsdp && p.pp > 1;
  if (fsdp && (c.reshard_after_forward == pp_fsdp || c.accumulate_unsharded != pp_fsdp))
    return cannot(std::string("reshard_after_forward ") +
                  (c.reshard_after_forward ? "true" : "false") + ", accumulate_unsharded " +
                  (c.accumulate_unsharded ? "true" : "false") + ": torchtitan's FSDP2 " +
                  (pp_fsdp ? "keeps each stage's parameters and gradients unsharded under "
                             "pipelining (false, true)"
                           : "reshards after forward without pipelining (true, false)"));
  if (!fsdp && p.dp > 1 && (c.ddp_bucket_view || c.grad_bucket != 0))
    return cannot(
        "DDP buckets: torchtitan's replicate() keeps DDP's buckets beside the "
        "gradients (allowed: ddp_bucket_view false, grad_bucket_bytes 0)");
  if (c.float8 != Float8::kNone && c.float8 != Float8::kTensorwise)
    return cannot(std::string("float8 ") + float8_name(c.float8) +
                  ": torchtitan 9dec370 runs torchao's dynamic tensorwise scaling (allowed: none, "
                  "tensorwise)");
  if (c.float8_all_gather && !(c.float8 == Float8::kTensorwise && shard > 1))
    return cannot(
        "float8_all_gather: torchtitan gathers in float8 with tensorwise float8 when "
        "dp_shard > 1 only");
  return std::nullopt;
}

// The pipeline: torch 2.6's schedule names, micro-batches and each stage's first layer.
std::optional<Error> pipeline_stages(const ModelSpec& m, const TrainConfig& c,
                                     std::string* schedule, std::vector<std::uint64_t>* stages) {
  const Parallel& p = c.par;
  if (p.pp > 1) {
    const Schedule s = effective_schedule(c);
    if (s == Schedule::k1F1B)
      *schedule = "1F1B";
    else if (s == Schedule::kGpipe)
      *schedule = "GPipe";
    else if (s == Schedule::kInterleaved)
      *schedule = "Interleaved1F1B";
    else
      return cannot(std::string("schedule ") + schedule_name(c.schedule) +
                    ": torchtitan 9dec370 runs torch's 1F1B, GPipe and Interleaved1F1B as "
                    "modelled (allowed: 1f1b, gpipe, interleaved)");
    if (s == Schedule::kInterleaved && c.grad_accum % p.pp != 0)
      return cannot("micro_batches " + std::to_string(c.grad_accum) +
                    " with interleaving: torch's Interleaved1F1B runs as modelled when they are "
                    "a multiple of pp");
    if (!c.layer_split.empty())
      *stages = c.layer_split;
    else
      stages->assign(p.pp * p.vpp, m.layers / (p.pp * p.vpp));
  } else if (c.grad_accum != 1) {
    return cannot("micro_batches " + std::to_string(c.grad_accum) +
                  ": torchtitan 9dec370 accumulates no gradients without pipelining (allowed: 1)");
  }
  return std::nullopt;
}

// Activation checkpointing: none, full, every N-th block (selective N), or torchtitan's op list.
std::optional<Error> checkpoint_mode(const ModelSpec& m, const TrainConfig& c, std::string* mode,
                                     std::string* option) {
  const Parallel& p = c.par;
  const Recompute& r = c.recompute;
  if (r.kind == RecomputeKind::kNone) {
    *mode = "none";
  } else if (r.kind == RecomputeKind::kFull) {
    *mode = "full";
  } else if (r.kind == RecomputeKind::kCustom && r.op_policy == "torchtitan") {
    *mode = "selective";
    *option = "op";
  } else if (r.kind == RecomputeKind::kPattern && r.pattern.size() >= 2 &&
             r.pattern.back() == 'C' &&
             std::all_of(r.pattern.begin(), r.pattern.end() - 1,
                         [](char ch) { return ch == 'K'; })) {
    const std::uint64_t k = r.pattern.size();
    const std::uint64_t chunk = m.layers / (p.pp * p.vpp);
    if (p.vpp > 1 && chunk % k != 0)
      return cannot("recompute " + recompute_name(r) + " with " + std::to_string(p.vpp) +
                    " chunks of " + std::to_string(chunk) +
                    " layers per rank: torchtitan's block count runs on across a rank's chunks");
    *mode = "selective";
    *option = std::to_string(k);
  } else if (r.kind == RecomputeKind::kPattern &&
             r.pattern.find_first_not_of('K') == std::string::npos) {
    *mode = "none";
  } else if (r.kind == RecomputeKind::kPattern &&
             r.pattern.find_first_not_of('C') == std::string::npos) {
    *mode = "full";
  } else {
    return cannot("recompute " + recompute_name(r) +
                  ": torchtitan checkpoints no blocks, every block, every N-th block or its op "
                  "list (allowed: none, full, layers:K..KC, op:torchtitan)");
  }
  return std::nullopt;
}

// The TOML itself, in config_manager.py's sections.
std::string toml_text(const ModelSpec& m, const TrainConfig& c, const std::string& dp_words,
                      bool bf16, const std::string& schedule,
                      const std::vector<std::uint64_t>& stages, const std::string& mode,
                      const std::string& option) {
  const Parallel& p = c.par;
  const std::uint64_t rep = p.dp_replicate, shard = p.dp / p.dp_replicate;
  std::string t =
      "# torchtitan job config (the layout of torchtitan 9dec370, 2024-12-26) written by actmem\n"
      "# for " +
      m.name +
      ". Merge into your train config; [model] name, flavor and tokenizer are\n"
      "# yours. Memory: " +
      dp_words + ".\n";
  t += "[model]\nnorm_type = \"rmsnorm\"\n\n[optimizer]\nname = \"AdamW\"\n";
  if (c.optimizer_impl == OptimizerImpl::kFused) t += "fused = true\n";
  t += "\n[training]\n";
  t += "batch_size = " + std::to_string(c.micro_batch * c.grad_accum) + "\n";
  t += "seq_len = " + std::to_string(c.seq) + "\n";
  t += "data_parallel_replicate_degree = " + std::to_string(rep) + "\n";
  t += "data_parallel_shard_degree = " + std::to_string(shard) + "\n";
  t += "tensor_parallel_degree = " + std::to_string(p.tp) + "\n";
  t += std::string("mixed_precision_param = ") + (bf16 ? "\"bfloat16\"" : "\"float32\"") + "\n";
  t += std::string("mixed_precision_reduce = \"float32\"\ncompile = ") +
       (c.compile ? "true" : "false") + "\n\n[experimental]\n";
  t += "context_parallel_degree = " + std::to_string(p.cp) + "\n";
  if (c.async_tp) t += "enable_async_tensor_parallel = true\n";
  t += "pipeline_parallel_degree = " + std::to_string(p.pp) + "\n";
  if (p.pp > 1) {
    t += "pipeline_parallel_schedule = " + quoted(schedule) + "\n";
    t += "pipeline_parallel_microbatches = " + std::to_string(c.grad_accum) + "\n";
    t += "pipeline_parallel_split_points = [";
    std::uint64_t at = 0;
    for (std::size_t i = 0; i + 1 < stages.size(); ++i) {
      at += stages[i];
      t += (i ? ", " : "") + quoted("layers." + std::to_string(at));
    }
    t += "]\n";
  }
  t += "\n[activation_checkpoint]\nmode = " + quoted(mode) + "\n";
  if (!option.empty()) t += "selective_ac_option = " + quoted(option) + "\n";
  t += "\n[float8]\n";
  t += std::string("enable_float8_linear = ") +
       (c.float8 == Float8::kTensorwise ? "true" : "false") + "\n";
  if (c.float8 == Float8::kTensorwise)
    t += std::string("enable_fsdp_float8_all_gather = ") +
         (c.float8_all_gather ? "true" : "false") + "\n";
  return t;
}

}  // namespace

Result<std::string> torchtitan_toml(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (auto e = check_model_and_step(m, c)) return *e;
  // Which data parallelism torchtitan applies (parallelize_llama.py l.79-110): FSDP2 (HSDP with
  // replicas) when dp_shard x cp > 1, DDP when only replicas, nothing on one rank.
  const std::uint64_t shard = p.dp / p.dp_replicate;
  const bool fsdp = torchtitan_fsdp(p);
  const std::string dp_words =
      fsdp ? "FSDP2 (dp_shard x cp = " + std::to_string(shard * p.cp) + ")"
           : std::string(p.dp > 1 ? "DDP (dp_shard x cp = 1)" : "one data-parallel rank");
  if (auto e = check_data_parallel(p, fsdp, dp_words)) return *e;
  if (auto e = check_precision(c, fsdp, shard, dp_words)) return *e;
  std::string schedule;
  std::vector<std::uint64_t> stages;  // layers per stage, in stage order
  if (auto e = pipeline_stages(m, c, &schedule, &stages)) return *e;
  std::string mode, option;
  if (auto e = checkpoint_mode(m, c, &mode, &option)) return *e;
  const bool bf16 = c.act_dtype == DType::kBf16;
  return toml_text(m, c, dp_words, bf16, schedule, stages, mode, option);
}

}  // namespace actmem

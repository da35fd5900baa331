// Structural validation of a model and config: every rejection names the field, the value and what
// is allowed.
#include <string>
#include <vector>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "actmem/config/sharding.hpp"
#include "actmem/core/limits.hpp"
#include "actmem/setup/setup.hpp"

namespace actmem {

namespace {

// The divisors of n in increasing order (the first 16), found below sqrt(n) so a large prime
// cannot stall the error message.
std::string divisors_of(std::uint64_t n) {
  std::vector<std::uint64_t> lo, hi;
  for (std::uint64_t d = 1; d <= n / d; ++d)
    if (n % d == 0) {
      lo.push_back(d);
      if (d != n / d) hi.push_back(n / d);
    }
  lo.insert(lo.end(), hi.rbegin(), hi.rend());
  std::string s;
  for (std::size_t i = 0; i < lo.size() && i < 16; ++i)
    s += (i ? ", " : "") + std::to_string(lo[i]);
  if (lo.size() > 16) s += ", ...";
  return s;
}

Error bad(const std::string& field, const std::string& msg) {
  return make_error("invalid_value", field, field + ": " + msg);
}

// A dimension that must be a positive integer below 2^40.
std::optional<Error> positive_dim(const std::string& field, std::uint64_t v) {
  if (v == 0) return bad(field, "must be a positive integer, got 0");
  if (v > kMaxDim) return bad(field, std::to_string(v) + " is larger than the supported 2^40");
  return std::nullopt;
}

// The dimensions of one layer kind; fields are named under the kind's prefix ("model" for the
// top-level keys, "model.layer_kinds.NAME" for a kind of a stack).
std::optional<Error> validate_mamba(const LayerKind& k) {
  const std::string f = k.field + ".";
  const MambaSpec& x = k.mamba;
  const std::string heads = x.heads_key(), head_dim = x.head_dim_key(), state = x.state_key();
  for (const auto& [key, v] : {std::pair<std::string, std::uint64_t>{heads, x.heads},
                               {head_dim, x.head_dim},
                               {state, x.state},
                               {"n_groups", x.groups},
                               {"conv_kernel", x.conv_kernel},
                               {"chunk_size", x.chunk}})
    if (auto err = positive_dim(f + key, v)) return err;
  // Every width the mixer builds (I, I + 2GN, 2I + 2GN + H) stays below 2^42.
  if (x.heads > kMaxDim / x.head_dim)
    return bad(f + head_dim, heads + " x " + head_dim + " = " + std::to_string(x.heads) + " x " +
                                 std::to_string(x.head_dim) + " is larger than the supported 2^40");
  if (x.groups > kMaxDim / x.state)
    return bad(f + "n_groups", "n_groups x " + state + " = " + std::to_string(x.groups) + " x " +
                                   std::to_string(x.state) + " is larger than the supported 2^40");
  if (x.heads % x.groups != 0)
    return bad(f + "n_groups",
               std::to_string(x.groups) + " does not divide " + heads + "=" +
                   std::to_string(x.heads) +
                   " (each group's B and C serve whole heads); allowed: " + divisors_of(x.heads));
  return std::nullopt;
}

std::optional<Error> validate_kind(const LayerKind& k) {
  const std::string f = k.field + ".";
  if (k.mixer == Mixer::kNone && !k.has_ffn)
    return bad(k.field, "layer kind '" + k.name + "' has neither a mixer nor an FFN");
  if (k.is_mamba())
    if (auto err = validate_mamba(k)) return err;
  if (k.has_attention())
    for (const auto& [key, v] :
         {std::pair<const char*, std::uint64_t>{"num_attention_heads", k.heads},
          {"num_key_value_heads", k.kv_heads},
          {"head_dim", k.head_dim}})
      if (auto err = positive_dim(f + key, v)) return err;
  if (k.has_ffn && !k.is_moe() && k.ffn_hidden == 0)
    return bad(f + "intermediate_size", "must be a positive integer, got 0");
  if (k.ffn_hidden > kMaxDim)
    return bad(f + "intermediate_size",
               std::to_string(k.ffn_hidden) + " is larger than the supported 2^40");
  if (k.has_attention() && k.heads % k.kv_heads != 0)
    return bad(f + "num_key_value_heads",
               std::to_string(k.kv_heads) + " does not divide num_attention_heads=" +
                   std::to_string(k.heads) + "; allowed: " + divisors_of(k.heads));
  if (k.is_moe()) {
    if (k.moe.top_k == 0 || k.moe.top_k > k.moe.experts)
      return bad(f + "num_experts_per_tok",
                 std::to_string(k.moe.top_k) +
                     " must be between 1 and num_local_experts=" + std::to_string(k.moe.experts));
    if (k.moe.expert_ffn == 0 || k.moe.expert_ffn > kMaxDim)
      return bad(f + "moe_intermediate_size", "must be a positive integer below 2^40");
    if (k.moe.experts > kMaxDim)
      return bad(f + "num_local_experts",
                 std::to_string(k.moe.experts) + " is larger than the supported 2^40");
    if (k.moe.shared_experts > 1024)
      return bad(f + "num_shared_experts",
                 std::to_string(k.moe.shared_experts) + " is more than the supported 1024");
    if (k.moe.shared_expert_ffn > kMaxDim)
      return bad(f + "shared_expert_intermediate_size",
                 std::to_string(k.moe.shared_expert_ffn) + " is larger than the supported 2^40");
    if (!(k.moe.capacity_factor >= 0.0 && k.moe.capacity_factor <= 1024.0))
      return bad(f + "capacity_factor", "must be 0 (dropless) or a positive number up to 1024");
  }
  return std::nullopt;
}

// How tensor and expert parallelism split one layer kind.
std::optional<Error> validate_kind_split(const LayerKind& k, const Parallel& p, bool name_kind) {
  const std::string of = name_kind ? " (layer kind '" + k.name + "')" : "";
  // Megatron-LM MambaMixer: nheads and ngroups are each split over the TP ranks.
  if (k.is_mamba() && (k.mamba.heads % p.tp != 0 || k.mamba.groups % p.tp != 0))
    return bad("config.tp",
               "tp=" + std::to_string(p.tp) + " does not divide the Mamba layers' " +
                   (k.mamba.heads % p.tp != 0
                        ? std::string(k.mamba.heads_key()) + "=" + std::to_string(k.mamba.heads)
                        : "n_groups=" + std::to_string(k.mamba.groups)) +
                   of + "; allowed: " + divisors_of(std::gcd(k.mamba.heads, k.mamba.groups)));
  if (k.has_attention() && k.heads % p.tp != 0)
    return bad("config.tp", "tp=" + std::to_string(p.tp) +
                                " does not divide num_attention_heads=" + std::to_string(k.heads) +
                                of + "; allowed: " + divisors_of(k.heads));
  if (k.has_attention() && k.kv_heads % p.tp != 0 && p.tp % k.kv_heads != 0)
    return bad("config.tp", "tp=" + std::to_string(p.tp) +
                                " neither divides nor is a multiple of num_key_value_heads=" +
                                std::to_string(k.kv_heads) + of);
  if (k.has_ffn && !k.is_moe() && k.ffn_hidden % p.tp != 0)
    return bad("config.tp", "tp=" + std::to_string(p.tp) + " does not divide intermediate_size=" +
                                std::to_string(k.ffn_hidden) + of);
  if (k.is_moe() && k.moe.expert_ffn % p.tp != 0)
    return bad("config.tp", "tp=" + std::to_string(p.tp) + " does not divide the expert width " +
                                std::to_string(k.moe.expert_ffn) + of);
  if (k.is_moe() && (k.moe.shared_experts * k.moe.shared_expert_ffn) % p.tp != 0)
    return bad("config.tp",
               "tp=" + std::to_string(p.tp) + " does not divide the shared-expert width" + of);
  if (k.is_moe() && k.moe.experts % p.ep != 0)
    return bad("config.ep", "ep=" + std::to_string(p.ep) + " does not divide num_local_experts=" +
                                std::to_string(k.moe.experts) + of +
                                "; allowed: " + divisors_of(k.moe.experts));
  return std::nullopt;
}

// One field that must be a positive dimension.
struct Positive {
  const char* field;
  std::uint64_t v;
};

// The model's dimensions, layer kinds and stack, and position table.
std::optional<Error> validate_model(const ModelSpec& m, const TrainConfig&) {
  const Positive model_dims[] = {{"model.num_hidden_layers", m.layers},
                                 {"model.hidden_size", m.hidden},
                                 {"model.vocab_size", m.vocab}};
  for (const auto& p : model_dims)
    if (auto err = positive_dim(p.field, p.v)) return err;
  if (m.kinds.empty() || m.kinds.size() > kMaxLayerKinds)
    return bad("model.layer_kinds", std::to_string(m.kinds.size()) +
                                        " layer kinds; allowed: 1 to " +
                                        std::to_string(kMaxLayerKinds));
  if (!m.stack.empty() && m.stack.size() != m.layers)
    return bad("model.layer_stack",
               "has " + std::to_string(m.stack.size()) +
                   " layers; it must have num_hidden_layers=" + std::to_string(m.layers));
  for (std::uint32_t ki : m.stack)
    if (ki >= m.kinds.size())
      return bad("model.layer_stack", "names layer kind " + std::to_string(ki) + " of " +
                                          std::to_string(m.kinds.size()));
  for (const LayerKind& k : m.kinds)
    if (auto err = validate_kind(k)) return err;
  if (m.pos == PosEncoding::kLearned && m.max_positions == 0)
    return bad("model.max_position_embeddings",
               "learned position embeddings need a positive table size");
  if (m.max_positions > kMaxDim)
    return bad("model.max_position_embeddings", "larger than the supported 2^40");
  // Every layer is a record the engine walks; real models have at most a few hundred.
  if (m.layers > kMaxLayers)
    return bad(
        "model.num_hidden_layers",
        std::to_string(m.layers) + " is more than the supported " + std::to_string(kMaxLayers));
  return std::nullopt;
}

// The batch geometry and parallel degrees: positive, bounded, no more stages than layers.
std::optional<Error> validate_degrees(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  const Positive cfg[] = {{"config.micro_batch", c.micro_batch},
                          {"config.seq", c.seq},
                          {"config.tp", p.tp},
                          {"config.pp", p.pp},
                          {"config.vpp", p.vpp},
                          {"config.cp", p.cp},
                          {"config.dp", p.dp},
                          {"config.ep", p.ep}};
  for (const auto& q : cfg)
    if (auto err = positive_dim(q.field, q.v)) return err;
  if (c.grad_accum > kMaxMicroBatches)
    return bad("config.grad_accum", std::to_string(c.grad_accum) +
                                        " micro-batches is more than the supported " +
                                        std::to_string(kMaxMicroBatches));
  // Every estimate simulates each stage's op sequence; bound the work so no input can stall the
  // engine (real runs: pp=64, vpp=8, 1024 micro-batches is 524,288).
  const std::uint64_t mb = default_micro_batches(c);
  std::uint64_t ops = 0;
  const bool wrapped =
      __builtin_mul_overflow(p.pp, p.vpp, &ops) || __builtin_mul_overflow(ops, mb, &ops);
  if (wrapped || ops > kMaxPipelineOps)
    return bad("config.micro_batches",
               "pp x vpp x micro-batches = " +
                   (wrapped ? std::string("more than 2^64") : std::to_string(ops)) +
                   " is more than the " + std::to_string(kMaxPipelineOps) +
                   " pipeline ops one estimate simulates");
  if (p.pp > m.layers)
    return bad("config.pp", "pp=" + std::to_string(p.pp) +
                                " is more than num_hidden_layers=" + std::to_string(m.layers));
  if (p.vpp > m.layers)
    return bad("config.vpp", "vpp=" + std::to_string(p.vpp) +
                                 " is more than num_hidden_layers=" + std::to_string(m.layers));
  return std::nullopt;
}

// GPU memory, seq against a learned position table, the ZeRO stage and the dropouts.
std::optional<Error> validate_ranges(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (c.gpu_bytes > kMaxBytes)
    return bad("config.gpu_memory_bytes", std::to_string(c.gpu_bytes) + " is larger than 2^63-1");
  if (m.pos == PosEncoding::kLearned && c.seq > m.max_positions)
    return bad("config.seq",
               "seq=" + std::to_string(c.seq) +
                   " is longer than the learned position table (max_position_embeddings=" +
                   std::to_string(m.max_positions) + ")");
  if (p.zero < 0 || p.zero > 3)
    return bad("config.zero", std::to_string(p.zero) + " is not a ZeRO stage; allowed: 0, 1, 2, 3");
  for (double d : {c.attention_dropout, c.hidden_dropout})
    if (!(d < 1.0) || (d < 0.0 && d != -1.0)) return bad("config.dropout", "must be in [0, 1)");
  if (!(m.attention_dropout >= 0.0 && m.attention_dropout < 1.0))
    return bad("model.attention_dropout", "must be in [0, 1)");
  if (!(m.hidden_dropout >= 0.0 && m.hidden_dropout < 1.0))
    return bad("model.hidden_dropout", "must be in [0, 1)");
  return std::nullopt;
}

// How tp, ep, sp and cp split the layers and the sequence.
std::optional<Error> validate_splits(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  for (const LayerKind& k : m.kinds)
    if (auto err = validate_kind_split(k, p, m.kinds.size() > 1)) return err;
  if (p.sp && p.tp > 1 && (c.seq / p.cp) % p.tp != 0)
    return bad("config.seq", "seq=" + std::to_string(c.seq) + " is not divisible by tp=" +
                                 std::to_string(p.tp) + " (x cp) as sequence parallelism requires");
  if (c.seq % p.cp != 0)
    return bad("config.cp",
               "cp=" + std::to_string(p.cp) + " does not divide seq=" + std::to_string(c.seq));
  return std::nullopt;
}

// Interleaving: vpp > 1 needs pp > 1, and the interleaved schedule needs vpp > 1.
std::optional<Error> validate_interleaving(const ModelSpec&, const TrainConfig& c) {
  const Parallel& p = c.par;
  // ZB-V and DualPipeV take vpp = 2 themselves (read/config.cpp): their pipeline is what is
  // missing.
  if (p.vpp > 1 && p.pp == 1 && is_v_shape(c.schedule))
    return bad("config.pp", std::string(schedule_name(c.schedule)) +
                                " places two chunks per rank in a V over the pipeline's ranks: it "
                                "needs pp > 1");
  if (p.vpp > 1 && p.pp == 1) return bad("config.vpp", "interleaving (vpp > 1) needs pp > 1");
  // Asked for by name, the interleaved schedule needs chunks to interleave: with vpp = 1 the
  // answer would be 1F1B's while saying "interleaved".
  if (c.schedule == Schedule::kInterleaved && p.vpp == 1)
    return bad("config.schedule",
               "interleaved needs vpp > 1 model chunks per pipeline rank (with vpp=1 it is 1f1b)");
  return std::nullopt;
}

// custom_keep is read only by the custom choice: given with another policy it would be ignored.
std::optional<Error> validate_custom_keep(const ModelSpec&, const TrainConfig& c) {
  const Recompute& rc = c.recompute;
  if (!rc.custom_keep.empty() && rc.kind != RecomputeKind::kCustom &&
      !(rc.kind == RecomputeKind::kPattern && rc.pattern.find('X') != std::string::npos))
    return bad("config.custom_keep",
               "is read only with recompute \"custom\" or a layers: pattern holding X");
  return std::nullopt;
}

// The split-backward schedules' shapes (split_schedule.hpp): what each one's code accepts.
std::optional<Error> validate_split_schedule(const ModelSpec&, const TrainConfig& c) {
  const Parallel& p = c.par;
  const Schedule s = c.schedule;
  if (!is_split_backward(s)) return std::nullopt;
  const std::string name = schedule_name(s);
  if ((s == Schedule::kZbH1 || s == Schedule::kDualPipe) && p.vpp != 1)
    return bad("config.vpp", name + " runs one stage per rank (vpp=1); got vpp=" +
                                 std::to_string(p.vpp) + ". allowed with vpp=2: zb-v, dualpipev");
  if (is_v_shape(s) && p.vpp != 2)
    return bad("config.vpp", name + " places two chunks per rank in a V: vpp must be 2; got vpp=" +
                                 std::to_string(p.vpp));
  if (s == Schedule::kDualPipe && (p.pp < 2 || p.pp % 2 != 0))
    return bad("config.pp",
               "dualpipe needs an even pp of at least 2 (half the micro-batches enter "
               "at each end); got pp=" +
                   std::to_string(p.pp));
  const std::uint64_t m = c.grad_accum;
  if (s == Schedule::kDualPipe && m != 0 && (m % 2 != 0 || m < 2 * p.pp))
    return bad("config.grad_accum",
               "dualpipe needs an even number of micro-batches, at least 2 x "
               "pp=" +
                   std::to_string(2 * p.pp) + "; got " + std::to_string(m));
  if (s == Schedule::kDualPipeV && m != 0 && m < 2 * p.pp)
    return bad("config.grad_accum", "dualpipev needs at least 2 x pp=" + std::to_string(2 * p.pp) +
                                        " micro-batches; got " + std::to_string(m));
  if (any_offload(c.recompute))
    return bad(c.recompute.offload ? "config.offload" : "config.recompute",
               name +
                   ": offloading under a split backward (when W's inputs "
                   "come back) is not modelled; allowed: offload false");
  return std::nullopt;
}

// The interleaved schedule runs its micro-batches in rounds of pp.
std::optional<Error> validate_interleaved_micro_batches(const ModelSpec&, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (p.vpp > 1 && !is_split_backward(c.schedule) && c.grad_accum != 0 && c.grad_accum % p.pp != 0)
    return bad("config.grad_accum", "the interleaved schedule needs micro-batches (" +
                                        std::to_string(c.grad_accum) +
                                        ") to be a multiple of pp=" + std::to_string(p.pp));
  return std::nullopt;
}

// dp and cp are each at most 2^40; their product must stay a count (sharding.hpp shard_ranks).
std::optional<Error> validate_shard_group(const ModelSpec&, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (p.shard_group == ShardGroup::kDpCp && p.cp > kMaxDim / p.dp)
    return bad("config.shard_group", "dp-cp: dp x cp = " + std::to_string(p.dp) + " x " +
                                         std::to_string(p.cp) + " is more than the supported 2^40");
  return std::nullopt;
}

// The loss implementations other than eager are PyTorch's (docs/frameworks.md, The loss).
std::optional<Error> validate_loss(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (c.response_len && !rl_loss(c.loss))
    return bad(
        "config.response_len",
        "response_len=" + std::to_string(c.response_len) +
            " is read only with an RL loss (loss logprob, logprob_torch, logprob_trl or value)");
  if (c.response_len &&
      (c.loss.impl == LossImpl::kDpoTrl || c.loss.impl == LossImpl::kLogprobOpenrlhf))
    return bad("config.response_len",
               "response_len=" + std::to_string(c.response_len) + " is not read by " +
                   loss_name(c.loss) +
                   ": its loss runs over every position of each sequence (DPO's log-probabilities, "
                   "OpenRLHF's action mask)");
  if (c.loss.impl == LossImpl::kDpoTrl && c.micro_batch % 2 != 0)
    return bad("config.micro_batch",
               "micro_batch=" + std::to_string(c.micro_batch) +
                   " with dpo_trl: DPO concatenates each pair's chosen and rejected sequences, "
                   "so the sequences per micro-batch are even (2 x per_device_train_batch_size)");
  if (c.response_len > c.seq)
    return bad("config.response_len", "response_len=" + std::to_string(c.response_len) +
                                          " is longer than seq=" + std::to_string(c.seq) +
                                          " (the prompt and response together)");
  if (c.loss.impl == LossImpl::kEager && c.framework == Framework::kTorchtitan && p.tp > 1)
    return bad("config.loss", "'eager' under torchtitan with tp " + std::to_string(p.tp) +
                                  " is training.disable_loss_parallel = true (the head's output "
                                  "gathered whole on every rank), which is not modelled; allowed: "
                                  "parallel (torchtitan's default under tensor parallelism)");
  if (c.loss.impl == LossImpl::kEager) return std::nullopt;
  const std::string l = "'" + loss_name(c.loss) + "'";
  if (c.loss.impl == LossImpl::kParallel && (p.tp == 1 || c.profile != Profile::kPytorch))
    return bad("config.loss", l +
                                  " is PyTorch's loss_parallel over a head sharded by the "
                                  "vocabulary (DTensor tensor parallelism, as torchtitan runs "
                                  "it): it needs tp > 1 and profile pytorch; tp is " +
                                  std::to_string(p.tp) + ", profile " + profile_name(c.profile) +
                                  " (allowed otherwise: eager)");
  if (c.profile != Profile::kPytorch && c.profile != Profile::kHf)
    return bad("config.loss", l + " is a PyTorch loss; the " +
                                  std::string(profile_name(c.profile)) +
                                  " profile keeps Megatron-LM's fp32 softmax (allowed: eager; "
                                  "or profile pytorch or hf)");
  if (c.loss.impl == LossImpl::kFused && p.tp > 1)
    return bad("config.loss", l +
                                  " (Liger's fused linear cross entropy) computes the whole "
                                  "vocabulary on one GPU; tp is " +
                                  std::to_string(p.tp) + " (allowed with tp = 1)");
  if (c.loss.impl != LossImpl::kChunked && m.final_softcap > 0)
    return bad("config.loss", l + " is not modelled with final logit soft-capping "
                                  "(final_logit_softcapping); allowed: eager, chunked:K");
  if (rl_loss(c.loss) && c.profile != Profile::kHf)
    return bad("config.loss", l + " is verl's, TRL's or OpenRLHF's actor (or a critic) over a "
                                  "transformers model; allowed with profile hf");
  if (rl_loss(c.loss) && (p.tp > 1 || p.cp > 1 || p.pp > 1))
    return bad("config.loss", l + " is verl's FSDP, TRL's or OpenRLHF's data-parallel actor (no "
                                  "tensor, context or pipeline parallelism); allowed with tp, cp "
                                  "and pp 1");
  if (c.loss.impl == LossImpl::kChunked && c.loss.chunks > c.seq / p.cp)
    return bad("config.loss", l + ": more chunks than the " + std::to_string(c.seq / p.cp) +
                                  " tokens of a sequence on this GPU");
  return std::nullopt;
}

// LoRA: every key it reads needs a rank, and the rank needs what it is modelled for.
std::optional<Error> validate_lora(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (!c.lora.on() && (!c.lora.targets.empty() || c.lora.qlora || c.lora.dropout > 0.0))
    return bad("config.lora_rank",
               "0 (no LoRA), yet lora_targets, lora_dropout or qlora is given; "
               "give lora_rank >= 1 or drop them");
  if (!c.lora.on()) return std::nullopt;
  if (c.lora.targets.empty())
    return bad("config.lora_targets", "LoRA (lora_rank " + std::to_string(c.lora.rank) +
                                          ") needs the linears it adapts, e.g. [\"q_proj\", "
                                          "\"v_proj\"]");
  if (c.profile != Profile::kPytorch && c.profile != Profile::kHf)
    return bad("config.lora_rank",
               "LoRA is modelled under the pytorch and hf profiles (peft "
               "on PyTorch modules); profile is " +
                   std::string(profile_name(c.profile)));
  if (p.tp > 1) return bad("config.lora_rank", "LoRA is modelled with tp = 1");
  // ZeRO-3 as FSDP1 and DeepSpeed run it: each layer gathered for its forward and again for its
  // backward, frozen and adapter weights alike, gradients only for the adapters. FSDP2's
  // per-group buffers and a stage kept gathered count every weight's gradient, not the
  // adapters' alone (not modelled).
  if (p.zero == 3 && (fsdp2_buffers(c) || gathers_resident(c)))
    return bad("config.lora_rank",
               "LoRA under ZeRO-3 is modelled with each layer gathered and freed per pass "
               "(FSDP1, DeepSpeed); FSDP2's buffers (torchtitan, verl's fsdp_version 2), "
               "reshard_after_forward false "
               "and accumulate_unsharded are not");
  if (c.optimizer_offload)
    return bad("config.lora_rank", "LoRA with optimizer_offload is not modelled");
  if (c.lora.qlora && p.zero == 3)
    return bad("config.qlora",
               "QLoRA under ZeRO-3 (NF4 base weights partitioned and gathered) is "
               "not modelled; allowed with zero 0-2");
  if (is_split_backward(effective_schedule(c)))
    return bad("config.lora_rank", "LoRA with a split-backward schedule is not modelled");
  for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
    const LayerKind& k = m.kinds[ki];
    if (!op_policy_supported(m, k, c.profile))
      return bad("config.lora_rank",
                 "LoRA is modelled for dense attention and MLP layers; layer kind " +
                     std::to_string(ki) + " is MoE, MLA, Mamba, mixer-only or parallel");
    for (const std::string& t : c.lora.targets) {
      const bool gated_name = t == "gate_proj" || t == "up_proj" || t == "down_proj";
      const bool plain_name = t == "fc1" || t == "fc2";
      if ((gated_name && !is_gated(k.ffn)) || (plain_name && is_gated(k.ffn)))
        return bad("config.lora_targets",
                   "'" + t + "' is not a linear of this model's MLP (" +
                       (is_gated(k.ffn) ? "gate_proj, up_proj, down_proj" : "fc1, fc2") + ")");
    }
  }
  return std::nullopt;
}

// The dtypes the deepspeed and hf-trainer frameworks are modelled with.
std::optional<Error> validate_framework_dtypes(const ModelSpec&, const TrainConfig& c) {
  const Parallel& p = c.par;
  // DeepSpeed's paths the deepspeed framework's defaults follow (docs/frameworks.md): bf16 under
  // ZeRO 1-3, or fp32. Without ZeRO, bf16 runs BF16_Optimizer, which shards its fp32 master and
  // keeps both bf16 and fp32 gradients (bf16_optimizer.py l.156-172); fp16 runs its loss scaler.
  if (c.framework == Framework::kDeepspeed) {
    if (c.act_dtype == DType::kFp16 || c.act_dtype == DType::kFp8)
      return bad("config.dtype", std::string(dtype_name(c.act_dtype)) +
                                     " under framework deepspeed is not modelled (allowed: fp32, "
                                     "bf16)");
    if (c.act_dtype == DType::kBf16 && p.zero == 0)
      return bad("config.zero",
                 "0 with bf16 under framework deepspeed: DeepSpeed's BF16_Optimizer shards its "
                 "fp32 master and keeps bf16 and fp32 gradients, not modelled (allowed: 1, 2, 3)");
  }
  // The HF Trainer's bf16 = True runs torch.autocast over the fp32 parameters from_pretrained
  // loads (accelerate 1.2.1): mixed activation dtypes and autocast's cached bf16 weight copies
  // that no profile models.
  if (c.framework == Framework::kHfTrainer) {
    if (c.act_dtype == DType::kFp16 || c.act_dtype == DType::kFp8)
      return bad("config.dtype", std::string(dtype_name(c.act_dtype)) +
                                     " under framework hf-trainer is not modelled (allowed: fp32, "
                                     "bf16 with param_dtype bf16)");
    if (c.act_dtype == DType::kBf16 && c.param_dtype != DType::kBf16)
      return bad("config.param_dtype",
                 std::string(dtype_name(c.param_dtype)) +
                     " with dtype bf16 under framework hf-trainer is the Trainer's bf16=True "
                     "autocast over fp32 weights, not modelled; give param_dtype bf16 for a model "
                     "loaded with torch_dtype=torch.bfloat16, or dtype fp32");
  }
  return std::nullopt;
}

// Async TP: Megatron-LM's userbuffers (megatron profile; arguments.py asserts sequence
// parallelism) or torchtitan's symmetric-memory workspace (pytorch profile).
std::optional<Error> validate_async_tp(const ModelSpec&, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (!c.async_tp) return std::nullopt;
  if (p.tp < 2) return bad("config.async_tp", "true needs tp > 1; tp is " + std::to_string(p.tp));
  if (c.profile != Profile::kMegatron && c.profile != Profile::kPytorch)
    return bad("config.async_tp",
               std::string("true is Megatron-LM's --tp-comm-overlap (profile megatron) or "
                           "torchtitan's async TP (profile pytorch); profile is ") +
                   profile_name(c.profile));
  if (c.profile == Profile::kMegatron && !p.sp)
    return bad("config.async_tp",
               "true under the megatron profile is --tp-comm-overlap, which needs sequence "
               "parallelism (sp)");
  return std::nullopt;
}

// PyTorch DDP's buckets exist only where torch DDP wraps the model.
std::optional<Error> validate_ddp_bucket_view(const ModelSpec&, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (!c.ddp_bucket_view &&
      (p.zero != 0 || (c.profile != Profile::kPytorch && c.profile != Profile::kHf)))
    return bad("config.ddp_bucket_view",
               "false is PyTorch DDP's (zero 0, profile pytorch or hf); zero is " +
                   std::to_string(p.zero) + ", profile " + profile_name(c.profile));
  return std::nullopt;
}

// torchao asserts tensorwise scaling for the float8 all-gather (config.py __post_init__); it is
// FSDP's (fsdp_utils.py fsdp_pre_all_gather).
std::optional<Error> validate_float8_all_gather(const ModelSpec&, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (c.float8_all_gather && (c.float8 != Float8::kTensorwise || p.zero != 3))
    return bad("config.float8_all_gather",
               std::string("true needs float8 tensorwise and zero 3 (FSDP); float8 is ") +
                   float8_name(c.float8) + ", zero " + std::to_string(p.zero));
  return std::nullopt;
}

// TransformerEngine's delayed-scaling fp8 (Megatron-LM's --fp8-format) under the megatron
// profile, dense layers; torchao's recipes under the pytorch profile (below).
std::optional<Error> validate_float8_delayed(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (c.float8 == Float8::kDelayed) {
    if (c.profile != Profile::kMegatron)
      return bad("config.float8", std::string("'delayed' is TransformerEngine's fp8 as "
                                              "Megatron-LM runs it (profile megatron); profile "
                                              "is ") +
                                      profile_name(c.profile));
    if (c.act_dtype != DType::kBf16)
      return bad("config.float8", std::string("'delayed' runs beside bf16 (--bf16); dtype is ") +
                                      dtype_name(c.act_dtype));
    if (p.zero >= 2)
      return bad("config.float8", "'delayed' with Megatron-FSDP (zero 2 or 3) is not modelled");
    if (c.recompute.kind == RecomputeKind::kCustom || is_split_backward(effective_schedule(c)))
      return bad("config.float8",
                 "'delayed' with a custom keep list or a split-backward schedule is not "
                 "modelled");
    for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
      const LayerKind& k = m.kinds[ki];
      if (!k.has_attention() || k.is_mla() || !k.has_ffn || k.is_moe() ||
          m.block != BlockLayout::kSequential)
        return bad("config.float8",
                   "'delayed' is modelled for dense attention and MLP layers; "
                   "layer kind " +
                       std::to_string(ki) + " is MoE, MLA, Mamba, mixer-only or parallel");
    }
  } else if (c.fp8_amax_history != 1) {
    return bad("config.fp8_amax_history", "is read with float8 'delayed' (TransformerEngine)");
  }
  return std::nullopt;
}

// Float8 linears as torchao swaps them in (docs/frameworks.md, "Float8"): measured on the
// pytorch profile's dense block in bf16 (tests/reference/float8_saved.json).
std::optional<Error> validate_float8_torchao(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (c.float8 == Float8::kNone || c.float8 == Float8::kDelayed) return std::nullopt;
  const std::string f = std::string("'") + float8_name(c.float8) + "'";
  if (c.profile != Profile::kPytorch)
    return bad("config.float8", f +
                                    " is torchao's Float8Linear, measured under the pytorch "
                                    "profile (torchtitan's); profile is " +
                                    std::string(profile_name(c.profile)));
  if (c.act_dtype != DType::kBf16)
    return bad("config.float8", f +
                                    " runs beside bf16 compute (torchtitan's "
                                    "MixedPrecisionPolicy); dtype is " +
                                    std::string(dtype_name(c.act_dtype)));
  if (p.tp > 1)
    return bad("config.float8",
               f + " with tp > 1 (torchtitan's Float8ColwiseParallel) is not modelled");
  if (c.lora.on()) return bad("config.float8", f + " with LoRA is not modelled");
  if (c.recompute.kind == RecomputeKind::kCustom ||
      (c.recompute.kind == RecomputeKind::kPattern &&
       c.recompute.pattern.find('X') != std::string::npos))
    return bad("config.float8",
               f + " with a custom or op-level keep list is not modelled (torchtitan's op "
                   "policy also saves float8's aten.abs and aten.max outputs); allowed "
                   "recompute: none, selective, full, every:K, layers: without X");
  if (is_split_backward(effective_schedule(c)))
    return bad("config.float8", f + " with a split-backward schedule is not modelled");
  // MX scales one block of 32 in-features (torchao mx_formats to_mx reshapes to (-1, 32)).
  if (c.float8 == Float8::kMxfp8)
    for (const LayerKind& k : m.kinds)
      for (std::uint64_t in : {m.hidden, k.heads * k.head_dim, k.ffn_hidden})
        if (in % 32 != 0)
          return bad("config.float8", f +
                                          " needs every linear's in-features to divide into "
                                          "blocks of 32; this model has " +
                                          std::to_string(in));
  for (std::size_t ki = 0; ki < m.kinds.size(); ++ki)
    if (!op_policy_supported(m, m.kinds[ki], c.profile))
      return bad("config.float8", f +
                                      " is modelled for dense attention and MLP layers; layer "
                                      "kind " +
                                      std::to_string(ki) +
                                      " is MoE, MLA, Mamba, mixer-only or parallel");
  return std::nullopt;
}

// The ZeRO and FSDP switches, each with the stage it applies to.
std::optional<Error> validate_zero_switches(const ModelSpec&, const TrainConfig& c) {
  const Parallel& p = c.par;
  // ZeRO-Offload moves the partitioned optimizer (ZeRO-2's gradients with it) to the host.
  if (c.optimizer_offload && p.zero < 2)
    return bad("config.optimizer_offload",
               "true needs zero 2 or 3 (ZeRO-Offload offloads the partitioned gradients and "
               "optimizer states); zero is " +
                   std::to_string(p.zero));
  // FSDP's residency switches change what ZeRO-3 gathers; without ZeRO-3 they would be ignored.
  if (!c.reshard_after_forward && p.zero != 3)
    return bad("config.reshard_after_forward",
               "false needs zero 3 (FSDP / ZeRO-3 gathers parameters per layer); zero is " +
                   std::to_string(p.zero));
  if (c.accumulate_unsharded && p.zero != 3)
    return bad("config.accumulate_unsharded",
               "true needs zero 3 (FSDP / ZeRO-3 shards the gradients it would defer); zero is " +
                   std::to_string(p.zero));
  if (c.accumulate_unsharded && default_micro_batches(c) < 2)
    return bad("config.accumulate_unsharded",
               "true needs 2 or more micro-batches per step (it holds what passes between them)");
  return std::nullopt;
}

// Which FSDP (config.fsdp_version): verl runs either (its actor.strategy fsdp or fsdp2),
// torchtitan fully_shard only. verl's FSDP2 is modelled as verl b178a3c runs its actor: every
// layer resharded after forward, one rank of the pipeline (LoRA beside FSDP2's buffers is refused
// by validate_lora, which runs first; docs/frameworks.md, "verl's FSDP2").
std::optional<Error> validate_fsdp_version(const ModelSpec&, const TrainConfig& c) {
  const std::uint64_t v = c.fsdp_version;
  if (v == 0) return std::nullopt;
  if (v != 1 && v != 2)
    return bad("config.fsdp_version", std::to_string(v) + " is not an FSDP; allowed: 1, 2");
  if (c.framework == Framework::kTorchtitan) {
    if (v != 2)
      return bad("config.fsdp_version",
                 "1 with framework torchtitan: torchtitan shards with fully_shard (FSDP2) only; "
                 "allowed: 2");
    return std::nullopt;
  }
  if (c.framework != Framework::kVerl)
    return bad("config.fsdp_version",
               "is read with framework verl (its actor.strategy: 1 fsdp, 2 fsdp2) or torchtitan "
               "(2); framework is " +
                   std::string(framework_name(c.framework)));
  if (v == 1) return std::nullopt;
  const Parallel& p = c.par;
  if (p.zero != 3)
    return bad(
        "config.fsdp_version",
        "2 needs zero 3 (fully_shard shards the parameters); zero is " + std::to_string(p.zero));
  if (p.pp != 1 || p.tp != 1 || p.cp != 1)
    return bad("config.fsdp_version",
               "2 is modelled on verl's FSDP backend, which has no tensor, context or pipeline "
               "parallelism here; allowed: tp, cp and pp 1");
  if (!c.reshard_after_forward || c.accumulate_unsharded)
    return bad("config.fsdp_version",
               "2 is modelled with every layer resharded after forward (verl's default); "
               "reshard_after_forward false and accumulate_unsharded are not modelled");
  if (p.dp_replicate > 1)
    return bad("config.fsdp_version", "2 with dp_replicate > 1 (HSDP) is not modelled");
  return std::nullopt;
}

// Hybrid-sharding replicas and expert parallelism inside the data-parallel group.
std::optional<Error> validate_data_parallel_groups(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  // Hybrid sharding: replicas of whole shard groups (torchtitan parallel_dims.py: dp_replicate x
  // dp_shard = dp). Without ZeRO every dp rank is already a replica.
  if (p.dp_replicate > 1 && p.dp % p.dp_replicate != 0)
    return bad("config.dp_replicate", std::to_string(p.dp_replicate) +
                                          " must divide dp=" + std::to_string(p.dp) +
                                          " (each replica shards over dp / dp_replicate ranks)");
  if (p.dp_replicate > 1 && p.zero == 0 && p.dp_replicate != p.dp)
    return bad("config.dp_replicate",
               std::to_string(p.dp_replicate) +
                   " needs zero 1, 2 or 3 (hybrid sharding shards inside each replica); with "
                   "zero 0 every dp rank is a replica (allowed: 1 or dp=" +
                   std::to_string(p.dp) + ")");
  if (p.dp_replicate > 1 && p.ep > 1)
    return bad("config.dp_replicate",
               std::to_string(p.dp_replicate) +
                   " with ep > 1: hybrid sharding of experts is not modelled (allowed: 1)");
  if (p.ep > 1 && !m.any_moe())
    return bad("config.ep", "expert parallelism needs a mixture-of-experts model");
  if (p.ep > 1 && p.dp % p.ep != 0)
    return bad("config.ep", "ep=" + std::to_string(p.ep) +
                                " must divide dp=" + std::to_string(p.dp) +
                                " (experts are sharded inside the data-parallel group)");
  return std::nullopt;
}

// The layers' split over pipeline stages: layer_split, or an even split.
std::optional<Error> validate_layer_split(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (!c.layer_split.empty()) {
    if (c.layer_split.size() != p.pp)
      return bad("config.layer_split",
                 "has " + std::to_string(c.layer_split.size()) +
                     " entries; it needs one per pipeline stage (pp=" + std::to_string(p.pp) + ")");
    std::uint64_t sum = 0;
    for (std::uint64_t n : c.layer_split) {
      if (n < p.vpp)
        return bad("config.layer_split", "every stage needs at least vpp=" + std::to_string(p.vpp) +
                                             " layers, one per chunk");
      // Each entry is at most the model's layers, so the sum cannot wrap (2^64 - 1 + 33 would
      // wrap to 32 and pass).
      if (n > m.layers)
        return bad("config.layer_split",
                   "has a stage of " + std::to_string(n) +
                       " layers, more than num_hidden_layers=" + std::to_string(m.layers));
      sum += n;
    }
    if (sum != m.layers)
      return bad("config.layer_split",
                 "sums to " + std::to_string(sum) +
                     "; it must sum to num_hidden_layers=" + std::to_string(m.layers));
  } else if (m.layers % (p.pp * p.vpp) != 0) {
    return bad(p.vpp > 1 ? "config.vpp" : "config.pp",
               "num_hidden_layers=" + std::to_string(m.layers) +
                   " is not divisible by pp x vpp = " + std::to_string(p.pp * p.vpp) +
                   "; allowed pp: " + divisors_of(m.layers) + " (or give layer_split)");
  }
  return std::nullopt;
}

// The allocator's fragmentation allowance, a percentage.
std::optional<Error> validate_fragmentation(const ModelSpec&, const TrainConfig& c) {
  if (!(c.fragmentation_pct >= 0.0 && c.fragmentation_pct <= 100.0))
    return bad("config.fragmentation_pct", "must be between 0 and 100");
  return std::nullopt;
}

// The optimizer states' dtype, where the optimizer takes one.
std::optional<Error> validate_optimizer_dtype(const ModelSpec&, const TrainConfig& c) {
  if (c.optimizer_dtype == DType::kFp8)
    return bad("config.optimizer_dtype", "'fp8' is not allowed; allowed: fp32, bf16, fp16");
  if (c.optimizer_dtype != DType::kFp32 &&
      (c.optimizer == Optimizer::kAdam8bit || c.optimizer == Optimizer::kAdafactor))
    return bad("config.optimizer_dtype",
               std::string("'") + dtype_name(c.optimizer_dtype) + "' does not apply to " +
                   optimizer_name(c.optimizer) +
                   ", which keeps its own state format; allowed: fp32 (the default)");
  // optimizer_impl names torch.optim.AdamW's implementations; another optimizer's step does
  // not read it (a framework's default for it is not the user's).
  if (c.optimizer_impl != OptimizerImpl::kAuto && c.optimizer != Optimizer::kAdamW &&
      !framework_filled(c, "optimizer_impl"))
    return bad("config.optimizer_impl", std::string("'") + optimizer_impl_name(c.optimizer_impl) +
                                            "' is read only with optimizer adamw; optimizer is " +
                                            optimizer_name(c.optimizer));
  return std::nullopt;
}

// A block compile's measured records hold (docs/validation.md 6.2): torchtitan's Llama block
// (RMSNorm, attention with RoPE, q/k/v biases or per-head q/k norms at most, a SwiGLU MLP),
// Gemma 2's and 3's (Gemma's norm before and after attention and the MLP, a GELU-tanh gated MLP;
// a sliding window and Gemma 2's soft-capping are arguments of the flash kernel, not tensors it
// saves) or nanoGPT's GPT-2 block (LayerNorm, learned positions, biases, a GELU MLP); no sinks,
// the sequential layout.
bool compiled_block(const ModelSpec& m, const LayerKind& k) {
  const bool gemma = m.gemma_norm && m.sandwich_norm;
  if (!k.has_attention() || k.is_mla() || !k.has_ffn || k.is_moe() || k.attn_sinks ||
      k.qk_l2_norm || k.attn_temperature || m.block != BlockLayout::kSequential)
    return false;
  if (!gemma && (k.window != 0 || m.sandwich_norm || m.gemma_norm || m.attn_softcap > 0))
    return false;
  if (gemma)
    return m.norm == NormType::kRmsNorm && m.pos == PosEncoding::kRope && k.rope &&
           k.ffn == FfnType::kGeglu && !k.o_bias && !k.mlp_bias && !k.qkv_bias;
  if (m.norm == NormType::kRmsNorm)
    return m.pos == PosEncoding::kRope && k.rope && k.ffn == FfnType::kSwiglu && !k.o_bias &&
           !k.mlp_bias;
  return m.pos == PosEncoding::kLearned && k.ffn == FfnType::kGelu && !k.qk_norm;
}

// torchtitan's own Llama block (RMSNorm, no q/k/v biases or q/k norms, not Gemma's): what compile
// under TP and under its op policy is measured on.
bool titan_llama_kind(const ModelSpec& m, const LayerKind& k) {
  return !k.qkv_bias && !k.qk_norm && !m.gemma_norm && m.norm == NormType::kRmsNorm;
}

// Compile under tensor parallelism: measured for torchtitan's Llama block under its TP plan
// (sequence parallel, kv heads divisible by tp: tests/reference/compile_tp_saved.json), with no
// recompute or full recompute (whose checkpointed block keeps its input shard as eager does).
std::optional<Error> validate_compile_tp(const ModelSpec& m, const TrainConfig& c) {
  if (c.par.cp > 1)
    return bad("config.compile",
               "the partitioner under context parallelism is not measured; allowed: cp 1");
  if (c.par.tp == 1) return std::nullopt;
  const bool full = c.recompute.kind == RecomputeKind::kFull;
  if (!c.par.sp)
    return bad("config.compile",
               "measured under torchtitan's TP plan, which shards the norms' "
               "sequence: give sp true");
  if (!full && c.recompute.kind != RecomputeKind::kNone)
    return bad("config.compile", "under tensor parallelism measured with recompute none or full");
  for (const LayerKind& k : m.kinds)
    if (!titan_llama_kind(m, k))
      return bad("config.compile",
                 "under tensor parallelism measured for torchtitan's Llama "
                 "block only (no q/k/v biases, q/k norms, Gemma or GPT-2 "
                 "layers)");
    else if (k.kv_heads % c.par.tp != 0)
      return bad("config.compile", "torchtitan's TP plan needs the kv heads (" +
                                       std::to_string(k.kv_heads) + ") divisible by tp " +
                                       std::to_string(c.par.tp));
  return std::nullopt;
}

// What neither compile measurement had: float8 or LoRA linears, dropout (`no_dropout` says why).
std::optional<Error> compile_extras(const ModelSpec& m, const TrainConfig& c,
                                    const char* no_dropout) {
  if (c.float8 != Float8::kNone || c.lora.rank > 0)
    return bad("config.compile", "float8 and LoRA linears under compile are not measured");
  const double ad = c.attention_dropout >= 0 ? c.attention_dropout : m.attention_dropout;
  const double hd = c.hidden_dropout >= 0 ? c.hidden_dropout : m.hidden_dropout;
  if (ad != 0 || hd != 0) return bad("config.compile", no_dropout);
  return std::nullopt;
}

// A transformers model compiled whole (Trainer's torch_compile: embedding, rotary tables, layers,
// final norm, head and ForCausalLMLoss in one graph), measured for Llama, Qwen3 and Phi-3 at one
// GPU's shapes with no recompute (tests/reference/compile_hf_whole_saved.json): Llama-like layers
// (RMSNorm, one RoPE table, SwiGLU, q/k/v biases or per-head q/k norms at most).
std::optional<Error> validate_compile_whole(const ModelSpec& m, const TrainConfig& c) {
  if (c.activation_memory_budget != 1.0)
    return bad("config.activation_memory_budget",
               "a transformers model compiled whole is measured at budget 1 only");
  for (std::size_t i = 0; i < m.kinds.size(); ++i)
    if (!compiled_block(m, m.kinds[i]) || m.gemma_norm || m.norm != NormType::kRmsNorm)
      return bad("config.compile",
                 "layer kind " + std::to_string(i) + " ('" + m.kinds[i].name +
                     "'): a transformers model compiled whole is measured for Llama-like layers "
                     "(RMSNorm, RoPE attention, SwiGLU; q/k/v biases at most, no output or MLP "
                     "biases; Qwen3's q/k norms; Phi-3's fused projections); not Gemma, GPT-2, "
                     "MoE, MLA, state-space or parallel layouts");
  // The measurement ran one process: DDP's optimizer splits a compiled graph at its buckets and
  // FSDP or ZeRO-3 break it at their hooks, which changes what each piece saves.
  if (c.framework != Framework::kPlain && c.framework != Framework::kHfTrainer)
    return bad("config.framework",
               std::string("'") + framework_name(c.framework) +
                   "' with a transformers model compiled whole (profile hf) is not measured; "
                   "allowed: hf-trainer (Trainer's torch_compile) or plain");
  if (c.par.dp > 1 || c.par.zero > 0)
    return bad("config.dp",
               "a transformers model compiled whole is measured in one process (DDP's optimizer "
               "splits the compiled graph at its buckets, ZeRO and FSDP at their hooks): dp 1, "
               "zero 0");
  if (c.recompute.offload)
    return bad("config.compile", "compiled whole with activation offload is not measured");
  if (m.hf_rope_complex || m.hf_rope_tables > 1 || m.hf_embed_scale || m.final_softcap > 0)
    return bad("config.compile",
               "measured for one real RoPE table, no embedding scale or final soft-capping");
  if (c.attention != Attention::kFlash)
    return bad("config.compile", std::string("measured with SDPA's flash kernel; attention is ") +
                                     attention_name(c.attention));
  if (c.par.tp > 1 || c.par.cp > 1 || c.par.pp > 1)
    return bad("config.compile",
               "a transformers model compiled whole is measured on one GPU's shapes: tp, cp and "
               "pp 1");
  if (c.act_dtype != DType::kBf16)
    return bad("config.compile",
               "a transformers model compiled whole is measured in bf16 "
               "(a model loaded in bfloat16); give dtype bf16");
  if (c.recompute.kind != RecomputeKind::kNone)
    return bad("config.compile",
               "compiled whole with gradient checkpointing is not measured; allowed: recompute "
               "none");
  if (c.loss.impl != LossImpl::kEager && c.loss.impl != LossImpl::kCompiled)
    return bad("config.loss", "'" + loss_name(c.loss) +
                                  "': compiled whole, transformers' ForCausalLMLoss is compiled "
                                  "with the model; allowed: eager or compiled (the same)");
  return compile_extras(m, c, "measured without dropout");
}

// torch.compile: the partitioner's saved tensors are measured for one block, one GPU's shapes
// (tp 1, 2 and 4 for the Llama block, cp 1), at budget 1 (docs/validation.md 6.2); the rest is
// refused by field.
std::optional<Error> validate_compile(const ModelSpec& m, const TrainConfig& c) {
  const double budget = c.activation_memory_budget;
  if (!(budget >= 0.0 && budget <= 1.0))
    return bad("config.activation_memory_budget", "must be between 0 and 1");
  if (!c.compile) {
    if (budget != 1.0)
      return bad("config.activation_memory_budget", "read only with compile: true");
    return std::nullopt;
  }
  if (c.profile == Profile::kHf) return validate_compile_whole(m, c);
  if (budget == 0.0)
    return bad("config.activation_memory_budget",
               "0 saves each block's input only, what recompute: full keeps; use recompute full");
  if (budget != 1.0)
    return bad("config.activation_memory_budget",
               "between 0 and 1 the partitioner's knapsack over its runtime estimates chooses "
               "(docs/validation.md 6.2), which is not modelled; allowed: 1, or recompute full");
  if (c.profile != Profile::kPytorch)
    return bad("config.compile", std::string("the compiled block is measured for torchtitan's "
                                             "model (profile pytorch) and transformers' models "
                                             "compiled whole (profile hf); profile is ") +
                                     profile_name(c.profile));
  for (std::size_t i = 0; i < m.kinds.size(); ++i)
    if (!compiled_block(m, m.kinds[i]))
      return bad("config.compile",
                 "layer kind " + std::to_string(i) + " ('" + m.kinds[i].name +
                     "') is not a block compile is measured on: torchtitan's Llama block "
                     "(RMSNorm, RoPE attention, SwiGLU, no output or MLP biases), with Qwen2's "
                     "q/k/v biases or Qwen3's "
                     "q/k norms, Gemma 2's and 3's (sandwich norms, GELU-tanh gated MLP), or "
                     "GPT-2's (LayerNorm, learned positions, GELU); no sinks, L2 q/k norms, "
                     "MLA, MoE, state-space or parallel layouts");
  if (c.attention != Attention::kFlash)
    return bad("config.compile", std::string("measured with SDPA's flash kernel; attention is ") +
                                     attention_name(c.attention));
  if (auto err = validate_compile_tp(m, c)) return err;
  const bool titan_ops = c.recompute.kind == RecomputeKind::kCustom &&
                         c.recompute.op_policy == "torchtitan" && c.recompute.custom_keep.empty();
  if (c.recompute.kind != RecomputeKind::kNone && c.recompute.kind != RecomputeKind::kFull &&
      !titan_ops)
    return bad("config.compile", "with recompute " + recompute_name(c.recompute) +
                                     " the partitioner and the checkpointing policy decide "
                                     "together, which is not measured; allowed: none, full, "
                                     "op:torchtitan (tests/reference/compile_sac_saved.json)");
  // torchtitan's op policy under compile is measured on its Llama block alone.
  if (titan_ops)
    for (const LayerKind& k : m.kinds)
      if (!titan_llama_kind(m, k))
        return bad("config.compile",
                   "with recompute op:torchtitan measured on torchtitan's Llama "
                   "block only (compile_sac_saved.json); this model's layers "
                   "have q/k/v biases, q/k norms, Gemma's or GPT-2's layout");
  return compile_extras(m, c, "measured without dropout (torchtitan's Llama has none)");
}

// GPUs per node: which NCCL groups stay inside a node.
std::optional<Error> validate_gpus_per_node(const ModelSpec&, const TrainConfig& c) {
  if (c.gpus_per_node == 0 || c.gpus_per_node > kMaxGpusPerNode)
    return bad("config.gpus_per_node", std::to_string(c.gpus_per_node) +
                                           " is not allowed; allowed: 1 to " +
                                           std::to_string(kMaxGpusPerNode));
  return std::nullopt;
}

// Training the model's multi-token-prediction depths.
std::optional<Error> validate_mtp(const ModelSpec& m, const TrainConfig& c) {
  if (c.mtp && m.mtp_layers == 0)
    return bad("config.mtp",
               "this model has no multi-token-prediction depths "
               "(num_nextn_predict_layers); allowed: false");
  if (c.mtp && m.mtp_layers > kMaxMtpDepths)
    return bad("config.mtp", "training with " + std::to_string(m.mtp_layers) +
                                 " MTP depths is not modelled; at most " +
                                 std::to_string(kMaxMtpDepths));
  return std::nullopt;
}

// The busiest expert-parallel rank's share of a dropless MoE's routed tokens.
std::optional<Error> validate_moe_imbalance(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  if (c.moe_imbalance == 1.0) return std::nullopt;
  // Used or refused: it sizes the busiest expert-parallel rank of a dropless MoE, and nothing
  // else (a dense model, one EP rank holding every expert, capacity-padded expert buffers).
  char v[32];
  std::snprintf(v, sizeof v, "%.15g", c.moe_imbalance);  // enough digits to show why
  bool dropless = false, capacity = false;
  for (const LayerKind& k : m.kinds) {
    dropless = dropless || (k.is_moe() && k.moe.capacity_factor == 0.0);
    capacity = capacity || (k.is_moe() && k.moe.capacity_factor > 0.0);
  }
  if (!dropless)
    return bad("config.moe_imbalance",
               std::string(v) + (capacity ? " does not apply: capacity_factor pads every expert "
                                            "to its capacity; allowed: 1"
                                          : " applies to mixture-of-experts models; allowed: 1"));
  if (p.ep == 1)
    return bad("config.moe_imbalance",
               std::string(v) +
                   " needs ep > 1 (one rank holds every expert and sees every "
                   "routed token); allowed: 1");
  if (!(c.moe_imbalance >= 1.0 && c.moe_imbalance <= static_cast<double>(p.ep)))
    return bad("config.moe_imbalance",
               std::string(v) + " is outside [1, ep = " + std::to_string(p.ep) +
                   "] (the mean rank, up to every routed token of the group on one rank)");
  return std::nullopt;
}

// What SDPA's math and cuDNN backends take.
std::optional<Error> validate_attention_kernel(const ModelSpec& m, const TrainConfig& c) {
  // PyTorch's SDPA takes no per-head sink logits (transformers refuses SDPA for gpt-oss): the
  // sinks run in eager attention or a flash kernel that takes them.
  if (c.attention == Attention::kSdpaMath || c.attention == Attention::kSdpaCudnn)
    for (const LayerKind& k : m.kinds)
      if (k.attn_sinks)
        return bad("config.attention",
                   std::string(attention_name(c.attention)) +
                       " takes no attention sinks (this model's sinks need eager or a flash "
                       "kernel with sinks); allowed: eager, flash");
  // SDPA's cuDNN backend as transformers' sdpa path hands it its tensors: measured on an H200
  // (docs/validation.md 4.4) for the hf profile's modules, in 16-bit activations.
  if (c.attention == Attention::kSdpaCudnn) {
    if (c.profile != Profile::kHf)
      return bad("config.attention",
                 std::string("sdpa_cudnn is transformers' SDPA on PyTorch's cuDNN backend, "
                             "measured for the hf profile, not ") +
                     profile_name(c.profile) + "; allowed: eager, sdpa_math, flash");
    if (c.act_dtype == DType::kFp32)
      return bad("config.attention",
                 "sdpa_cudnn takes fp16 or bf16 (PyTorch sends fp32 SDPA to its memory-efficient "
                 "kernel, not modelled); allowed: eager, sdpa_math");
    // Falcon's multi-query layout (one K/V head expanded to every head): PyTorch 2.11 sent it
    // to the math kernel on the H200 (validation.md 4.4).
    if (m.hf_modules == HfModules::kFalcon && !m.hf_kv_broadcast)
      return bad("config.attention",
                 "sdpa_cudnn: SDPA runs Falcon's multi-query layout on its math kernel (measured); "
                 "allowed: eager, sdpa_math, flash");
  }
  return std::nullopt;
}

// The profile and context parallelism Mamba-2 layers are modelled under.
std::optional<Error> validate_mamba_config(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  const bool any_mamba =
      std::any_of(m.kinds.begin(), m.kinds.end(), [](const LayerKind& k) { return k.is_mamba(); });
  // The seed has no state-space layer, and Mamba's context parallelism (Megatron-LM
  // mamba_context_parallel.py: an all-to-all from sequence to head shards) is not modelled.
  if (any_mamba && c.profile == Profile::kTextbook)
    return bad("config.profile",
               "textbook has no rule for Mamba-2 layers (the seed has none); allowed: megatron, "
               "pytorch, hf");
  if (any_mamba && p.cp > 1)
    return bad("config.cp", "cp=" + std::to_string(p.cp) +
                                " with Mamba-2 layers is not modelled (Megatron-LM shards their "
                                "heads over cp by all-to-all); allowed: 1");
  return std::nullopt;
}

// The recompute policy's own arguments: a pattern's letters, every:K's K.
std::optional<Error> validate_recompute_args(const ModelSpec&, const TrainConfig& c) {
  if (c.recompute.kind == RecomputeKind::kPattern && c.recompute.pattern.empty())
    return bad("config.recompute", "layers:PATTERN needs at least one letter of K, S, C, R, X");
  if (c.recompute.kind == RecomputeKind::kEveryK && c.recompute.every_k == 0)
    return bad("config.recompute", "every:K needs K >= 1");
  return std::nullopt;
}

// validate's checks in the order they run: the first error found is the answer.
using Check = std::optional<Error> (*)(const ModelSpec&, const TrainConfig&);
constexpr Check kChecks[] = {validate_model,
                             validate_degrees,
                             validate_ranges,
                             validate_splits,
                             validate_interleaving,
                             validate_custom_keep,
                             validate_split_schedule,
                             validate_interleaved_micro_batches,
                             validate_shard_group,
                             validate_loss,
                             validate_lora,
                             validate_framework_dtypes,
                             validate_async_tp,
                             validate_ddp_bucket_view,
                             validate_float8_all_gather,
                             validate_float8_delayed,
                             validate_float8_torchao,
                             validate_zero_switches,
                             validate_fsdp_version,
                             validate_data_parallel_groups,
                             validate_layer_split,
                             validate_fragmentation,
                             validate_optimizer_dtype,
                             validate_compile,
                             validate_gpus_per_node,
                             validate_mtp,
                             validate_moe_imbalance,
                             validate_attention_kernel,
                             validate_mamba_config,
                             validate_recompute_args};

}  // namespace

std::optional<Error> validate(const ModelSpec& m, const TrainConfig& c) {
  for (const Check check : kChecks)
    if (auto err = check(m, c)) return err;
  return std::nullopt;
}

std::optional<Error> check_pattern_fits(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  // Letters past the longest chunk would be dropped without a word (hostile run, round 5: 36
  // letters for a 36-layer model at pp = 2 read only the first 18).
  if (c.recompute.kind != RecomputeKind::kPattern || p.pp == 0 || p.vpp == 0) return std::nullopt;
  std::uint64_t longest = m.layers / (p.pp * p.vpp);
  for (std::uint64_t n : c.layer_split) longest = std::max(longest, (n + p.vpp - 1) / p.vpp);
  if (c.recompute.pattern.size() <= longest) return std::nullopt;
  return bad("config.recompute",
             "layers:PATTERN has " + std::to_string(c.recompute.pattern.size()) +
                 " letters; a model chunk holds at most " + std::to_string(longest) +
                 " layers (one letter per layer of a chunk, repeated when shorter)");
}

}  // namespace actmem

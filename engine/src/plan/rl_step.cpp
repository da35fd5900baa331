// An RL step on shared GPUs (rl.hpp): GRPO as verl b178a3c runs it in hybrid mode, its FSDP
// trainer and a vLLM server process on every GPU, phase by phase, each phase the sum of what the
// two processes hold.
#include "actmem/plan/rl.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "actmem/config/sharding.hpp"
#include "actmem/core/checked.hpp"
#include "actmem/device/device.hpp"
#include "actmem/inventory/params.hpp"
#include "actmem/setup/setup.hpp"
#include "plan/rl_parts.hpp"

namespace actmem {

using detail::rl_error;
using detail::rl_phase;

namespace {

constexpr const char* kVerlWorker =
    "verl b178a3c verl/workers/fsdp_workers.py (rollout_mode, compute_log_prob, update_actor)";
constexpr const char* kVerlRef =
    "verl b178a3c fsdp_workers.py l.524-526 (FSDP1: CPUOffload(offload_params=True) for every "
    "role but the actor) and l.552 (FSDP2: CPUOffloadPolicy): the reference's parameters stay on "
    "the host, each FSDP unit copied in for its forward; ref.fsdp_config.param_offload is read "
    "(l.235-237) but only the actor's code loads or offloads by it";
constexpr const char* kVerlSync =
    "verl b178a3c vllm_rollout.py update_weights: each parameter's fp32 full_tensor, cast to the "
    "rollout dtype and copied into a bucket of update_weights_bucket_megabytes (2048)";
constexpr const char* kVllmBudget =
    "vLLM's V1 worker (gpu_worker.py determine_available_memory, the start-snapshot rule of the "
    "releases verl b178a3c allows): requested = gpu_memory_utilization x total; KV cache = "
    "requested - (weights + profiled activation peak + non-torch increase); the process holds "
    "that budget, its CUDA context and its CUDA graphs";
constexpr const char* kVllmSleep =
    "verl b178a3c vllm_async_server.py sleep: level 2 in hybrid mode (weights and KV cache "
    "discarded); CUDA graphs stay (rollout.yaml: they cannot be offloaded)";
constexpr const char* kSglangBudget =
    "SGLang 0.5.6 model_runner.py profile_max_num_token and init_memory_pool (rl_sglang.cpp): KV "
    "pool tokens = (free after its weights - free at its start x (1 - mem_fraction_static)) / "
    "cell size; verl b178a3c async_sglang_server.py l.256-284 (mem_fraction_static = "
    "gpu_memory_utilization, max_running_requests = max_num_seqs)";
constexpr const char* kSglangSleep =
    "verl b178a3c async_sglang_server.py l.384-390: release_memory_occupation of the kv_cache and "
    "weights tags (free_cache_engine); CUDA graphs stay (captured outside torch_memory_saver)";
constexpr const char* kSglangSync =
    "verl b178a3c fsdp_workers.py l.729-752 and sglang_rollout/utils.py get_named_tensor_buckets: "
    "each parameter's fp32 full_tensor cloned into a bucket of update_weights_bucket_megabytes; "
    "the bucket sent last stays referenced (the async for's variable) while the next fills, and "
    "a parameter stays referenced while the next is gathered";

constexpr const char* kVerlLora =
    "verl b178a3c fsdp_workers.py rollout_mode l.677-755 and utils/fsdp_utils.py "
    "collect_lora_params l.611-666: FSDP.summon_full_params(writeback=False) gathers every FSDP "
    "unit whole in full precision (fp32) for peft's state dict of the adapters; at vLLM's sleep "
    "level 2 a second summon copies the base model to the host (model.to('cpu')) and back "
    "(model.to(device)) inside it";
constexpr const char* kVerlLayered =
    "verl b178a3c utils/fsdp_utils.py layered_summon_lora_params l.569-608: one decoder layer's "
    "FSDP unit summoned whole (fp32) at a time; vllm_rollout.py l.91-95: vLLM then sleeps at "
    "level 1, keeping the base weights, so only the adapters are sent";

// LoRA in verl (docs/advance/ppo_lora.rst at b178a3c: FSDP backends with vLLM only): the
// reference is the actor with its adapters off (ray_trainer.py l.298-302, ref_in_actor), so no
// reference worker's offload applies; verl builds the actor in fp32, so peft's adapters are fp32.
std::optional<Error> check_lora(const TrainConfig& c, const RlSpec& rl) {
  if (!c.lora.on()) return std::nullopt;
  if (rl.rollout.engine != "vllm")
    return rl_error("config.lora_rank",
                    "LoRA in verl's step is supported with vLLM only (verl b178a3c "
                    "docs/advance/ppo_lora.rst); rl.rollout.engine is " +
                        rl.rollout.engine);
  if (c.lora.qlora)
    return rl_error("config.qlora",
                    "verl loads the actor unquantized (fsdp_workers.py: "
                    "AutoModelForCausalLM in model_dtype); QLoRA is not verl's");
  if (c.lora.dtype != DType::kFp32)
    return rl_error("config.lora_dtype",
                    "peft keeps verl's adapters in fp32 (get_peft_model's autocast_adapter_dtype, "
                    "and verl's actor is fp32 by model_dtype); allowed: fp32");
  if (c.lora.dropout > 0)
    return rl_error("config.lora_dropout",
                    "verl's LoraConfig (fsdp_workers.py l.463-471) sets no lora_dropout: peft's "
                    "default 0; allowed: 0");
  if (detail::vllm_max_lora_rank(c.lora.rank) == 0)
    return rl_error("config.lora_rank", std::to_string(c.lora.rank) +
                                            " is above vLLM's largest max_lora_rank 512 "
                                            "(verl's get_vllm_max_lora_rank raises)");
  if (rl.ref_param_offload)
    return rl_error("rl.ref_param_offload",
                    "with LoRA verl has no reference worker: the reference is the actor with its "
                    "adapters disabled (ray_trainer.py l.298-302)");
  return std::nullopt;
}

// vLLM's expert parallelism as verl starts it (vllm_async_server.py l.308-325; RolloutConfig
// asserts expert_parallel_size == tensor_model_parallel_size x data_parallel_size).
std::optional<Error> check_expert_parallel(const ModelSpec& m, const TrainConfig& c,
                                           const RlRollout& r) {
  if (r.ep == 1 && r.dp == 1) return std::nullopt;
  if (r.ep == 0 || r.dp == 0 || r.ep != r.tp * r.dp)
    return rl_error("rl.rollout.expert_parallel_size",
                    std::to_string(r.ep) + " with tp " + std::to_string(r.tp) +
                        " and data_parallel_size " + std::to_string(r.dp) +
                        ": verl asserts expert_parallel_size == tp x data_parallel_size");
  if (!m.any_moe())
    return rl_error("rl.rollout.expert_parallel_size",
                    "the model has no routed experts (vLLM's expert parallelism splits them)");
  if (c.par.dp % r.ep != 0)
    return rl_error("rl.rollout.data_parallel_size",
                    std::to_string(r.ep) +
                        " GPUs per vLLM instance (tp x data_parallel_size) do "
                        "not divide the " +
                        std::to_string(c.par.dp) + " GPUs (config.dp)");
  return std::nullopt;
}

std::optional<Error> check(const ModelSpec& m, const TrainConfig& c, const RlSpec& rl) {
  if (rl.algorithm != "grpo" && rl.algorithm != "ppo")
    return rl_error("rl.algorithm", "'" + rl.algorithm + "'; allowed with verl: grpo, ppo");
  if (rl.ref_param_offload && !rl.reference)
    return rl_error("rl.ref_param_offload", "no reference model (rl.reference false)");
  if (c.par.tp > 1 || c.par.pp > 1 || c.par.cp > 1)
    return rl_error("config.tp",
                    "verl's FSDP actor runs with tp, pp and cp 1 (its Ulysses "
                    "sequence parallelism is not modelled)");
  if (c.loss.impl == LossImpl::kLogprobTrl || c.loss.impl == LossImpl::kDpoTrl)
    return rl_error("config.loss", "'" + loss_name(c.loss) +
                                       "' is TRL's loss; verl's actor computes logprob or "
                                       "logprob_torch (or give rl.framework trl)");
  if (c.loss.impl == LossImpl::kLogprobOpenrlhf)
    return rl_error("config.loss", "'" + loss_name(c.loss) +
                                       "' is OpenRLHF's loss; verl's actor computes logprob or "
                                       "logprob_torch (or give rl.framework openrlhf)");
  if (auto err = check_lora(c, rl)) return err;
  const RlRollout& r = rl.rollout;
  // verl passes SGLang no block size and no context length: only the fraction and the split.
  // SGLang's sliding-window pool is not modelled; vLLM's hybrid manager is (rl_vllm.cpp).
  if (r.engine == "sglang") {
    if (auto err = detail::check_full_attention(m)) return err;
    return detail::check_rollout(c, r);
  }
  Checked ck;
  if (auto err = detail::check_vllm_attention(m, r.tp, ck)) return err;
  if (auto err = check_expert_parallel(m, c, r)) return err;
  return detail::check_vllm(c, r, r.max_model_len ? r.max_model_len : c.seq);
}

class RlBuilder : public detail::RlLines {
 public:
  RlBuilder(const ModelSpec& m, const Setup& actor, const Setup* critic, const GpuSpec& gpu,
            const RlSpec& rl, RlAnswer* a)
      : m_(m), s_(actor), critic_(critic), gpu_(gpu), rl_(rl), a_(*a) {}

  std::optional<Error> prepare();
  void phases();
  void start();

 private:
  void trainer_base(RlPhase& p, bool params, bool optimizer);
  void actor_lines(RlPhase& p, bool params, bool optimizer);
  void critic_lines(RlPhase& p);
  void vllm(RlPhase& p, bool awake, bool weights_only);
  void sync_lines(RlPhase& p);
  RlPhase lora_collect();
  Bytes stored_bytes(const std::vector<ParamRecord>& v);
  Bytes held_at_start();
  bool sglang() const { return rl_.rollout.engine == "sglang"; }
  bool lora() const { return s_.config.lora.on(); }
  // A reference model of its own: with LoRA the actor with its adapters off is the reference.
  bool reference_model() const { return rl_.reference && !lora(); }
  Bytes forward_peak(std::uint64_t b, bool entropy, bool value_head = false) const;
  void root_unit(RlPhase& p, const Setup& s);

  const ModelSpec& m_;
  const Setup& s_;
  const Setup* critic_;  // PPO's critic, else null
  const GpuSpec& gpu_;
  const RlSpec& rl_;
  RlAnswer& a_;
  Bytes trainer_fixed_ = 0, vllm_context_ = 0;
  Bytes update_total_ = 0, critic_update_total_ = 0;
};

// The trainer's fixed costs (the engine's device overheads: context, NCCL, workspace) and what
// stays on the GPU between phases.
void RlBuilder::trainer_base(RlPhase& p, bool params, bool optimizer) {
  line(p, "trainer", "fixed costs (CUDA context, NCCL, cuBLAS workspace)", trainer_fixed_, "exact",
       "the engine's device overheads (device.hpp)");
  actor_lines(p, params, optimizer);
  critic_lines(p);
}

// The actor's shard and AdamW's states, each where the phase holds it.
void RlBuilder::actor_lines(RlPhase& p, bool params, bool optimizer) {
  const StaticMemory& st = s_.ranks[0].stat;
  if (params)
    line(p, "trainer", "actor parameters (FSDP shard)", st.params_bytes, "exact",
         "the engine's static memory; verl fsdp_config model_dtype fp32");
  if (optimizer)
    line(p, "trainer", "actor optimizer states (FSDP shard)",
         ck_.add(st.optimizer_bytes, st.master_bytes, "rl"), "exact",
         "the engine's static memory (AdamW allocates them at the first step)");
}

// PPO's critic between its own phases: its shard and AdamW's states unless offloaded.
void RlBuilder::critic_lines(RlPhase& p) {
  if (!critic_) return;
  const StaticMemory& cs = critic_->ranks[0].stat;
  if (!rl_.critic_param_offload)
    line(p, "trainer", "critic parameters (FSDP shard)", cs.params_bytes, "exact",
         "the engine's static memory for the critic (score head in place of lm_head); verl "
         "fsdp_workers.py l.1289 (model_dtype fp32)");
  if (!rl_.critic_optimizer_offload)
    line(p, "trainer", "critic optimizer states (FSDP shard)",
         ck_.add(cs.optimizer_bytes, cs.master_bytes, "rl"), "exact",
         "the engine's static memory for the critic");
}

// The rollout process's lines: vLLM's, or SGLang's (a process of its own on each GPU as well:
// SGLang's scheduler, engine.py l.783-853).
void RlBuilder::vllm(RlPhase& p, bool awake, bool weights_only) {
  const char* proc = sglang() ? "sglang" : "vllm";
  line(p, proc, "CUDA context", vllm_context_, "exact", "the GPU preset's measured context");
  if (rl_.rollout.cudagraph_bytes && !rl_.rollout.enforce_eager)
    line(p, proc, "CUDA graphs (given)", rl_.rollout.cudagraph_bytes, "code",
         sglang() ? kSglangSleep : kVllmSleep);
  if (weights_only)
    line(p, proc, "weights (tensor-parallel shard, bf16)", a_.vllm_weights, "exact",
         "the engine's parameter count split by rollout tp");
  else if (awake && sglang())
    line(p, proc, "weights, KV pool, request map and free list (mem_fraction_static's rule)",
         a_.vllm_requested, "code", kSglangBudget);
  else if (awake)
    line(p, proc, "its budget: weights, activations and KV cache", a_.vllm_requested, "code",
         kVllmBudget);
}

// The trainer's side of the weight sync: vLLM's bucket and the largest parameter whole and cast;
// SGLang's path clones fp32 tensors into buckets instead.
void RlBuilder::sync_lines(RlPhase& p) {
  const Bytes largest = detail::largest_param(m_);
  const RlRollout& r = rl_.rollout;
  if (lora()) {
    // collect_lora_params returns host tensors (.cpu()); update_weights casts them there and
    // copies them into the bucket.
    line(p, "trainer",
         r.layered_summon ? "bucket buffer (the adapters, from the host)"
                          : "bucket buffer (the adapters and the base model, from the host)",
         r.bucket_bytes, "code", r.layered_summon ? kVerlLayered : kVerlLora);
    return;
  }
  if (!sglang()) {
    line(p, "trainer", "bucket buffer", r.bucket_bytes, "code", kVerlSync);
    line(p, "trainer", "the largest parameter gathered whole (fp32) and cast (bf16)",
         ck_.mul(largest, 6, "rl"), "code", kVerlSync);
    return;
  }
  const Bytes whole = ck_.mul(largest, 4, "rl");
  line(p, "trainer", "two buckets of fp32 clones (the one sent and the next)",
       ck_.mul(std::max(r.bucket_bytes, whole), 2, "rl"), "code", kSglangSync);
  line(p, "trainer", "two parameters gathered whole (fp32)", ck_.mul(whole, 2, "rl"), "code",
       kSglangSync);
}

// Parameter records' bytes as stored (params.hpp weight_dtype: frozen base weights in the
// parameters' dtype, verl's model_dtype; adapters in theirs, peft's autocast_adapter_dtype fp32).
Bytes RlBuilder::stored_bytes(const std::vector<ParamRecord>& v) {
  Bytes n = 0;
  for (const ParamRecord& r : v) {
    const Bytes w = dtype_bytes(weight_dtype(r, s_.config));
    n = ck_.add(n, ck_.mul(ck_.mul(ck_.mul(r.rows, r.cols, "rl"), r.copies, "rl"), w, "rl"), "rl");
  }
  return n;
}

// LoRA's collection before the sync (rollout_mode): the actor loaded, vLLM asleep, and the
// summoned parameters as stored (FSDP1 summons in full precision): every FSDP unit, when the
// parameters are sharded (FULL_SHARD over more than one rank), and at vLLM's sleep level 2 the
// base model's copies made back on the GPU inside the summon; or, with layered_summon, the
// largest decoder layer's unit.
RlPhase RlBuilder::lora_collect() {
  RlPhase p = rl_phase("lora_collect",
                       "LoRA collection (FSDP parameters summoned whole, vLLM "
                       "asleep)");
  trainer_base(p, true, !rl_.optimizer_offload);
  const auto& recs = s_.param_records;
  const bool sharded = s_.config.par.zero == 3 && shard_ranks(s_.config.par) > 1;
  if (rl_.rollout.layered_summon) {
    Bytes layer = 0;
    for (const auto& k : recs.kinds) layer = std::max(layer, stored_bytes(k));
    if (sharded)
      line(p, "trainer", "the largest decoder layer summoned whole (layered_summon)", layer, "code",
           kVerlLayered);
  } else {
    Bytes all = ck_.add(stored_bytes(recs.embed), stored_bytes(recs.head), "rl");
    for (std::size_t i = 0; i < recs.kinds.size(); ++i)
      all = ck_.add(all, ck_.mul(stored_bytes(recs.kinds[i]), s_.kinds[i].layers, "rl"), "rl");
    // Unsharded (NO_SHARD, one rank) the summon gathers nothing: the parameters are whole.
    if (sharded) line(p, "trainer", "every FSDP unit summoned whole", all, "code", kVerlLora);
    line(p, "trainer", "the base model copied back to the GPU inside the summon (sleep level 2)",
         all, "code", kVerlLora);
  }
  vllm(p, !rl_.rollout.free_cache_engine, false);
  return p;
}

// A forward without grad over b sequences (the log-probabilities): the largest layer gathered
// (exact) and the larger of one layer's working set and the head's (logits, log-probabilities,
// the entropy), an estimate: T = b x s tokens, T(2h + (a + 2kv)d + 3f) x 2 B in the widest layer,
// T(h + V) x 2 B at the head (+ T x V x 2 for an eager entropy's softmax).
Bytes RlBuilder::forward_peak(std::uint64_t b, bool entropy, bool value_head) const {
  Checked ck;
  const std::uint64_t t = ck.mul(b, s_.config.seq, "rl");
  const std::uint64_t layer = widest_layer_width(m_, 1);
  std::uint64_t head = m_.hidden + (value_head ? 1 : m_.vocab);
  if (!value_head && entropy && s_.config.loss.entropy == Entropy::kEager) head += m_.vocab;
  const Bytes ws = ck.mul(ck.mul(t, std::max(layer, head), "rl"), 2, "rl");
  return ck.add(s_.zero3_gather, ws, "rl");
}

// A forward of verl's FSDP (FSDP1) holds its root unit gathered from the root's pre-forward on,
// through the head: the embedding, final norm and head in one FlatParameter (sharding.hpp
// fsdp1_root_held; setup.cpp set_fsdp1_root), until verl reshards it after the forward.
void RlBuilder::root_unit(RlPhase& p, const Setup& s) {
  if (s.fsdp_root_held == 0) return;
  // verl's FSDP2: the root group (final norm, head; the embedding when tied) gathered through
  // the forward, resharded after it (setup.cpp set_verl_fsdp2).
  if (verl_fsdp2(s.config)) {
    line(p, "trainer", "FSDP2 root group gathered (final norm, head)", s.fsdp_root_held, "code",
         "torch 2.9 fully_shard (the root resharded after forward); verl b178a3c fsdp_utils.py "
         "apply_fsdp2");
    return;
  }
  line(p, "trainer", "FSDP root unit gathered (embedding, final norm, head)", s.fsdp_root_held,
       "code",
       "torch 2.6 fsdp/_runtime_utils.py _post_forward_reshard (the root is not resharded "
       "after forward); verl b178a3c fsdp_workers.py l.527-539");
}

std::optional<Error> RlBuilder::prepare() {
  const TrainConfig& c = s_.config;
  const RlRollout& r = rl_.rollout;
  a_.capacity = device_capacity(gpu_, nullptr);
  trainer_fixed_ = device_overhead_bytes(s_, &gpu_);
  for (const DeviceOverhead& o : device_overheads(s_, &gpu_))
    if (o.name == "cuda.context") vllm_context_ = o.bytes;
  if (r.context_bytes) vllm_context_ = r.context_bytes;
  const Bytes held = held_at_start();
  a_.free_at_start = a_.capacity > held ? a_.capacity - held : 0;
  if (lora()) a_.vllm_max_lora_rank = detail::vllm_max_lora_rank(c.lora.rank);
  if (sglang()) {
    if (auto err = detail::size_sglang(m_, c.seq, r, a_, ck_)) return err;
  } else if (auto err = detail::size_vllm(m_, c.seq, r, r.max_num_seqs,
                                          r.max_model_len ? r.max_model_len : c.seq, a_, ck_)) {
    return err;
  }
  // The policy update: the engine's own step on the GPU.
  auto d = device_memory(s_, &gpu_, nullptr, false);
  if (!d.ok()) return d.error();
  update_total_ = d.value().total_bytes;
  if (critic_) {
    auto cd = device_memory(*critic_, &gpu_, nullptr, false);
    if (!cd.ok()) return cd.error();
    critic_update_total_ = cd.value().total_bytes;
  }
  if (ck_.overflowed()) return rl_error("rl", "a byte count passes 2^63");
  return std::nullopt;
}

void RlBuilder::phases() {
  const RlRollout& r = rl_.rollout;
  const bool params = !rl_.param_offload, opt = !rl_.optimizer_offload;
  const bool asleep_awake = !r.free_cache_engine;  // without sleep vLLM stays whole
  RlPhase sync = rl_phase("weight_sync", sglang() ? "weight sync (SGLang weights resumed, "
                                                    "parameters sent in buckets)"
                                                  : "weight sync (vLLM weights resumed, "
                                                    "parameters sent in buckets)");
  // With LoRA the actor is offloaded again once its parameters are on the host.
  trainer_base(sync, !lora() || params, opt);
  sync_lines(sync);
  vllm(sync, asleep_awake, !asleep_awake);
  RlPhase gen = rl_phase("generate", sglang() ? "generation (SGLang awake: weights and KV pool)"
                                              : "generation (vLLM awake: weights and KV cache)");
  trainer_base(gen, params, opt);
  vllm(gen, true, false);
  if (sglang())
    line(gen, "sglang", "generation's activations (outside mem_fraction_static)",
         a_.vllm_profile_peak, r.profile_peak_bytes ? "code" : "estimate", kSglangBudget);
  const std::uint64_t lb =
      rl_.log_prob_micro_batch ? rl_.log_prob_micro_batch : s_.config.micro_batch;
  RlPhase old = rl_phase("old_log_prob", "old policy's log-probabilities (actor forward, no grad)");
  trainer_base(old, true, opt);
  line(old, "trainer", "forward without grad (" + std::to_string(lb) + " sequences)",
       forward_peak(lb, true), "estimate", kVerlWorker);
  root_unit(old, s_);
  vllm(old, asleep_awake, false);
  a_.phases = {sync, gen, old};
  if (lora()) a_.phases.insert(a_.phases.begin(), lora_collect());
  if (rl_.reference) {
    RlPhase ref = rl_phase("ref_log_prob",
                           lora() ? "reference log-probabilities (the actor with its adapters "
                                    "disabled, no grad)"
                                  : "reference log-probabilities (reference forward, no grad)");
    // The actor's forward with its adapters off loads the actor as compute_log_prob does.
    trainer_base(ref, params || lora(), opt);
    // The reference's own model lives on the host (kVerlRef): its forward gathers one FSDP unit
    // at a time, as the actor's does (forward_peak's gather).
    line(ref, "trainer", "forward without grad (" + std::to_string(lb) + " sequences)",
         forward_peak(lb, false), "estimate", reference_model() ? kVerlRef : kVerlWorker);
    root_unit(ref, s_);
    vllm(ref, asleep_awake, false);
    a_.phases.push_back(ref);
  }
  if (critic_) {
    RlPhase val = rl_phase("values", "critic values (critic forward, no grad)");
    trainer_base(val, params, opt);
    line(val, "trainer", "critic forward without grad (" + std::to_string(lb) + " sequences)",
         forward_peak(lb, false, true), "estimate",
         "verl b178a3c fsdp_workers.py CriticWorker compute_values");
    root_unit(val, *critic_);
    vllm(val, asleep_awake, false);
    a_.phases.push_back(val);
    // The critic's step: its device figure holds the process's fixed costs, the critic's shards,
    // gradients and states; the actor's and the reference's stay beside it.
    RlPhase cu = rl_phase("critic_update", "critic update (its training step)");
    line(cu, "trainer",
         "the critic's training step on the device (fixed costs, parameters, gradients, "
         "optimizer, activations, the allocator's cache)",
         critic_update_total_, "exact", "the engine's device figure for the critic");
    actor_lines(cu, params, opt);
    vllm(cu, asleep_awake, false);
    a_.phases.push_back(cu);
  }
  RlPhase upd = rl_phase("update", "policy update (the training step)");
  line(upd, "trainer",
       "the training step on the device (fixed costs, parameters, gradients, "
       "optimizer, activations, the allocator's cache)",
       update_total_, "exact", "the engine's device figure (estimate --gpu)");
  critic_lines(upd);
  vllm(upd, asleep_awake, false);
  a_.phases.push_back(upd);
}

// The rollout's start: verl builds the actor and the reference first (AdamW's states come at the
// first step; the reference's parameters stay on the host, kVerlRef), so the GPU holds both
// processes' fixed costs and the actor's shard unless offloaded.
Bytes RlBuilder::held_at_start() {
  const StaticMemory& st = s_.ranks[0].stat;
  Bytes held = ck_.add(trainer_fixed_, vllm_context_, "rl");
  if (!rl_.param_offload) held = ck_.add(held, st.params_bytes, "rl");
  return held;
}

// vLLM starts when the free memory holds its budget and a max_model_len sequence; SGLang's rule
// adapts to the free memory and raises only when it leaves no KV pool.
void RlBuilder::start() {
  a_.vllm_starts =
      sglang() ? a_.kv_tokens > 0
               : a_.free_at_start >= a_.vllm_requested && a_.kv_blocks > 0 && a_.kv_holds_one;
}

// What vLLM or verl would refuse, and what the answer estimates or leaves out.
// The largest adapter tensor (A [r, in] or B [out, r]) in elements.
std::uint64_t largest_adapter(const ParamRecords& pr) {
  std::uint64_t n = 0;
  for (const auto& recs : pr.kinds)
    for (const ParamRecord& p : recs)
      if (p.adapter) n = std::max(n, p.rows * p.cols);
  return n;
}

// verl's reference model lives on the host (kVerlRef); rl.ref_param_offload is accepted and
// changes nothing, which the note says.
void reference_note(const TrainConfig& c, const RlSpec& rl, RlAnswer* a) {
  if (!rl.reference || c.lora.on()) return;
  a->notes.push_back(
      std::string("the reference's parameters stay on the host, each FSDP unit copied in for its "
                  "forward (verl b178a3c fsdp_workers.py l.524-526: CPUOffload for every role but "
                  "the actor)") +
      (rl.ref_param_offload ? "; rl.ref_param_offload changes nothing (the reference worker "
                              "reads ref.fsdp_config.param_offload, l.235-237, but only the "
                              "actor's code loads or offloads by it)"
                            : ""));
}

void notes(const ModelSpec& m, const Setup& s, const RlSpec& rl, RlAnswer* a) {
  const TrainConfig& c = s.config;
  const RlRollout& r = rl.rollout;
  if (r.engine == "sglang") {
    detail::sglang_notes(r, c.seq, *a);
    return;
  }
  detail::vllm_notes(r, *a);
  if (c.lora.on()) {
    a->notes.push_back(
        "LoRA: the reference log-probabilities come from the actor with its adapters disabled "
        "(verl ray_trainer.py l.298-302: no reference model); vLLM holds " +
        std::to_string(a->vllm_lora_slots) + " B of LoRA slots (max_lora_rank " +
        std::to_string(a->vllm_max_lora_rank) + ") inside its budget, before the KV cache");
    for (const RlLine& l : a->phases.front().lines)
      if (l.what.rfind("the base model copied back", 0) == 0)
        a->notes.push_back(
            "LoRA at vLLM's sleep level 2: each GPU's trainer also copies the whole model to "
            "host memory at every weight sync (" +
            std::to_string(l.bytes) +
            " B of host RAM per GPU, collect_lora_params' model.to('cpu')); "
            "rl.rollout.layered_summon=true summons one layer at a time and sends only the "
            "adapters (verl then needs rollout.load_format safetensors: the base model loaded by "
            "vLLM itself)");
  } else if (r.layered_summon) {
    a->notes.push_back(
        "rl.rollout.layered_summon without LoRA only sets vLLM's sleep level to 1 (weights kept "
        "in host memory while it sleeps instead of discarded): the GPU's memory is the same");
  }
  // The bucket holds one tensor at least, cast to the rollout's bf16: with layered_summon only
  // the adapters are sent.
  const Bytes largest = (c.lora.on() && r.layered_summon ? largest_adapter(s.param_records)
                                                         : detail::largest_param(m)) *
                        2;
  if (largest > r.bucket_bytes)
    a->notes.push_back("the largest parameter (" + std::to_string(largest) +
                       " B in bf16) does not fit the weight-sync bucket: verl asserts ('too large "
                       "to fit in the bucket'); raise update_weights_bucket_megabytes");
}

}  // namespace

// The step's answer without fixes (rl_step adds them).
Result<RlAnswer> rl_phases(const ModelSpec& m, const TrainConfig& actor, const GpuSpec& gpu,
                           const RlSpec& rl) {
  if (rl.framework == "trl") return detail::trl_phases(m, actor, gpu, rl);
  if (rl.framework == "openrlhf") return detail::openrlhf_phases(m, actor, gpu, rl);
  auto s = make_setup(m, actor);
  if (!s.ok()) return s.error();
  if (auto err = check(m, s.value().config, rl)) return *err;
  // PPO's critic: the actor's model and config with the value head and loss (verl's critic
  // model path defaults to the actor's).
  std::optional<Setup> critic;
  if (rl.algorithm == "ppo") {
    TrainConfig cc = s.value().config;
    cc.loss = Loss{LossImpl::kValue, 1, Entropy::kNone};
    cc.lora = Lora{};  // critic.model.lora_rank 0 (verl's default): the critic trains whole
    auto cs = make_setup(m, cc);
    if (!cs.ok()) return cs.error();
    critic = std::move(cs.value());
  }
  RlAnswer a;
  a.framework = "verl", a.engine = rl.rollout.engine, a.mode = "colocate", a.vllm_here = true;
  a.algorithm = rl.algorithm;
  RlBuilder b(m, s.value(), critic ? &*critic : nullptr, gpu, rl, &a);
  if (auto err = b.prepare()) return *err;
  b.phases();
  b.start();
  if (auto err = b.overflow()) return *err;
  detail::set_peak(a);
  notes(m, s.value(), rl, &a);
  reference_note(s.value().config, rl, &a);
  return a;
}

namespace {

// The single changes rl_step tries when the step does not fit, the cheapest first.
std::vector<std::pair<std::string, RlSpec>> fix_candidates(const RlSpec& rl, const RlAnswer& a) {
  std::vector<std::pair<std::string, RlSpec>> out;
  auto add = [&](const std::string& change, auto set) {
    RlSpec s = rl;
    set(s);
    out.emplace_back(change, s);
  };
  // OpenRLHF turns vLLM's sleep off on vLLM's own GPUs (rl_openrlhf.cpp, orl_check_layout).
  if (a.vllm_here && !rl.rollout.free_cache_engine && rl.rollout.mode != "separate")
    add("rl.rollout.free_cache_engine=true", [](RlSpec& s) { s.rollout.free_cache_engine = true; });
  // The largest utilization (in hundredths) that leaves the generation within the GPU.
  // With separate pools (OpenRLHF), the largest phase on vLLM's own GPUs: its weight sync's
  // received parameter sits beside the budget too.
  const RlPhase* gen = nullptr;
  for (const RlPhase& p : a.phases)
    if (a.pools.empty() ? p.id == "generate"
                        : p.pool == "vllm" && (!gen || p.total_bytes > gen->total_bytes))
      gen = &p;
  if (gen && a.vllm_here && gen->total_bytes > a.capacity) {
    // vLLM's budget is the fraction of the GPU's total; SGLang's holdings grow with the fraction
    // of the memory free at its start (a guess to try: rl_step keeps it only where it fits).
    const Bytes others = gen->total_bytes - a.vllm_requested;
    const double base = static_cast<double>(a.engine == "sglang" ? a.free_at_start : a.capacity);
    if (others < a.capacity && base > 0) {
      const double u = std::floor(100.0 * static_cast<double>(a.capacity - others) / base) / 100.0;
      if (u > 0 && u < rl.rollout.gpu_memory_utilization) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f", u);
        add(std::string("rl.rollout.gpu_memory_utilization=") + buf,
            [u](RlSpec& s) { s.rollout.gpu_memory_utilization = u; });
      }
    }
  }
  // SGLang with no pool (or too few tokens for one sequence): the smallest fraction of the
  // memory free at its start that holds its weights, maps and one sequence's KV.
  if (a.engine == "sglang" && a.kv_tokens < a.kv_concurrency_seq && a.free_at_start > 0) {
    const double need =
        static_cast<double>(a.vllm_weights) + static_cast<double>(a.sglang_maps) +
        static_cast<double>(a.kv_bytes_per_token) * static_cast<double>(a.kv_concurrency_seq + 1);
    const double u = std::ceil(100.0 * need / static_cast<double>(a.free_at_start)) / 100.0;
    if (u > rl.rollout.gpu_memory_utilization && u <= 1) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f", u);
      add(std::string("rl.rollout.gpu_memory_utilization=") + buf,
          [u](RlSpec& s) { s.rollout.gpu_memory_utilization = u; });
    }
  }
  // vLLM with too small a budget (no KV block, or too few for one max_model_len request): the
  // smallest hundredth of the GPU that holds its weights, LoRA slots, profiled peak and one such
  // request's blocks (rl_step keeps it only where the step then starts and fits).
  if (a.engine == "vllm" && a.vllm_here && (a.kv_blocks == 0 || !a.kv_holds_one) &&
      a.capacity > 0) {
    const double block = static_cast<double>(rl.rollout.block_size ? rl.rollout.block_size : 16);
    const double one = static_cast<double>(a.kv_bytes_per_token) * block *
                       std::ceil(static_cast<double>(a.max_model_len) / block);
    const double need = static_cast<double>(a.vllm_weights) +
                        static_cast<double>(a.vllm_lora_slots) +
                        static_cast<double>(a.vllm_profile_peak) + one;
    const double u = std::ceil(100.0 * need / static_cast<double>(a.capacity)) / 100.0;
    if (u > rl.rollout.gpu_memory_utilization && u <= 1) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f", u);
      add(std::string("rl.rollout.gpu_memory_utilization=") + buf,
          [u](RlSpec& s) { s.rollout.gpu_memory_utilization = u; });
    }
  }
  // TRL: a generation batch of one micro-batch (the KV cache and generation's working set scale
  // with it), or a vLLM server on other GPUs; offloading is DeepSpeed's, in the config.
  // OpenRLHF: DeepSpeed's sleep, and with separate pools a model's own GPUs.
  if (rl.framework == "openrlhf") {
    if (!rl.deepspeed_sleep)
      add("rl.deepspeed_sleep=true", [](RlSpec& s) { s.deepspeed_sleep = true; });
    if (rl.colocate_actor_ref)
      add("rl.colocate_actor_ref=false", [](RlSpec& s) { s.colocate_actor_ref = false; });
    if (rl.colocate_critic_reward)
      add("rl.colocate_critic_reward=false", [](RlSpec& s) { s.colocate_critic_reward = false; });
    return out;
  }
  if (rl.framework == "trl") {
    if (a.steps_per_generation > 1)
      add("rl.steps_per_generation=1", [](RlSpec& s) { s.steps_per_generation = 1; });
    if (rl.rollout.engine != "vllm" || rl.rollout.mode != "server")
      add("rl.rollout.engine=vllm, rl.rollout.mode=server", [](RlSpec& s) {
        s.rollout.engine = "vllm";
        s.rollout.mode = "server";
      });
    return out;
  }
  // verl's LoRA: the adapters gathered one layer at a time (ppo_lora.rst recommends it for
  // large models or GPUs under 48 GB).
  if (a.vllm_max_lora_rank > 0 && !rl.rollout.layered_summon)
    add("rl.rollout.layered_summon=true", [](RlSpec& s) { s.rollout.layered_summon = true; });
  if (!rl.optimizer_offload)
    add("rl.optimizer_offload=true", [](RlSpec& s) { s.optimizer_offload = true; });
  if (!rl.param_offload) add("rl.param_offload=true", [](RlSpec& s) { s.param_offload = true; });
  if (rl.algorithm == "ppo" && !rl.critic_optimizer_offload)
    add("rl.critic_optimizer_offload=true", [](RlSpec& s) { s.critic_optimizer_offload = true; });
  if (rl.algorithm == "ppo" && !rl.critic_param_offload)
    add("rl.critic_param_offload=true", [](RlSpec& s) { s.critic_param_offload = true; });
  return out;
}

}  // namespace

// Every rollout tp that divides the GPUs and the heads, ranked (RlAnswer::rollout_options).
std::vector<RlRolloutOption> rollout_options(const ModelSpec& m, const TrainConfig& actor,
                                             const GpuSpec& gpu, const RlSpec& rl) {
  std::vector<RlRolloutOption> out;
  // On GPUs of its own (OpenRLHF's separate pools) vLLM keeps its GPUs (num_engines x tp) and
  // each tp that divides them splits them into engines.
  const bool own = rl.rollout.mode == "separate";
  const std::uint64_t vllm_gpus =
      own ? (rl.rollout.num_engines ? rl.rollout.num_engines : 1) * rl.rollout.tp : actor.par.dp;
  for (std::uint64_t t = 1; t <= vllm_gpus && t <= 64; t *= 2) {
    bool divides = vllm_gpus % t == 0;
    for (const LayerKind& k : m.kinds) divides = divides && k.heads % t == 0;
    if (!divides) continue;
    RlSpec s = rl;
    s.rollout.tp = t;
    if (own) s.rollout.num_engines = vllm_gpus / t;
    if (rl.rollout.ep > 1) {  // the experts' split kept: dp = ep / tp
      if (rl.rollout.ep % t != 0) continue;
      s.rollout.dp = rl.rollout.ep / t;
    }
    auto r = rl_phases(m, actor, gpu, s);
    if (!r.ok()) continue;  // the engine refuses this split (its message is the request's own)
    const RlAnswer& a = r.value();
    out.push_back({t, own ? vllm_gpus / t : 0, a.fits, a.vllm_starts, a.peak_bytes,
                   detail::phase_name(a.phases[a.peak_phase]), a.kv_tokens, a.kv_concurrency});
  }
  std::stable_sort(out.begin(), out.end(), [](const RlRolloutOption& x, const RlRolloutOption& y) {
    const bool gx = x.fits && x.starts, gy = y.fits && y.starts;
    if (gx != gy) return gx;
    // With vLLM's GPUs held (separate pools) its engines' caches together; else one replica's.
    const std::uint64_t kx = x.kv_tokens * (x.num_engines ? x.num_engines : 1),
                        ky = y.kv_tokens * (y.num_engines ? y.num_engines : 1);
    if (kx != ky) return kx > ky;
    return x.tp < y.tp;
  });
  return out;
}

Result<RlAnswer> rl_step(const ModelSpec& m, const TrainConfig& actor, const GpuSpec& gpu,
                         const RlSpec& rl) {
  auto a = rl_phases(m, actor, gpu, rl);
  if (!a.ok()) return a;
  if (a.value().vllm_here) a.value().rollout_options = rollout_options(m, actor, gpu, rl);
  if (a.value().fits && a.value().vllm_starts) return a;
  for (const auto& [change, spec] : fix_candidates(rl, a.value())) {
    auto t = rl_phases(m, actor, gpu, spec);
    if (t.ok() && t.value().fits && t.value().vllm_starts)
      a.value().fixes.push_back({change, t.value().peak_bytes,
                                 detail::phase_name(t.value().phases[t.value().peak_phase]),
                                 rl_gpus(t.value())});
  }
  return a;
}

std::uint64_t rl_gpus(const RlAnswer& a) {
  // vLLM's pool at most 2^30 engines x tp 2^30, the others 2^40 each (read/rl.cpp): below 2^63.
  std::uint64_t n = 0;
  for (const RlPool& p : a.pools) n += p.gpus;
  return n;
}

}  // namespace actmem

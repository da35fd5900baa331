// OpenRLHF's step on its GPUs (rl.hpp, rl.framework "openrlhf"), OpenRLHF/OpenRLHF 3c3be62: with
// --train.colocate_all every model a Ray process of its own on each GPU (the actor's DeepSpeed
// rank, the reference's, PPO's critic, a reward model) beside a vLLM engine, each with its own
// CUDA context; without it (its default, rollout.mode "separate") each model and vLLM on GPUs of
// their own, the actor and reference or the critic and reward model sharing theirs when asked.
// Phase by phase, each phase the sum of what the processes on one GPU hold.
#include <algorithm>

#include "actmem/device/device.hpp"
#include "actmem/setup/setup.hpp"
#include "plan/rl_parts.hpp"

namespace actmem {

RlRollout openrlhf_rollout_defaults() {
  // OpenRLHF/OpenRLHF 3c3be62 openrlhf/cli/train_ppo_ray.py unless named.
  RlRollout r;
  r.engine = "vllm";
  r.mode = "colocate";              // --train.colocate_all (l.223-228); "separate" without it
  r.tp = 1;                         // --vllm.tensor_parallel_size (l.234-239)
  r.gpu_memory_utilization = 0.95;  // --vllm.gpu_memory_utilization (l.250-255)
  r.free_cache_engine = false;      // --vllm.enable_sleep (l.244-249)
  r.max_num_seqs = 128;             // not passed (trainer/ray/vllm_engine.py l.266-297): vLLM's
  r.max_num_batched_tokens = 2048;  // defaults for AsyncLLMEngine.from_engine_args
  r.bucket_bytes = 0;               // one parameter at a time (ppo_actor.py l.408-489)
  return r;
}

namespace detail {

namespace {

constexpr const char* kOrlLayout =
    "OpenRLHF/OpenRLHF 3c3be62 cli/train_ppo_ray.py l.41-117: --train.colocate_all puts every "
    "model's Ray process (0.2 GPU each) and the vLLM engine in one placement group";
constexpr const char* kOrlVllm =
    "OpenRLHF 3c3be62 trainer/ray/vllm_engine.py (a separate Ray process per engine, bf16, "
    "max_model_len = --data.max_len); vLLM's V1 budget rule: requested = gpu_memory_utilization "
    "x total";
constexpr const char* kOrlSleep =
    "OpenRLHF 3c3be62 vllm_engine.py l.138-153: sleep level 1 (weights to the CPU, KV cache "
    "discarded), weights woken for the sync (ppo_trainer.py l.311-314), all for generation";
constexpr const char* kOrlEval =
    "OpenRLHF 3c3be62 utils/deepspeed/deepspeed.py l.489-501: the reference and reward models "
    "in bf16, ZeRO-3 when the actor's is, otherwise whole on every GPU";
constexpr const char* kOrlForward =
    "OpenRLHF 3c3be62 experience_maker.py l.113-233: reward, actor, critic and reference "
    "forwards under no_grad, --rollout.micro_batch_size sequences at a time, one model at a time "
    "with empty_cache between them (colocate_all); the actor's logits in fp32 (actor.py l.267)";
constexpr const char* kOrlSync =
    "OpenRLHF 3c3be62 trainer/ray/ppo_actor.py l.408-489: one parameter at a time, gathered on "
    "its own under ZeRO-3 and cloned for CUDA IPC (colocate_all, nccl backend)";
constexpr const char* kOrlPools =
    "OpenRLHF 3c3be62 cli/train_ppo_ray.py l.41-138: without --train.colocate_all each model's "
    "Ray actors take a GPU each (num_gpus_per_actor 1), vLLM's engines their own GPUs; "
    "--train.colocate_actor_ref and --train.colocate_critic_reward share one placement group";
constexpr const char* kOrlBroadcast =
    "OpenRLHF 3c3be62 ppo_actor.py l.420-436 (_broadcast_param: param.data broadcast from rank "
    "0, gathered whole under ZeRO-3) and vllm_worker_wrap.py l.32-50 (update_weight: "
    "torch.empty(shape) of the whole parameter on every vLLM worker, then load_weights)";

// The processes on one GPU: every one (--train.colocate_all: name "") or one of the pools.
struct OrlPool {
  std::string name;
  std::uint64_t gpus = 0;
  bool vllm = false, actor = false, reference = false, critic = false, reward = false;
};

bool separate(const RlSpec& rl) {
  return rl.rollout.mode == "separate";
}

std::uint64_t world(const TrainConfig& c) {
  return c.par.dp * c.par.tp * c.par.cp * c.par.pp;
}

// OpenRLHF's pools without --train.colocate_all (train_ppo_ray.py l.41-138): vLLM's engines, the
// actor (with the reference when colocated), the reference, the critic (with the reward model when
// colocated), the reward model; each only when the step loads it.
std::vector<OrlPool> orl_pools(const TrainConfig& c, const RlSpec& rl) {
  if (!separate(rl))
    return {{"", world(c), true, true, rl.reference, rl.algorithm == "ppo", rl.reward_model}};
  const bool ppo = rl.algorithm == "ppo";
  const std::uint64_t engines = rl.rollout.num_engines ? rl.rollout.num_engines : 1;
  std::vector<OrlPool> out;
  out.push_back({"vllm", engines * rl.rollout.tp, true, false, false, false, false});
  const bool with_ref = rl.reference && rl.colocate_actor_ref;
  out.push_back({with_ref ? "actor+reference" : "actor", world(c), false, true, with_ref});
  if (rl.reference && !with_ref)
    out.push_back({"reference", rl.reference_gpus, false, false, true, false, false});
  const bool with_reward = ppo && rl.reward_model && rl.colocate_critic_reward;
  if (ppo)
    out.push_back({with_reward ? "critic+reward" : "critic", rl.critic_gpus, false, false, false,
                   true, with_reward});
  if (rl.reward_model && !with_reward)
    out.push_back({"reward", rl.reward_gpus, false, false, false, false, true});
  return out;
}

// What OpenRLHF asserts of its layout (train_ppo_ray.py l.41-64, l.109-113, l.663-665): the
// engines fill the actor's GPUs under colocate_all; colocated pools are the same size.
std::optional<Error> orl_check_layout(const TrainConfig& c, const RlSpec& rl) {
  const RlRollout& r = rl.rollout;
  if (!separate(rl)) {
    if (r.num_engines && r.tp && r.num_engines * r.tp != world(c))
      return rl_error("rl.rollout.num_engines",
                      std::to_string(r.num_engines) + " engines x rl.rollout.tp " +
                          std::to_string(r.tp) + " is not the actor's " + std::to_string(world(c)) +
                          " GPUs, which OpenRLHF asserts with --train.colocate_all "
                          "(train_ppo_ray.py l.56-64)");
    return std::nullopt;
  }
  if (r.free_cache_engine)
    return rl_error("rl.rollout.free_cache_engine",
                    "OpenRLHF turns vLLM's sleep off without --train.colocate_all "
                    "(train_ppo_ray.py l.663-665)");
  if (rl.reference && rl.colocate_actor_ref && rl.reference_gpus != world(c))
    return rl_error("rl.reference_gpus",
                    std::to_string(rl.reference_gpus) + " is not the actor's " +
                        std::to_string(world(c)) +
                        " GPUs, which OpenRLHF asserts with --train.colocate_actor_ref "
                        "(train_ppo_ray.py l.41-46)");
  if (rl.algorithm == "ppo" && rl.reward_model && rl.colocate_critic_reward &&
      rl.reward_gpus != rl.critic_gpus)
    return rl_error("rl.reward_gpus",
                    std::to_string(rl.reward_gpus) + " is not the critic's " +
                        std::to_string(rl.critic_gpus) +
                        " GPUs (rl.critic_gpus), which OpenRLHF asserts with "
                        "--train.colocate_critic_reward (train_ppo_ray.py l.109-113)");
  return std::nullopt;
}

std::optional<Error> orl_check(const ModelSpec& m, const TrainConfig& c, const RlSpec& rl) {
  if (rl.algorithm != "grpo" && rl.algorithm != "ppo")
    return rl_error("rl.algorithm", "'" + rl.algorithm +
                                        "': allowed with rl.framework openrlhf: grpo "
                                        "(--algo.advantage.estimator group_norm), ppo (gae)");
  if (c.loss.impl != LossImpl::kLogprobOpenrlhf)
    return rl_error("config.loss",
                    "'" + loss_name(c.loss) + "': OpenRLHF's actor computes logprob_openrlhf");
  // --ref.offload, --reward.offload: get_eval_ds_config's offload_param, which DeepSpeed applies
  // where it partitions the parameters (ZeRO-3; the eval engine runs stage 0 otherwise).
  for (const auto& [on, field] : {std::pair{rl.reference_offload, "rl.reference_offload"},
                                  std::pair{rl.reward_offload, "rl.reward_offload"}})
    if (on && c.par.zero < 3)
      return rl_error(field,
                      "modelled with config.zero 3: OpenRLHF's eval engine runs ZeRO stage 0 "
                      "under ZeRO-2 (deepspeed.py get_ds_eval_config: stage if 3 else 0), where "
                      "DeepSpeed partitions and offloads no parameter");
  if (c.lora.on())
    return rl_error("config.lora_rank",
                    "LoRA in OpenRLHF's step (--lora_rank: the merge before each weight sync) is "
                    "not modelled; allowed with rl.framework trl");
  Checked ck;
  if (auto err = check_vllm_attention(m, rl.rollout.tp, ck)) return err;
  if (auto err = orl_check_layout(c, rl)) return err;
  // vLLM's GPUs: the actor's (colocate_all) or its engines' own (num_engines x tp).
  TrainConfig v = c;
  if (separate(rl))
    v.par.dp = (rl.rollout.num_engines ? rl.rollout.num_engines : 1) * rl.rollout.tp;
  return check_vllm(v, rl.rollout, rl.rollout.max_model_len ? rl.rollout.max_model_len : c.seq);
}

// Each model's setup on its own GPUs: the actor's config (the reference: the actor's model; the
// critic and reward model: a one-label head) with dp for that pool's GPU count.
struct OrlSetups {
  Setup actor, critic, reference, reward;
};

class OrlBuilder : public RlLines {
 public:
  OrlBuilder(const ModelSpec& m, const OrlSetups& s, const GpuSpec& gpu, const RlSpec& rl,
             RlAnswer* a)
      : m_(m), s_(s.actor), setups_(s), gpu_(gpu), rl_(rl), a_(*a) {}

  std::optional<Error> prepare();
  void pool(const OrlPool& p);  // the phases this pool works in, appended to the answer
  void start();

 private:
  bool ppo() const { return rl_.algorithm == "ppo"; }
  bool sep() const { return separate(rl_); }
  std::string label(const char* text) const {
    return pool_.name.empty() ? text : pool_.name + " GPUs: " + text;
  }
  RlPhase phase(const char* id, const char* text) const {
    RlPhase p = rl_phase(id, "");
    p.label = label(text);
    p.pool = pool_.name;
    return p;
  }
  void push(RlPhase p) { a_.phases.push_back(std::move(p)); }
  void generate();
  void forwards();
  void updates();
  void weight_sync();
  void actor(RlPhase& p, bool states);
  void critic(RlPhase& p, bool states);
  void frozen(RlPhase& p);
  void vllm(RlPhase& p, bool awake, bool weights);
  Bytes forward(const Setup& s, std::uint64_t b, std::uint64_t head_bytes_per_token);
  RlPhase no_grad(const char* id, const char* label, const char* process, std::uint64_t b,
                  Bytes bytes);

  const ModelSpec& m_;
  const Setup& s_;
  const OrlSetups& setups_;
  const GpuSpec& gpu_;
  const RlSpec& rl_;
  RlAnswer& a_;
  OrlPool pool_;
  Bytes context_ = 0, actor_step_ = 0, critic_step_ = 0;
  Bytes fixed_ = 0, critic_fixed_ = 0, ref_fixed_ = 0, reward_fixed_ = 0;
};

std::optional<Error> OrlBuilder::prepare() {
  const TrainConfig& c = s_.config;
  const RlRollout& r = rl_.rollout;
  a_.capacity = device_capacity(gpu_, nullptr);
  fixed_ = device_overhead_bytes(s_, &gpu_);
  critic_fixed_ = device_overhead_bytes(setups_.critic, &gpu_);
  ref_fixed_ = device_overhead_bytes(setups_.reference, &gpu_);
  reward_fixed_ = device_overhead_bytes(setups_.reward, &gpu_);
  for (const DeviceOverhead& o : device_overheads(s_, &gpu_))
    if (o.name == "cuda.context") context_ = o.bytes;
  if (r.context_bytes) context_ = r.context_bytes;
  if (auto err = size_vllm(m_, c.seq, r, r.max_num_seqs, r.max_model_len ? r.max_model_len : c.seq,
                           a_, ck_))
    return err;
  auto d = device_memory(s_, &gpu_, nullptr, false);
  if (!d.ok()) return d.error();
  actor_step_ = d.value().total_bytes;
  if (ppo()) {
    auto cd = device_memory(setups_.critic, &gpu_, nullptr, false);
    if (!cd.ok()) return cd.error();
    critic_step_ = cd.value().total_bytes;
  }
  return overflow();
}

// The actor's process: its fixed costs, bf16 weights, and (without DeepSpeed's sleep, or in its
// own update) the fp32 master weights and AdamW's states.
void OrlBuilder::actor(RlPhase& p, bool states) {
  if (!pool_.actor) return;
  const StaticMemory& st = s_.ranks[0].stat;
  line(p, "actor", "fixed costs (CUDA context, NCCL, cuBLAS workspace)", fixed_, "exact",
       "the engine's device overheads (device.hpp)");
  line(p, "actor", "parameters (bf16)", st.params_bytes, "exact",
       "the engine's static memory (ZeRO-2: whole; ZeRO-3: this GPU's shard)");
  if (states && !rl_.deepspeed_sleep)
    line(p, "actor", "optimizer states and fp32 master weights",
         ck_.add(st.optimizer_bytes, st.master_bytes, "rl"), "exact",
         "the engine's static memory (DeepSpeed's partitions)");
}

void OrlBuilder::critic(RlPhase& p, bool states) {
  if (!ppo() || !pool_.critic) return;
  const StaticMemory& st = setups_.critic.ranks[0].stat;
  line(p, "critic", "fixed costs (CUDA context, NCCL, cuBLAS workspace)", critic_fixed_, "exact",
       sep() ? kOrlPools : kOrlLayout);
  line(p, "critic", "parameters (bf16)", st.params_bytes, "exact",
       "the engine's static memory for the critic (a one-label head in place of lm_head)");
  if (states && !rl_.deepspeed_sleep)
    line(p, "critic", "optimizer states and fp32 master weights",
         ck_.add(st.optimizer_bytes, st.master_bytes, "rl"), "exact",
         "the engine's static memory for the critic");
}

// The reference and the reward model: bf16 weights, never offloaded by the sleep logic.
void OrlBuilder::frozen(RlPhase& p) {
  const char* layout = sep() ? kOrlPools : kOrlLayout;
  // With --ref.offload / --reward.offload the ZeRO-3 shard is on the host: each module fetched
  // for the forward (its gather is the forward's).
  if (rl_.reference && pool_.reference) {
    line(p, "reference", "fixed costs (CUDA context, NCCL, cuBLAS workspace)", ref_fixed_, "exact",
         layout);
    if (!rl_.reference_offload)
      line(p, "reference", "parameters (bf16)", setups_.reference.ranks[0].stat.params_bytes,
           "code", kOrlEval);
  }
  if (rl_.reward_model && pool_.reward) {
    line(p, "reward", "fixed costs (CUDA context, NCCL, cuBLAS workspace)", reward_fixed_, "exact",
         layout);
    if (!rl_.reward_offload)
      line(p, "reward", "parameters (bf16)", setups_.reward.ranks[0].stat.params_bytes, "code",
           kOrlEval);
  }
}

// The vLLM engine's process: its context and graphs always; its budget when awake, or without
// sleep mode; its weights alone when woken for the sync.
void OrlBuilder::vllm(RlPhase& p, bool awake, bool weights) {
  if (!pool_.vllm) return;
  const RlRollout& r = rl_.rollout;
  line(p, "vllm", "CUDA context", context_, "exact", "the GPU preset's measured context");
  if (r.cudagraph_bytes && !r.enforce_eager)
    line(p, "vllm", "CUDA graphs (given)", r.cudagraph_bytes, "code", kOrlSleep);
  if (awake || !r.free_cache_engine)
    line(p, "vllm", "its budget: weights, activations and KV cache", a_.vllm_requested, "code",
         kOrlVllm);
  else if (weights)
    line(p, "vllm", "weights (woken for the sync, bf16)", a_.vllm_weights, "code", kOrlSleep);
}

// A forward without grad over b sequences: the widest layer's working set, or the head's
// (head_bytes_per_token per token), whichever is larger, beside ZeRO-3's gather (an estimate).
Bytes OrlBuilder::forward(const Setup& s, std::uint64_t b, std::uint64_t head_bytes_per_token) {
  const Bytes tokens = ck_.mul(b, s.config.seq, "rl");
  return no_grad_forward(m_, s, tokens, ck_.mul(tokens, head_bytes_per_token, "rl"), ck_);
}

RlPhase OrlBuilder::no_grad(const char* id, const char* label, const char* process, std::uint64_t b,
                            Bytes bytes) {
  RlPhase p = phase(id, label);
  actor(p, true);
  critic(p, true);
  frozen(p);
  line(p, process, "forward without grad (" + std::to_string(b) + " sequences)", bytes, "estimate",
       kOrlForward);
  vllm(p, false, false);
  return p;
}

void OrlBuilder::generate() {
  if (!pool_.vllm) return;
  RlPhase gen =
      phase("generate", sep() ? "generation (vLLM)" : "generation (vLLM awake beside every model)");
  actor(gen, true);
  critic(gen, true);
  frozen(gen);
  vllm(gen, true, false);
  push(gen);
}

// The no-grad forwards, each on the GPUs of its model (experience_maker.py l.113-233).
void OrlBuilder::forwards() {
  const std::uint64_t b = rl_.log_prob_micro_batch ? rl_.log_prob_micro_batch : 1;
  // The actor's and reference's heads: the bf16 logits and their fp32 copy (6 B per vocabulary
  // entry); the reward's and critic's: one value per token.
  const std::uint64_t lm = ck_.mul(m_.vocab, 6, "rl");
  const std::uint64_t value = ck_.add(ck_.mul(m_.hidden, 2, "rl"), 2, "rl");
  if (rl_.reward_model && pool_.reward)
    push(no_grad("reward", "reward model's scores (forward, no grad)", "reward", b,
                 forward(setups_.reward, b, value)));
  if (pool_.actor)
    push(no_grad("old_log_prob", "old policy's log-probabilities (forward, no grad)", "actor", b,
                 forward(s_, b, lm)));
  if (ppo() && pool_.critic)
    push(no_grad("values", "critic values (forward, no grad)", "critic", b,
                 forward(setups_.critic, b, value)));
  if (rl_.reference && pool_.reference)
    push(no_grad("ref_log_prob", "reference log-probabilities (forward, no grad)", "reference", b,
                 forward(setups_.reference, b, lm)));
}

// ppo_trainer.py l.274-296: with DeepSpeed's sleep the critic trains, then the actor; without it
// both train at once, on the same GPUs under colocate_all, on their own GPUs otherwise.
void OrlBuilder::updates() {
  const char* step =
      "the training step on the device (fixed costs, parameters, gradients, "
      "optimizer, activations, the allocator's cache)";
  if (ppo() && pool_.critic && (rl_.deepspeed_sleep || sep())) {
    RlPhase cu = phase("critic_update", "critic update (its training step)");
    actor(cu, false);
    line(cu, "critic", step, critic_step_, "exact", "the engine's device figure for the critic");
    frozen(cu);
    vllm(cu, false, false);
    push(cu);
  }
  if (!pool_.actor) return;
  RlPhase upd = phase("update", ppo() && !rl_.deepspeed_sleep && !sep()
                                    ? "critic and actor updates (at once)"
                                    : "policy update (the training step)");
  line(upd, "actor", step, actor_step_, "exact", "the engine's device figure (estimate --gpu)");
  if (ppo() && !rl_.deepspeed_sleep && pool_.critic)
    line(upd, "critic", step, critic_step_, "exact", "the engine's device figure for the critic");
  else
    critic(upd, false);
  frozen(upd);
  vllm(upd, false, false);
  push(upd);
}

// colocate_all: each parameter cloned for CUDA IPC (ppo_actor.py l.103, l.441-470); separate
// pools: broadcast over NCCL into a whole-parameter buffer on every vLLM worker.
void OrlBuilder::weight_sync() {
  if (!pool_.actor && !pool_.vllm) return;
  RlPhase sync = phase("weight_sync", sep() ? "weight sync (each parameter broadcast to vLLM)"
                                            : "weight sync (each parameter sent to vLLM)");
  actor(sync, true);
  const TrainConfig& c = s_.config;
  const Bytes largest = ck_.mul(largest_param(m_), dtype_bytes(c.param_dtype), "rl");
  if (pool_.actor && !sep())
    line(sync, "actor",
         c.par.zero >= 3 ? "the largest parameter gathered whole and its clone"
                         : "the largest parameter's clone",
         ck_.mul(largest, c.par.zero >= 3 ? 2 : 1, "rl"), "code", kOrlSync);
  if (pool_.actor && sep() && c.par.zero >= 3)
    line(sync, "actor", "the largest parameter gathered whole", largest, "code", kOrlBroadcast);
  critic(sync, true);
  frozen(sync);
  vllm(sync, false, true);
  if (pool_.vllm && sep())
    line(sync, "vllm", "the largest parameter received whole (bf16)",
         ck_.mul(largest_param(m_), 2, "rl"), "code", kOrlBroadcast);
  push(sync);
}

void OrlBuilder::pool(const OrlPool& p) {
  pool_ = p;
  const std::size_t first = a_.phases.size();
  generate();
  forwards();
  updates();
  weight_sync();
  if (p.name.empty()) return;
  RlPool out{p.name, p.gpus, 0, "", false};
  for (std::size_t i = first; i < a_.phases.size(); ++i)
    if (a_.phases[i].total_bytes > out.peak_bytes)
      out.peak_bytes = a_.phases[i].total_bytes, out.peak_phase = a_.phases[i].id;
  // vLLM's pool fits only where vLLM starts (start() runs before the pools).
  out.fits = out.peak_bytes <= a_.capacity && (!p.vllm || a_.vllm_starts);
  a_.pools.push_back(out);
}

// vLLM starts before the DeepSpeed models load (train_ppo_ray.py l.66-82 before l.171-185): its
// budget against the GPU less its own context; with sleep mode it sleeps at once.
void OrlBuilder::start() {
  a_.free_at_start = a_.capacity > context_ ? a_.capacity - context_ : 0;
  a_.vllm_starts = a_.free_at_start >= a_.vllm_requested && a_.kv_blocks > 0 && a_.kv_holds_one;
}

// The four setups: each model's config with dp for its GPUs (the actor's own under colocate_all).
// OpenRLHF's loss runs with tp, cp and pp 1 (validate.cpp refuses more), so a pool's GPUs are its
// data-parallel ranks.
Result<OrlSetups> orl_setups(const ModelSpec& m, const TrainConfig& c, const RlSpec& rl) {
  TrainConfig cc = c;
  cc.loss = Loss{LossImpl::kValue, 1, Entropy::kNone};
  auto with_gpus = [&](TrainConfig t, std::uint64_t gpus) {
    if (separate(rl)) t.par.dp = gpus;
    return make_setup(m, t);
  };
  auto a = make_setup(m, c);
  if (!a.ok()) return a.error();
  auto cr = with_gpus(cc, rl.critic_gpus);
  if (!cr.ok()) return cr.error();
  auto ref = with_gpus(c, rl.reference_gpus);
  if (!ref.ok()) return ref.error();
  auto rw = with_gpus(cc, rl.reward_gpus);
  if (!rw.ok()) return rw.error();
  return OrlSetups{std::move(a.value()), std::move(cr.value()), std::move(ref.value()),
                   std::move(rw.value())};
}

void orl_notes(const RlSpec& rl, RlAnswer& a) {
  if (separate(rl)) {
    std::string list;
    for (const RlPool& p : a.pools)
      list += (list.empty() ? "" : ", ") + p.name + " " + std::to_string(p.gpus);
    a.notes.push_back(
        "OpenRLHF's separate pools (no --train.colocate_all): " + std::to_string(rl_gpus(a)) +
        " GPUs in all (" + list +
        "); vLLM stays awake (no sleep mode) and each parameter is broadcast over NCCL; " +
        (rl.rollout.num_engines ? "" : "one vLLM engine assumed (rl.rollout.num_engines); ") +
        "vLLM's max_num_seqs and max_num_batched_tokens are its own defaults (OpenRLHF passes "
        "none)");
  } else {
    a.notes.push_back(
        "OpenRLHF's hybrid engine (--train.colocate_all): every model a process of its own on "
        "each GPU, each with its CUDA context; vLLM's max_num_seqs and max_num_batched_tokens are "
        "its own defaults (OpenRLHF passes none), give them from vLLM's log if they differ");
  }
  if (rl.reference_offload || rl.reward_offload)
    a.notes.push_back(std::string(rl.reference_offload && rl.reward_offload ? "--ref.offload and "
                                                                              "--reward.offload"
                                  : rl.reference_offload                    ? "--ref.offload"
                                                                            : "--reward.offload") +
                      ": the ZeRO-3 shard on the host (DeepSpeed's offload_param), each module "
                      "fetched and gathered for the forward (OpenRLHF 3c3be62 launcher.py "
                      "l.114-122, l.169-178; deepspeed_utils.py l.78-99)");
  if (rl.deepspeed_sleep)
    a.notes.push_back(
        "--ds.enable_sleep: the optimizer states, fp32 master weights and gradients are on the "
        "CPU outside each model's own update, the bf16 weights stay (OpenRLHF 3c3be62 "
        "utils/deepspeed/deepspeed_utils.py l.151-211)");
}

}  // namespace

Result<RlAnswer> openrlhf_phases(const ModelSpec& m, const TrainConfig& actor, const GpuSpec& gpu,
                                 const RlSpec& rl) {
  auto s = make_setup(m, actor);
  if (!s.ok()) return s.error();
  const TrainConfig& c = s.value().config;
  if (auto err = orl_check(m, c, rl)) return *err;
  auto setups = orl_setups(m, c, rl);
  if (!setups.ok()) return setups.error();
  RlAnswer a;
  a.framework = "openrlhf", a.algorithm = rl.algorithm, a.engine = "vllm";
  a.mode = separate(rl) ? "separate" : "colocate";
  a.vllm_here = true;
  OrlBuilder b(m, setups.value(), gpu, rl, &a);
  if (auto err = b.prepare()) return *err;
  b.start();
  for (const OrlPool& p : orl_pools(c, rl)) b.pool(p);
  if (auto err = b.overflow()) return *err;
  set_peak(a);
  vllm_notes(rl.rollout, a);
  orl_notes(rl, a);
  return a;
}

}  // namespace detail

}  // namespace actmem

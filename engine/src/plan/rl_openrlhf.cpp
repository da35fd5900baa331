// OpenRLHF's hybrid engine on one GPU (rl.hpp, rl.framework "openrlhf"): OpenRLHF/OpenRLHF
// 3c3be62 with --train.colocate_all, every model a Ray process of its own on each GPU (the actor's
// DeepSpeed rank, the reference's, PPO's critic, a reward model) beside a vLLM engine, each with
// its own CUDA context; phase by phase, each phase the sum of what those processes hold.
#include <algorithm>

#include "actmem/device/device.hpp"
#include "actmem/setup/setup.hpp"
#include "plan/rl_parts.hpp"

namespace actmem {

RlRollout openrlhf_rollout_defaults() {
  // OpenRLHF/OpenRLHF 3c3be62 openrlhf/cli/train_ppo_ray.py unless named.
  RlRollout r;
  r.engine = "vllm";
  r.mode = "colocate";              // --train.colocate_all (l.223-228), the layout modelled
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

std::optional<Error> orl_check(const ModelSpec& m, const TrainConfig& c, const RlSpec& rl) {
  if (rl.algorithm != "grpo" && rl.algorithm != "ppo")
    return rl_error("rl.algorithm", "'" + rl.algorithm +
                                        "': allowed with rl.framework openrlhf: grpo "
                                        "(--algo.advantage.estimator group_norm), ppo (gae)");
  if (c.loss.impl != LossImpl::kLogprobOpenrlhf)
    return rl_error("config.loss",
                    "'" + loss_name(c.loss) + "': OpenRLHF's actor computes logprob_openrlhf");
  if (c.lora.on())
    return rl_error("config.lora_rank",
                    "LoRA in OpenRLHF's step (--lora_rank: the merge before each weight sync) is "
                    "not modelled; allowed with rl.framework trl");
  Checked ck;
  if (auto err = check_vllm_attention(m, rl.rollout.tp, ck)) return err;
  return check_vllm(c, rl.rollout, rl.rollout.max_model_len ? rl.rollout.max_model_len : c.seq);
}

class OrlBuilder : public RlLines {
 public:
  OrlBuilder(const ModelSpec& m, const Setup& actor, const Setup& critic, const GpuSpec& gpu,
             const RlSpec& rl, RlAnswer* a)
      : m_(m), s_(actor), critic_(critic), gpu_(gpu), rl_(rl), a_(*a) {}

  std::optional<Error> prepare();
  void phases();
  void start();

 private:
  bool ppo() const { return rl_.algorithm == "ppo"; }
  void actor(RlPhase& p, bool states);
  void critic(RlPhase& p, bool states);
  void frozen(RlPhase& p);
  void vllm(RlPhase& p, bool awake, bool weights);
  Bytes forward(std::uint64_t b, std::uint64_t head_bytes_per_token);
  RlPhase no_grad(const char* id, const char* label, const char* process, std::uint64_t b,
                  Bytes bytes);

  const ModelSpec& m_;
  const Setup& s_;
  const Setup& critic_;  // the actor's model with a one-label head (the critic's, the reward's)
  const GpuSpec& gpu_;
  const RlSpec& rl_;
  RlAnswer& a_;
  Bytes fixed_ = 0, context_ = 0, actor_step_ = 0, critic_step_ = 0;
};

std::optional<Error> OrlBuilder::prepare() {
  const TrainConfig& c = s_.config;
  const RlRollout& r = rl_.rollout;
  a_.capacity = device_capacity(gpu_, nullptr);
  fixed_ = device_overhead_bytes(s_, &gpu_);
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
    auto cd = device_memory(critic_, &gpu_, nullptr, false);
    if (!cd.ok()) return cd.error();
    critic_step_ = cd.value().total_bytes;
  }
  return overflow();
}

// The actor's process: its fixed costs, bf16 weights, and (without DeepSpeed's sleep, or in its
// own update) the fp32 master weights and AdamW's states.
void OrlBuilder::actor(RlPhase& p, bool states) {
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
  if (!ppo()) return;
  const StaticMemory& st = critic_.ranks[0].stat;
  line(p, "critic", "fixed costs (CUDA context, NCCL, cuBLAS workspace)", fixed_, "exact",
       kOrlLayout);
  line(p, "critic", "parameters (bf16)", st.params_bytes, "exact",
       "the engine's static memory for the critic (a one-label head in place of lm_head)");
  if (states && !rl_.deepspeed_sleep)
    line(p, "critic", "optimizer states and fp32 master weights",
         ck_.add(st.optimizer_bytes, st.master_bytes, "rl"), "exact",
         "the engine's static memory for the critic");
}

// The reference and the reward model: bf16 weights, never offloaded by the sleep logic.
void OrlBuilder::frozen(RlPhase& p) {
  if (rl_.reference) {
    line(p, "reference", "fixed costs (CUDA context, NCCL, cuBLAS workspace)", fixed_, "exact",
         kOrlLayout);
    line(p, "reference", "parameters (bf16)", s_.ranks[0].stat.params_bytes, "code", kOrlEval);
  }
  if (rl_.reward_model) {
    line(p, "reward", "fixed costs (CUDA context, NCCL, cuBLAS workspace)", fixed_, "exact",
         kOrlLayout);
    line(p, "reward", "parameters (bf16)", critic_.ranks[0].stat.params_bytes, "code", kOrlEval);
  }
}

// The vLLM engine's process: its context and graphs always; its budget when awake, or without
// sleep mode; its weights alone when woken for the sync.
void OrlBuilder::vllm(RlPhase& p, bool awake, bool weights) {
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
Bytes OrlBuilder::forward(std::uint64_t b, std::uint64_t head_bytes_per_token) {
  const Bytes tokens = ck_.mul(b, s_.config.seq, "rl");
  return no_grad_forward(m_, s_, tokens, ck_.mul(tokens, head_bytes_per_token, "rl"), ck_);
}

RlPhase OrlBuilder::no_grad(const char* id, const char* label, const char* process, std::uint64_t b,
                            Bytes bytes) {
  RlPhase p = rl_phase(id, label);
  actor(p, true);
  critic(p, true);
  frozen(p);
  line(p, process, "forward without grad (" + std::to_string(b) + " sequences)", bytes, "estimate",
       kOrlForward);
  vllm(p, false, false);
  return p;
}

void OrlBuilder::phases() {
  const std::uint64_t b = rl_.log_prob_micro_batch ? rl_.log_prob_micro_batch : 1;
  RlPhase gen = rl_phase("generate", "generation (vLLM awake beside every model)");
  actor(gen, true);
  critic(gen, true);
  frozen(gen);
  vllm(gen, true, false);
  a_.phases.push_back(gen);
  // The actor's and reference's heads: the bf16 logits and their fp32 copy (6 B per vocabulary
  // entry); the reward's and critic's: one value per token.
  const std::uint64_t lm = ck_.mul(m_.vocab, 6, "rl");
  const std::uint64_t value = ck_.add(ck_.mul(m_.hidden, 2, "rl"), 2, "rl");
  if (rl_.reward_model)
    a_.phases.push_back(no_grad("reward", "reward model's scores (forward, no grad)", "reward", b,
                                forward(b, value)));
  a_.phases.push_back(no_grad("old_log_prob", "old policy's log-probabilities (forward, no grad)",
                              "actor", b, forward(b, lm)));
  if (ppo())
    a_.phases.push_back(
        no_grad("values", "critic values (forward, no grad)", "critic", b, forward(b, value)));
  if (rl_.reference)
    a_.phases.push_back(no_grad("ref_log_prob", "reference log-probabilities (forward, no grad)",
                                "reference", b, forward(b, lm)));
  // ppo_trainer.py l.274-296: with DeepSpeed's sleep the critic trains, then the actor; without
  // it both train at once, on the same GPUs.
  const char* step =
      "the training step on the device (fixed costs, parameters, gradients, "
      "optimizer, activations, the allocator's cache)";
  if (ppo() && rl_.deepspeed_sleep) {
    RlPhase cu = rl_phase("critic_update", "critic update (its training step)");
    actor(cu, false);
    line(cu, "critic", step, critic_step_, "exact", "the engine's device figure for the critic");
    frozen(cu);
    vllm(cu, false, false);
    a_.phases.push_back(cu);
  }
  RlPhase upd =
      rl_phase("update", ppo() && !rl_.deepspeed_sleep ? "critic and actor updates (at once)"
                                                       : "policy update (the training step)");
  line(upd, "actor", step, actor_step_, "exact", "the engine's device figure (estimate --gpu)");
  if (ppo() && !rl_.deepspeed_sleep)
    line(upd, "critic", step, critic_step_, "exact", "the engine's device figure for the critic");
  else
    critic(upd, false);
  frozen(upd);
  vllm(upd, false, false);
  a_.phases.push_back(upd);
  RlPhase sync = rl_phase("weight_sync", "weight sync (each parameter sent to vLLM)");
  actor(sync, true);
  const TrainConfig& c = s_.config;
  const Bytes largest = ck_.mul(largest_param(m_), dtype_bytes(c.param_dtype), "rl");
  line(sync, "actor",
       c.par.zero >= 3 ? "the largest parameter gathered whole and its clone"
                       : "the largest parameter's clone",
       ck_.mul(largest, c.par.zero >= 3 ? 2 : 1, "rl"), "code", kOrlSync);
  critic(sync, true);
  frozen(sync);
  vllm(sync, false, true);
  a_.phases.push_back(sync);
}

// vLLM starts before the DeepSpeed models load (train_ppo_ray.py l.66-82 before l.171-185): its
// budget against the GPU less its own context; with sleep mode it sleeps at once.
void OrlBuilder::start() {
  a_.free_at_start = a_.capacity > context_ ? a_.capacity - context_ : 0;
  a_.vllm_starts = a_.free_at_start >= a_.vllm_requested && a_.kv_blocks > 0 && a_.kv_holds_one;
}

}  // namespace

Result<RlAnswer> openrlhf_phases(const ModelSpec& m, const TrainConfig& actor, const GpuSpec& gpu,
                                 const RlSpec& rl) {
  auto s = make_setup(m, actor);
  if (!s.ok()) return s.error();
  const TrainConfig& c = s.value().config;
  if (auto err = orl_check(m, c, rl)) return *err;
  TrainConfig cc = c;
  cc.loss = Loss{LossImpl::kValue, 1, Entropy::kNone};
  auto cs = make_setup(m, cc);
  if (!cs.ok()) return cs.error();
  RlAnswer a;
  a.framework = "openrlhf", a.algorithm = rl.algorithm, a.engine = "vllm", a.mode = "colocate";
  a.vllm_here = true;
  OrlBuilder b(m, s.value(), cs.value(), gpu, rl, &a);
  if (auto err = b.prepare()) return *err;
  b.phases();
  b.start();
  if (auto err = b.overflow()) return *err;
  set_peak(a);
  vllm_notes(rl.rollout, a);
  a.notes.push_back(
      "OpenRLHF's hybrid engine (--train.colocate_all): every model a process of its own on each "
      "GPU, each with its CUDA context; vLLM's max_num_seqs and max_num_batched_tokens are its "
      "own defaults (OpenRLHF passes none), give them from vLLM's log if they differ");
  if (rl.deepspeed_sleep)
    a.notes.push_back(
        "--ds.enable_sleep: the optimizer states, fp32 master weights and gradients are on the "
        "CPU outside each model's own update, the bf16 weights stay (OpenRLHF 3c3be62 "
        "utils/deepspeed/deepspeed_utils.py l.151-211)");
  return a;
}

}  // namespace detail

}  // namespace actmem

// TRL's GRPOTrainer on one GPU (rl.hpp, rl.framework "trl"): huggingface/trl f2cd577, its trainer
// (transformers' Trainer through accelerate: DDP, or DeepSpeed ZeRO) and its generation
// (transformers' generate on the policy, vLLM inside the training process, or a vLLM server on
// other GPUs), phase by phase, each phase the sum of what the one training process holds.
#include <algorithm>

#include "actmem/device/device.hpp"
#include "actmem/setup/setup.hpp"
#include "plan/rl_parts.hpp"

namespace actmem {

RlRollout trl_rollout_defaults() {
  // huggingface/trl f2cd577 trl/trainer/grpo_config.py unless named.
  RlRollout r;
  r.engine = "transformers";        // l.577 use_vllm False
  r.mode = "colocate";              // l.584 vllm_mode "colocate"
  r.tp = 1;                         // l.661 vllm_tensor_parallel_size 1
  r.gpu_memory_utilization = 0.3;   // l.646 vllm_gpu_memory_utilization 0.3
  r.max_num_seqs = 0;               // derived: grpo_trainer.py l.1091-1093
  r.max_num_batched_tokens = 4096;  // trl/generation/vllm_generation.py l.363
  r.free_cache_engine = false;      // l.602 vllm_enable_sleep_mode False
  r.bucket_bytes = 0;               // no bucket: parameters are loaded one by one
  return r;
}

namespace detail {

namespace {

constexpr const char* kTrlVllm =
    "huggingface/trl f2cd577 vllm_generation.py _init_vllm: LLM(..., "
    "distributed_executor_backend=\"external_launcher\"), vLLM's V1 engine inside the training "
    "process; vLLM's V1 worker (gpu_worker.py determine_available_memory): requested = "
    "gpu_memory_utilization x total, the KV cache what its weights and profiled peak leave";
constexpr const char* kTrlSleep =
    "huggingface/trl f2cd577 vllm_generation.py: without vllm_enable_sleep_mode the weights and "
    "KV cache stay allocated; with it sleep(level=2) after start (l.370) and after each "
    "generation (l.702), the weights woken for the sync (l.454), the KV cache to generate "
    "(l.656)";
constexpr const char* kTrlSync =
    "huggingface/trl f2cd577 vllm_generation.py sync_weights: every parameter gathered on its "
    "own (gather_params([param]) under ZeRO-3) and loaded into vLLM";
constexpr const char* kTrlPeftSync =
    "huggingface/trl f2cd577 vllm_generation.py sync_weights l.459-486: with PEFT under "
    "DeepSpeed ZeRO-3 gather_params(list(model.parameters())) gathers the whole model at once "
    "('merging adapters in a sharded manner is not supported'), merges, loads each base "
    "parameter into vLLM, unmerges, then repartitions";
constexpr const char* kTrlGenerate =
    "huggingface/trl f2cd577 grpo_trainer.py _generate_single_turn: transformers' generate on "
    "the whole generation batch (per_device_train_batch_size x steps_per_generation prompts) "
    "under unwrap_model_for_generation (trl/models/utils.py; ds3_gather_for_generation True, "
    "grpo_config.py l.492, gathers every ZeRO-3 parameter)";
constexpr const char* kTrlLogps =
    "huggingface/trl f2cd577 grpo_trainer.py l.2553-2572 (old policy) and l.2625-2656 "
    "(reference): _get_per_token_logps_and_entropies under no_grad in batches of "
    "per_device_train_batch_size, logits for the response only (logits_to_keep), "
    "selective_log_softmax row by row";
constexpr const char* kTrlPeftRef =
    "huggingface/trl f2cd577 grpo_trainer.py l.958-961 (and DPOTrainer alike): with PEFT no "
    "reference model is loaded; the reference log-probabilities are the policy's with its "
    "adapters disabled";
constexpr const char* kTrlMerge =
    "huggingface/trl f2cd577 vllm_generation.py sync_weights: merge_adapter() before the "
    "parameters are loaded into vLLM, unmerge_adapter() after; huggingface/peft lora/layer.py "
    "Linear.merge: get_delta_weight's transpose(B @ A) * scaling (two [out, in] tensors in the "
    "adapters' dtype at once), added into the base weight layer by layer";
constexpr const char* kTrlRef =
    "huggingface/trl f2cd577 grpo_trainer.py l.950-971 and l.1137-1143 (beta != 0): the reference "
    "loaded as the policy is; under DeepSpeed trl/models/utils.py prepare_deepspeed shards it "
    "with ZeRO-3, else runs it with ZeRO disabled (stage 0), whole on every GPU";

// TRL's own checks and what the engine models of it.
std::optional<Error> trl_check(const ModelSpec& m, const TrainConfig& c, const RlSpec& rl,
                               std::uint64_t max_model_len) {
  if (rl.algorithm != "grpo" && rl.algorithm != "dpo")
    return rl_error("rl.algorithm", "'" + rl.algorithm +
                                        "': rl.framework trl is TRL's GRPOTrainer or DPOTrainer; "
                                        "allowed: grpo, dpo");
  if (rl.algorithm == "dpo") {
    if (c.loss.impl != LossImpl::kDpoTrl)
      return rl_error("config.loss",
                      "'" + loss_name(c.loss) + "': TRL's DPOTrainer computes dpo_trl");
    return std::nullopt;
  }
  if (c.loss.impl != LossImpl::kLogprobTrl)
    return rl_error("config.loss", "'" + loss_name(c.loss) +
                                       "': TRL's GRPOTrainer computes logprob_trl (with a "
                                       "reference: logprob_trl+kl)");
  if (c.loss.kl != rl.reference)
    return rl_error("config.loss", "'" + loss_name(c.loss) + "' with rl.reference " +
                                       (rl.reference ? "true" : "false") +
                                       ": TRL adds the KL term (logprob_trl+kl) exactly when "
                                       "beta != 0 loads a reference");
  const RlRollout& r = rl.rollout;
  // transformers' generate keeps every layer's whole cache here (DynamicCache as modelled).
  Checked ck;
  if (auto err = r.engine == "vllm" ? check_vllm_attention(m, r.tp, ck) : check_full_attention(m))
    return err;
  if (r.engine != "vllm") return std::nullopt;
  if (r.mode == "server") return std::nullopt;
  return check_vllm(c, r, max_model_len);
}

class TrlBuilder : public RlLines {
 public:
  TrlBuilder(const ModelSpec& m, const Setup& s, const GpuSpec& gpu, const RlSpec& rl, RlAnswer* a)
      : m_(m), s_(s), gpu_(gpu), rl_(rl), a_(*a) {}

  std::optional<Error> prepare();
  void phases();
  void start();

 private:
  bool colocated() const { return a_.vllm_here; }
  // A reference model of its own: beta != 0 without PEFT (with it, the policy's adapters are
  // disabled instead).
  bool reference_model() const { return rl_.reference && !s_.config.lora.on(); }
  // Its parameters, loaded as the policy's are (kTrlRef), in every phase that holds it.
  void reference(RlPhase& p);
  Bytes lora_merge();
  void resident(RlPhase& p);
  void vllm_between(RlPhase& p);
  Bytes no_grad_forward(std::uint64_t b);
  RlPhase generate();
  RlPhase log_probs(const char* id, const char* label, const char* whose);

  const ModelSpec& m_;
  const Setup& s_;
  const GpuSpec& gpu_;
  const RlSpec& rl_;
  RlAnswer& a_;
  Bytes fixed_ = 0, update_total_ = 0;
  std::uint64_t response_ = 0, gen_batch_ = 0;
};

std::optional<Error> TrlBuilder::prepare() {
  const TrainConfig& c = s_.config;
  const RlRollout& r = rl_.rollout;
  a_.capacity = device_capacity(gpu_, nullptr);
  fixed_ = device_overhead_bytes(s_, &gpu_);
  response_ = c.response_len ? c.response_len : c.seq;
  if (rl_.algorithm != "dpo") {  // DPO generates nothing
    // grpo_config.py __post_init__ l.1076-1078: steps_per_generation defaults to
    // gradient_accumulation_steps; each GPU generates for all of them at once.
    a_.steps_per_generation =
        rl_.steps_per_generation ? rl_.steps_per_generation : default_micro_batches(c);
    gen_batch_ = ck_.mul(c.micro_batch, a_.steps_per_generation, "rl");
  }
  if (colocated()) {
    // vLLM's max_model_len: vllm_max_model_length (None: the model's max_position_embeddings,
    // as vLLM derives it); max_num_seqs: grpo_trainer.py l.1091-1093.
    const std::uint64_t len =
        r.max_model_len ? r.max_model_len : (m_.max_positions ? m_.max_positions : c.seq);
    const std::uint64_t seqs = ck_.mul(gen_batch_, r.tp, "rl");
    if (auto err = size_vllm(m_, c.seq, r, seqs, len, a_, ck_)) return err;
  }
  auto d = device_memory(s_, &gpu_, nullptr, false);
  if (!d.ok()) return d.error();
  update_total_ = d.value().total_bytes;
  return overflow();
}

// What the training process holds between its phases: its fixed costs, the policy's parameters,
// the optimizer's states (from the first step on), DDP's buckets, the reference. The gradients
// are freed after each optimizer step (zero_grad(set_to_none=True)).
void TrlBuilder::resident(RlPhase& p) {
  const StaticMemory& st = s_.ranks[0].stat;
  line(p, "trainer", "fixed costs (CUDA context, NCCL, cuBLAS workspace)", fixed_, "exact",
       "the engine's device overheads (device.hpp)");
  line(p, "trainer", "policy parameters", st.params_bytes, "exact",
       "the engine's static memory (DDP: whole; DeepSpeed ZeRO-3: this GPU's shard)");
  line(p, "trainer", "optimizer states", ck_.add(st.optimizer_bytes, st.master_bytes, "rl"),
       "exact", "the engine's static memory (AdamW allocates them at the first step)");
  if (st.ddp_buckets_bytes)
    line(p, "trainer", "DDP's gradient buckets", st.ddp_buckets_bytes, "exact",
         "the engine's static memory (accelerate's DDP, gradient_as_bucket_view False)");
  reference(p);
}

void TrlBuilder::reference(RlPhase& p) {
  if (reference_model())
    line(p, "trainer", "reference parameters", s_.ranks[0].stat.params_bytes, "code", kTrlRef);
}

// peft's merge of the largest targeted linear: B @ A and its scaled copy, [out, in] each in the
// adapters' dtype; its adapters A [r, in] and B [out, r] are consecutive records
// (params.cpp apply_lora_params).
Bytes TrlBuilder::lora_merge() {
  std::uint64_t largest = 0;
  for (const auto& recs : s_.param_records.kinds)
    for (std::size_t i = 0; i + 1 < recs.size(); ++i)
      if (recs[i].adapter && recs[i + 1].adapter) {
        largest = std::max(largest, ck_.mul(recs[i].cols, recs[i + 1].rows, "rl"));
        ++i;
      }
  return ck_.mul(ck_.mul(2, largest, "rl"), dtype_bytes(s_.config.lora.dtype), "rl");
}

// vLLM inside the process between generations: its weights and KV cache unless asleep, and its
// CUDA graphs when given. It shares the process's CUDA context and caching allocator.
void TrlBuilder::vllm_between(RlPhase& p) {
  if (!colocated()) return;
  const RlRollout& r = rl_.rollout;
  if (r.cudagraph_bytes && !r.enforce_eager)
    line(p, "vllm", "CUDA graphs (given)", r.cudagraph_bytes, "code", kTrlSleep);
  if (!r.free_cache_engine)
    line(p, "vllm", "weights and KV cache (held: no sleep mode)",
         ck_.add(a_.vllm_weights, a_.kv_cache_bytes, "rl"), "code", kTrlSleep);
}

// A forward without grad over b sequences: the widest layer's working set over b x s tokens, or
// the response's logits and one row's log_softmax, whichever is larger, beside ZeRO-3's gather of
// the largest layer (an estimate, as verl's).
Bytes TrlBuilder::no_grad_forward(std::uint64_t b) {
  const TrainConfig& c = s_.config;
  const std::uint64_t kept = std::min(response_ + 1, c.seq);
  const Bytes head = ck_.mul(ck_.add(ck_.mul(ck_.mul(b, kept, "rl"), m_.vocab, "rl"),
                                     ck_.mul(response_, m_.vocab, "rl"), "rl"),
                             dtype_bytes(c.act_dtype), "rl");
  return detail::no_grad_forward(m_, s_, ck_.mul(b, c.seq, "rl"), head, ck_);
}

RlPhase TrlBuilder::generate() {
  const TrainConfig& c = s_.config;
  RlPhase gen = rl_phase("generate", colocated() ? "generation (vLLM in the training process)"
                                     : a_.engine == "vllm"
                                         ? "generation (on the vLLM server's GPUs)"
                                         : "generation (transformers' generate on the policy)");
  resident(gen);
  if (colocated()) {
    const RlRollout& r = rl_.rollout;
    if (r.cudagraph_bytes && !r.enforce_eager)
      line(gen, "vllm", "CUDA graphs (given)", r.cudagraph_bytes, "code", kTrlSleep);
    line(gen, "vllm", "its budget: weights, activations and KV cache", a_.vllm_requested, "code",
         kTrlVllm);
    return gen;
  }
  if (a_.engine == "vllm") return gen;  // the server's GPUs generate
  const Bytes w = dtype_bytes(c.act_dtype);
  if (c.par.zero >= 3)
    line(gen, "trainer", "the policy gathered whole for generation (ZeRO-3)",
         ck_.mul(s_.ranks[0].stat.params, dtype_bytes(c.param_dtype), "rl"), "code", kTrlGenerate);
  // transformers' DynamicCache: K and V of every layer for every token of the batch.
  Bytes per_token = 0, widest = 0;
  for (std::uint64_t l = 0; l < m_.layers; ++l) {
    const LayerKind& k = m_.kind_of(l);
    const Bytes layer = ck_.mul(kv_cache_width(k, k.kv_heads, ck_), w, "rl");
    per_token = ck_.add(per_token, layer, "rl");
    widest = std::max(widest, layer);
  }
  const std::uint64_t tokens = ck_.mul(gen_batch_, c.seq, "rl");
  line(gen, "trainer",
       "KV cache (" + std::to_string(gen_batch_) + " sequences of " + std::to_string(c.seq) +
           " tokens)",
       ck_.mul(tokens, per_token, "rl"), "code",
       "transformers DynamicCache (every layer's keys and values, the activations' dtype) over "
       "the generation batch");
  // An estimate: the prompt's prefill through the widest layer, the last token's logits (bf16,
  // the fp32 copy and the sampler's fp32 probabilities), and one layer's K or V copied as
  // torch.cat grows it.
  const std::uint64_t prompt = std::max<std::uint64_t>(1, c.seq - std::min(response_, c.seq));
  const Bytes prefill =
      ck_.mul(ck_.mul(ck_.mul(gen_batch_, prompt, "rl"), widest_layer_width(m_, 1), "rl"), w, "rl");
  const Bytes logits = ck_.mul(ck_.mul(gen_batch_, m_.vocab, "rl"), 10, "rl");
  line(gen, "trainer", "generation's working set (prefill, logits, the cache's growth)",
       ck_.add(ck_.add(prefill, logits, "rl"), ck_.mul(tokens, widest / 2, "rl"), "rl"), "estimate",
       kTrlGenerate);
  return gen;
}

RlPhase TrlBuilder::log_probs(const char* id, const char* label, const char* whose) {
  RlPhase p = rl_phase(id, label);
  resident(p);
  vllm_between(p);
  const std::uint64_t b = s_.config.micro_batch;
  line(p, "trainer",
       std::string(whose) + " forward without grad (" + std::to_string(b) + " sequences)",
       no_grad_forward(b), "estimate", kTrlLogps);
  return p;
}

void TrlBuilder::phases() {
  const TrainConfig& c = s_.config;
  if (rl_.algorithm == "dpo") {
    // dpo_trainer.py _compute_loss: the reference's forward runs inside each micro-batch's loss,
    // so the step's own loss buffers hold it (setup.cpp, set_dpo_loss_transients).
    RlPhase upd = rl_phase("update",
                           "DPO step (the policy's training step, the reference's "
                           "forward inside its loss)");
    line(upd, "trainer",
         "the training step on the device (fixed costs, parameters, gradients, optimizer, "
         "activations, the loss with the reference's forward, the allocator's cache)",
         update_total_, "exact", "the engine's device figure (estimate --gpu, loss dpo_trl)");
    reference(upd);
    a_.phases.push_back(upd);
    return;
  }
  const bool use_vllm = a_.engine == "vllm";
  if (use_vllm) {
    RlPhase sync = rl_phase("weight_sync", "weight sync (each parameter loaded into vLLM)");
    resident(sync);
    if (c.par.zero >= 3 && c.lora.on())
      line(sync, "trainer", "every parameter gathered at once (PEFT's merge under ZeRO-3)",
           ck_.mul(s_.ranks[0].stat.params, dtype_bytes(c.param_dtype), "rl"), "code",
           kTrlPeftSync);
    else if (c.par.zero >= 3)
      line(sync, "trainer", "the largest parameter gathered whole",
           ck_.mul(largest_param(m_), dtype_bytes(c.param_dtype), "rl"), "code", kTrlSync);
    if (c.lora.on())
      line(sync, "trainer", "LoRA's merge (the largest targeted linear's B·A, scaled)",
           lora_merge(), "code", kTrlMerge);
    if (colocated() && rl_.rollout.free_cache_engine)
      line(sync, "vllm", "weights (woken for the sync, bf16)", a_.vllm_weights, "code", kTrlSleep);
    vllm_between(sync);
    a_.phases.push_back(sync);
  }
  a_.phases.push_back(generate());
  // grpo_trainer.py l.2561-2564: an old-policy pass when generation and optimizer steps are
  // misaligned, or always with vLLM's importance-sampling correction (num_iterations 1).
  if (default_micro_batches(c) % a_.steps_per_generation != 0 ||
      (use_vllm && rl_.importance_sampling_correction))
    a_.phases.push_back(log_probs(
        "old_log_prob", "old policy's log-probabilities (policy forward, no grad)", "policy"));
  if (rl_.reference)
    a_.phases.push_back(
        reference_model()
            ? log_probs("ref_log_prob", "reference log-probabilities (reference forward, no grad)",
                        "reference")
            : log_probs("ref_log_prob",
                        "reference log-probabilities (the policy with its adapters disabled, no "
                        "grad)",
                        "policy (adapters disabled)"));
  RlPhase upd = rl_phase("update", "policy update (the training step)");
  line(upd, "trainer",
       "the training step on the device (fixed costs, parameters, gradients, optimizer, "
       "activations, the allocator's cache)",
       update_total_, "exact", "the engine's device figure (estimate --gpu)");
  reference(upd);
  vllm_between(upd);
  a_.phases.push_back(upd);
}

// vLLM's start (colocated): GRPOTrainer builds the policy and the reference before vLLM
// (grpo_trainer.py l.1085); AdamW's states and DDP's buckets come at the first step.
void TrlBuilder::start() {
  if (!colocated()) return;
  const StaticMemory& st = s_.ranks[0].stat;
  Bytes held = ck_.add(fixed_, st.params_bytes, "rl");
  if (reference_model()) held = ck_.add(held, st.params_bytes, "rl");
  a_.free_at_start = a_.capacity > held ? a_.capacity - held : 0;
  a_.vllm_starts = a_.free_at_start >= a_.vllm_requested && a_.kv_blocks > 0 && a_.kv_holds_one;
}

void trl_notes(const RlSpec& rl, RlAnswer& a) {
  if (rl.algorithm == "dpo") {
    a.vllm_starts = true;
    a.notes.push_back(
        "DPO: no generation; each micro-batch holds its pairs' chosen and rejected sequences "
        "(config.micro_batch counts sequences: 2 x per_device_train_batch_size), and the "
        "reference's forward runs inside the loss (its working set an estimate)");
    return;
  }
  if (a.vllm_here) {
    vllm_notes(rl.rollout, a);
    return;
  }
  a.vllm_starts = true;  // nothing starts on these GPUs
  if (a.engine == "vllm")
    a.notes.push_back(
        "vLLM runs on the server's GPUs (vllm_mode server, trl vllm-serve): not sized here; "
        "these GPUs hold the trainer alone");
  else
    a.notes.push_back(
        "generation by transformers' generate on the policy: its KV cache is the generation "
        "batch's (micro_batch x steps_per_generation sequences of seq tokens); its working set "
        "is an estimate");
}

}  // namespace

Result<RlAnswer> trl_phases(const ModelSpec& m, const TrainConfig& actor, const GpuSpec& gpu,
                            const RlSpec& rl) {
  auto s = make_setup(m, actor);
  if (!s.ok()) return s.error();
  const TrainConfig& c = s.value().config;
  const RlRollout& r = rl.rollout;
  const std::uint64_t len =
      r.max_model_len ? r.max_model_len : (m.max_positions ? m.max_positions : c.seq);
  if (auto err = trl_check(m, c, rl, len)) return *err;
  RlAnswer a;
  a.framework = "trl", a.engine = r.engine, a.mode = r.engine == "vllm" ? r.mode : "";
  a.algorithm = rl.algorithm;
  a.vllm_here = r.engine == "vllm" && r.mode == "colocate";
  TrlBuilder b(m, s.value(), gpu, rl, &a);
  if (auto err = b.prepare()) return *err;
  b.phases();
  b.start();
  if (auto err = b.overflow()) return *err;
  set_peak(a);
  trl_notes(rl, a);
  if (c.lora.on() && rl.reference) a.notes.push_back(std::string("PEFT: ") + kTrlPeftRef);
  if (a.phases.back().total_bytes > a.capacity && c.par.zero < 3)
    a.notes.push_back(
        "the policy update alone passes the GPU (" + std::to_string(a.phases.back().total_bytes) +
        " B): shard the trainer with DeepSpeed ZeRO-3 (config.framework deepspeed, config.zero "
        "3; TRL's examples/accelerate_configs/deepspeed_zero3.yaml)");
  return a;
}

}  // namespace detail

}  // namespace actmem

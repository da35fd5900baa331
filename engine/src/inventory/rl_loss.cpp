// The output layer under an RL policy loss (framework.hpp, LossImpl::kLogprob): what verl's FSDP
// actor keeps for backward past the final norm, with padding removed (N = b x s tokens in one
// row). Measured on the CPU with verl's own functions: tests/reference/measure_rl_loss.py ->
// tests/reference/rl_loss_saved.json (torch 2.6.0; docs/validation.md section 7), except
// flash-attn's Triton cross entropy, which runs on GPUs only (its saved tensors from the code).
#include "actmem/config/framework.hpp"
#include "inventory/builder.hpp"

namespace actmem::detail {

namespace {

constexpr const char* kMeasured =
    "verl b178a3c verl/utils/torch_functional.py; measured: tests/reference/rl_loss_saved.json";
constexpr const char* kFlashCe =
    "flash-attn 058ad35 flash_attn/ops/triton/cross_entropy.py CrossEntropyLoss.forward: "
    "ctx.save_for_backward(logits, lse, labels), called by verl b178a3c "
    "torch_functional.py logprobs_from_logits";
constexpr const char* kPolicy =
    "verl b178a3c verl/trainer/ppo/core_algos.py compute_policy_loss_vanilla, agg_loss "
    "token-mean; measured: tests/reference/rl_loss_saved.json (policy_loss)";

void add_entropy(const LayerGeometry& g, RecordBuilder& out) {
  const DType p = g.act;
  switch (g.loss.entropy) {
    case Entropy::kNone:
    case Entropy::kCheckpoint:  // keeps only the logits, recomputed in backward
      return;
    case Entropy::kEager:
      out.add("entropy.softmax", {g.b, g.s_tp, g.v}, p, "softmax backward",
              "entropy_from_logits: pd = softmax(logits) keeps its output", kMeasured);
      out.add("entropy.logsumexp", {g.b, g.s_tp}, p, "logsumexp backward",
              "logsumexp keeps its output beside its input (the logits)", kMeasured);
      return;
    case Entropy::kCompiled:
      // torch.compile(entropy_from_logits) (use_torch_compile: verl's default): inductor's
      // partitioner keeps the logits, two fp32 row statistics and the bf16 logsumexp.
      out.add("entropy.amax", {g.b, g.s_tp}, DType::kFp32, "compiled entropy backward",
              "each row's largest logit, upcast (the softmax is recomputed from it)", kMeasured);
      out.add("entropy.softmax_sum", {g.b, g.s_tp}, DType::kFp32, "compiled entropy backward",
              "each row's sum of exp(logit - max), the softmax's denominator", kMeasured);
      out.add("entropy.logsumexp", {g.b, g.s_tp}, p, "compiled entropy backward",
              "the logsumexp output, in the logits' dtype", kMeasured);
      return;
    case Entropy::kChunked:
      // entropy_from_logits_with_chunking upcasts each chunk and every chunk's graph stays
      // alive until backward: under grad it keeps twice the fp32 logits, not less.
      out.add("entropy.chunk_logits_fp32", {g.b, g.s_tp, g.v}, DType::kFp32,
              "softmax and mul backward (per chunk)", "each chunk's logits.float() copy",
              kMeasured);
      out.add("entropy.chunk_softmax_fp32", {g.b, g.s_tp, g.v}, DType::kFp32,
              "softmax backward (per chunk)", "each chunk's softmax output", kMeasured);
      out.add("entropy.chunk_logsumexp", {g.b, g.s_tp}, DType::kFp32,
              "logsumexp backward (per chunk)", "each chunk's fp32 logsumexp output", kMeasured);
      return;
  }
}

}  // namespace

// TRL's GRPOTrainer (huggingface/trl f2cd577): _get_per_token_logps_and_entropies asks the model
// for the response's logits only (logits_to_keep = R + 1), divides them in place, and
// selective_log_softmax runs one log_softmax per sequence on bf16 logits; the entropy is computed
// under no_grad (entropy_coef 0), so nothing of it is kept; _compute_loss's "dapo" loss keeps the
// ratio, the two clipped terms and the token-count divisor. The logits themselves are not kept
// (freed when the loss's forward returns), and the gather's index is a view of the input ids the
// embedding keeps (embed.token_ids). Measured: tests/reference/trl_loss_saved.json.
void build_trl_loss(const LayerGeometry& g, RecordBuilder& out) {
  constexpr const char* kTrl =
      "huggingface/trl f2cd577 trl/trainer/grpo_trainer.py _compute_loss, "
      "trl/trainer/utils.py selective_log_softmax; measured: tests/reference/trl_loss_saved.json";
  const DType p = g.act;
  out.add("logprob.row_log_softmax", {g.b, g.response, g.v}, p, "log_softmax backward (per row)",
          "selective_log_softmax on bf16 logits: one log_softmax per sequence over its response "
          "tokens, each keeping its output",
          kTrl);
  out.add("policy_loss.ratio", {g.b, g.response}, p, "exp and clamp backward",
          "coef_1 = exp(log_ratio), in the log-probabilities' dtype", kTrl);
  out.add("policy_loss.terms", {g.b, g.response, Dim{"2", 2}}, DType::kFp32, "minimum backward",
          "the two clipped terms (coef x advantages, fp32) torch.min compares", kTrl);
  out.add("policy_loss.normalizer", {}, DType::kFp32, "div backward",
          "loss_type dapo: num_items_in_batch / num_processes", kTrl);
  if (g.loss.kl)
    out.add("policy_loss.kl_exp", {g.b, g.response}, p, "exp backward",
            "beta != 0: exp(ref_logps - logps) of the KL term", kTrl);
}

// TRL's DPOTrainer (huggingface/trl f2cd577 dpo_trainer.py _compute_loss): logits over every token
// of the b concatenated chosen and rejected sequences, selective_log_softmax on their [:, :-1]
// view (one bf16 log_softmax per sequence), the completion mask the in-place masking keeps, and
// the sigmoid loss's logsigmoid over the b / 2 pairs (its input and buffer). The logits are not
// kept; the lm_head input is the norm's output; the index is the embedding's input ids.
// Measured: tests/reference/trl_loss_saved.json (dpo).
void build_dpo_loss(const LayerGeometry& g, RecordBuilder& out) {
  constexpr const char* kDpo =
      "huggingface/trl f2cd577 trl/trainer/dpo_trainer.py _compute_loss; measured: "
      "tests/reference/trl_loss_saved.json (dpo)";
  const Dim shifted{"s-1", g.s_tp.value - 1};
  out.add("logprob.row_log_softmax", {g.b, shifted, g.v}, g.act, "log_softmax backward (per row)",
          "selective_log_softmax on the shifted bf16 logits: one log_softmax per sequence, each "
          "keeping its output",
          kDpo);
  out.add("dpo.completion_mask", {g.b, shifted}, DType::kBool, "index_put backward",
          "per_token_logps[mask == 0] = 0 keeps the mask", kDpo);
  out.add("dpo.logsigmoid", {Dim{"b/2", g.b.value / 2}, Dim{"2", 2}}, g.act, "log_sigmoid backward",
          "the sigmoid loss's input and buffer, one per pair", kDpo);
}

// OpenRLHF's actor (OpenRLHF/OpenRLHF 3c3be62 models/actor.py l.265-294, models/utils.py
// log_probs_from_logits): the logits of every token copied to fp32 (PR #634), flash-attn's cross
// entropy on them (it saves the fp32 logits, an fp32 log-sum-exp and the rolled ids), then the
// action positions masked (action_mask.float(), a new fp32 tensor the multiplication keeps) and
// PPO's clipped loss. The policy loss's tensors are measured: tests/reference/
// openrlhf_loss_saved.json; the cross entropy's are from its code (GPU only).
void build_openrlhf_loss(const LayerGeometry& g, RecordBuilder& out) {
  constexpr const char* kCast =
      "OpenRLHF/OpenRLHF 3c3be62 models/actor.py l.267: output[\"logits\"].to(torch.float32)";
  constexpr const char* kPolicyOrl =
      "OpenRLHF/OpenRLHF 3c3be62 models/loss.py PolicyLoss (ppo, token-level), actor.py l.294; "
      "measured: tests/reference/openrlhf_loss_saved.json";
  const Dim actions{"s-1", g.s_tp.value - 1};
  out.add("logits", {g.b, g.s_tp, g.v}, DType::kFp32, "cross entropy backward",
          "every token's logits copied to fp32, divided by the temperature in place, kept by "
          "flash-attn's cross entropy",
          kCast);
  out.add("logprob.lse", {g.b, g.s_tp}, DType::kFp32, "cross entropy backward",
          "each token's fp32 log-sum-exp", kFlashCe);
  out.add("logprob.labels", {g.b, g.s_tp}, DType::kInt64, "cross entropy backward",
          "torch.roll(sequences, -1): each token's next token", kFlashCe);
  out.add("policy_loss.fp32", {g.b, actions, Dim{"5", 5}}, DType::kFp32,
          "the policy loss's backward",
          "five fp32 tensors per action position (the mask's float copy, the clamped log ratio, "
          "the ratio, the two surrogate terms)",
          kPolicyOrl);
  if (g.loss.entropy != Entropy::kCompiled) return;
  // --actor.entropy_coef: compute_entropy (models/utils.py, @torch.compile) on the fp32 logits;
  // the partitioner keeps the logits (above) and three fp32 row statistics; aggregate_loss's
  // product keeps only the action mask, which lives anyway.
  constexpr const char* kEntropyOrl =
      "OpenRLHF/OpenRLHF 3c3be62 models/utils.py compute_entropy, actor.py l.269-274, "
      "ppo_actor.py l.344-352; measured: tests/reference/openrlhf_loss_saved.json (entropy)";
  out.add("entropy.amax", {g.b, g.s_tp}, DType::kFp32, "compiled entropy backward",
          "each row's largest logit (the softmax is recomputed from it)", kEntropyOrl);
  out.add("entropy.softmax_sum", {g.b, g.s_tp}, DType::kFp32, "compiled entropy backward",
          "each row's sum of exp(logit - max), the softmax's denominator", kEntropyOrl);
  out.add("entropy.logsumexp", {g.b, g.s_tp}, DType::kFp32, "compiled entropy backward",
          "the logsumexp output, fp32 as the logits are", kEntropyOrl);
}

void build_rl_loss(const LayerGeometry& g, RecordBuilder& out) {
  const DType p = g.act;
  if (g.loss.impl == LossImpl::kLogprobOpenrlhf) return build_openrlhf_loss(g, out);
  if (g.loss.impl == LossImpl::kLogprobTrl) return build_trl_loss(g, out);
  if (g.loss.impl == LossImpl::kDpoTrl) return build_dpo_loss(g, out);
  out.add("logits", {g.b, g.s_tp, g.v}, p, "log-probability backward",
          "output.logits (divided by the temperature in place) is what the log-probability and "
          "entropy read",
          "verl b178a3c verl/workers/actor/dp_actor.py _forward_micro_batch (use_remove_padding)");
  if (g.loss.impl == LossImpl::kLogprob) {
    out.add("logprob.lse", {g.b, g.s_tp}, DType::kFp32, "cross entropy backward",
            "each token's fp32 log-sum-exp", kFlashCe);
  } else {
    out.add("logprob.row_log_softmax", {g.b, g.s_tp, g.v}, p, "log_softmax backward (per row)",
            "logprobs_from_logits_v2 on bf16 logits: one log_softmax per token row, each keeping "
            "its output",
            kMeasured);
  }
  out.add("logprob.labels", {g.b, g.s_tp}, DType::kInt64, "cross entropy / gather backward",
          "the rolled input ids (each token's next token)", kMeasured);
  add_entropy(g, out);
  // PPO's clipped surrogate over the response: eight fp32 and three bool tensors per token (the
  // ratio, its clamp, the three surrogate terms and their maximum, minimum and where, the
  // negated advantages and the KL metric's difference; the clamp and compare masks), and two
  // 0-dim tensors: the token count agg_loss divides by and the KL metric's divisor.
  out.add("policy_loss.fp32", {g.b, g.response, Dim{"8", 8}}, DType::kFp32,
          "the policy loss's backward", "eight fp32 tensors per response token", kPolicy);
  out.add("policy_loss.masks", {g.b, g.response, Dim{"3", 3}}, DType::kBool,
          "the policy loss's backward", "three bool masks per response token", kPolicy);
  out.add("policy_loss.token_count", {}, DType::kInt64, "div backward",
          "agg_loss's token count (loss_mask.sum())", kPolicy);
  out.add("policy_loss.kl_divisor", {}, DType::kFp32, "div backward",
          "masked_mean's divisor for the KL metric", kPolicy);
}

void build_value_head(const LayerGeometry& g, RecordBuilder& out) {
  constexpr const char* kHead =
      "transformers modeling_layers.py GenericForTokenClassification (dropout: classifier_dropout, "
      "else hidden_dropout, else 0.1; score = nn.Linear(h, 1)) as verl b178a3c's critic loads "
      "it (fsdp_workers.py, num_labels = 1); measured: tests/reference/rl_loss_saved.json "
      "(critic.head)";
  constexpr const char* kValueLoss =
      "verl b178a3c core_algos.py compute_value_loss (clip_by_value, squared errors, max, "
      "agg_loss token-mean, the clip fraction); measured: tests/reference/rl_loss_saved.json "
      "(critic.value_loss)";
  // On CUDA native_dropout keeps a bool mask (the CPU measurement's mask is a tensor in the
  // input's dtype; the engine's other dropout masks are CUDA's).
  out.add("critic.dropout_mask", {g.b, g.s_rep, g.h}, DType::kBool, "dropout backward",
          "the classifier dropout's mask (p = 0.1 in train mode)", kHead);
  out.add("critic.score_in", {g.b, g.s_rep, g.h}, g.act, "score backward",
          "the score head's weight gradient needs its input, the dropout's output", kHead);
  out.add("value_loss.fp32", {g.b, g.response, Dim{"7", 7}}, DType::kFp32,
          "the value loss's backward",
          "seven fp32 tensors per response token (the clipped prediction, the two errors and "
          "squares, their maximum, the masked values)",
          kValueLoss);
  out.add("value_loss.mask", {g.b, g.response}, DType::kBool, "the value loss's backward",
          "the clip fraction's comparison", kValueLoss);
  out.add("value_loss.token_count", {}, DType::kInt64, "div backward",
          "agg_loss's token count (loss_mask.sum())", kValueLoss);
}

}  // namespace actmem::detail

// Mixture-of-experts MLP records and the input/output layers (embedding, final norm, logits, loss).
#include "inventory/builder.hpp"

namespace actmem::detail {

namespace {
constexpr const char* kMoe =
    "Fedus et al. 2022 (Switch), Lepikhin et al. 2021 (GShard): top-k routing with capacity";
constexpr const char* kK43 = "Korthikanti et al. 2022, Sec. 4.3 (input and output layers)";
}  // namespace

void build_moe_mlp(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                   RecordBuilder& rb) {
  const DType p = g.act;
  // Input jitter (PhiMoE's input_jitter_noise; Megatron-LM's moe_input_jitter_eps): the tokens
  // are multiplied by uniform noise in training, and the multiply keeps the noise.
  if (k.moe.input_jitter)
    rb.add("moe.input_jitter", {g.b, g.s_rep, g.h}, p, "mul backward",
           "the uniform noise the router's input was scaled by",
           "transformers modeling_phimoe.py PhimoeSparseMoeBlock; Megatron-LM router.py "
           "apply_input_jitter");
  // With one norm shared by a parallel block the normalized tokens are attn.qkv_in's tensor.
  if (m.block != BlockLayout::kParallel)
    rb.add("moe.router_in", {g.b, g.s_rep, g.h}, p, "router and expert dispatch backward",
           "router weight gradient and the permutation both read the normalized tokens", kMoe);
  rb.add("moe.router_probs", {g.b, g.s_rep, g.experts}, DType::kFp32,
         "router softmax / top-k backward",
         "the combine weights' gradient flows through the softmax output", kMoe);
  rb.add("moe.expert_in", {g.expert_tokens, g.h}, p, "expert first linear backward",
         "each routed token copy is an input row of its expert's GEMM", kMoe);
  const bool glu = is_gated(k.ffn);
  if (glu)
    rb.add("moe.act_in", {g.expert_tokens, Dim{"2", 2}, g.expert_f}, p, "expert GLU backward",
           "d(act(gate) * up) needs gate and up", kMoe);
  else if (k.ffn == FfnType::kRelu2)
    rb.add("moe.act_in", {g.expert_tokens, g.expert_f}, p, "expert squared-ReLU backward",
           "relu keeps its output, which the square reads (one tensor)", kMoe);
  else
    rb.add("moe.act_in", {g.expert_tokens, g.expert_f}, p, "expert GeLU backward",
           "GeLU's derivative needs its input", kMoe);
  rb.add("moe.fc2_in", {g.expert_tokens, g.expert_f}, p, "expert second linear backward",
         "weight gradient needs its input", kMoe);
  rb.add("moe.expert_out", {g.expert_tokens, g.h}, p, "weighted combine backward",
         "the gradient of the combine weights needs each expert's output", kMoe);
  if (k.moe.shared_experts > 0) {
    if (glu)
      rb.add("moe.shared_act_in", {g.b, g.s_tp, Dim{"2", 2}, g.shared_f}, p,
             "shared expert GLU backward", "d(act(gate) * up) needs gate and up", kMoe);
    else if (k.ffn == FfnType::kRelu2)
      rb.add("moe.shared_act_in", {g.b, g.s_tp, g.shared_f}, p,
             "shared expert squared-ReLU backward",
             "relu keeps its output, which the square reads (one tensor)", kMoe);
    else
      rb.add("moe.shared_act_in", {g.b, g.s_tp, g.shared_f}, p, "shared expert GeLU backward",
             "GeLU's derivative needs its input", kMoe);
    rb.add("moe.shared_fc2_in", {g.b, g.s_tp, g.shared_f}, p,
           "shared expert second linear backward", "weight gradient needs its input", kMoe);
  }
}

constexpr const char* kLiger =
    "Liger-Kernel 77ff1a9 src/liger_kernel/ops/fused_linear_cross_entropy.py: "
    "ctx.save_for_backward(grad_input, grad_weight, ...); x, W and the logits are not saved";
constexpr const char* kCompiledLoss =
    "torch.compile of F.cross_entropy(logits.float()) (torch 2.6.0, Inductor's decompositions and "
    "min-cut partitioner; measured: tests/reference/loss_saved.py, docs/validation.md)";

constexpr const char* kCompiledWhole =
    "measured: a transformers model compiled whole (Trainer's torch_compile), inductor's "
    "partitioner on torch 2.6, tests/reference/compile_hf_whole_saved.json (docs/validation.md "
    "6.2)";

constexpr const char* kGemma3Rope =
    "transformers 5.17 modeling_gemma3.py Gemma3TextModel (rotary_emb and rotary_emb_local); "
    "measured: tests/reference/gpu/hf_layers.json";

// What the output projection's weight gradient reads: its input, as each way of running the head
// keeps it.
static void add_head_input(const LayerGeometry& g, RecordBuilder& out) {
  const DType p = g.act;
  if (g.loss.impl == LossImpl::kLogprobTrl && g.response.value + 1 < g.s_rep.value)
    // transformers' logits_to_keep: lm_head over hidden_states[:, -(R + 1):, :], a strided view
    // that matmul's reshape copies (aten linear -> matmul, device independent); the norm's
    // output itself is then kept by nobody.
    out.add("lm_head.in", {g.b, Dim{"R+1", g.response.value + 1}, g.h}, p,
            "output projection backward",
            "the weight gradient needs its input: the response's "
            "last hidden states, copied contiguous",
            "transformers causal-LM forward (logits_to_keep) as huggingface/trl f2cd577 calls "
            "it; measured: tests/reference/trl_loss_saved.json");
  else if (g.loss.impl == LossImpl::kParallel)
    // DTensor's ColwiseParallel(input_layouts=Shard(1)) gathers the sequence before the matmul,
    // which saves the gathered input (torchtitan 9dec370 parallelize_llama.py l.138-141).
    out.add("lm_head.in", {g.b, g.s_tp, g.h}, p, "output projection backward",
            "the weight gradient needs its input, gathered over the sequence before the matmul",
            "torch 2.6.0 ColwiseParallel: the input redistributed Shard(1) to Replicate");
  else
    out.add("lm_head.in", {g.b, g.s_rep, g.h}, p, "output projection backward",
            "weight gradient needs its input", kK43);
}

// The rotary tables a transformers model keeps (the hf profile): cos and sin (or the complex
// table, or Gemma 3's local pair) once per micro-batch, or compiled whole the fp32 frequencies.
static void add_rope_tables(const ModelSpec& m, const LayerGeometry& g, Profile prof, bool whole,
                            RecordBuilder& in) {
  const DType p = g.act;
  // Llama 4's NoPE layers use no table: it exists when some layer rotates.
  bool any_rope = false;
  for (const LayerKind& k : m.kinds) any_rope = any_rope || k.rope;
  // A transformers model compiled whole keeps the rotary frequencies (inv_freq times the
  // positions, fp32) and recomputes cos and sin in its backward (validate.cpp: Llama-like models
  // with one table).
  if (whole && m.pos == PosEncoding::kRope && any_rope)
    in.add("rope.freqs", {Dim{"d/2", g.d.value / 2}, g.s_tp}, DType::kFp32,
           "compiled backward (RoPE)", "cos and sin are recomputed from inv_freq x positions",
           kCompiledWhole);
  if (!whole && prof == Profile::kHf && m.pos == PosEncoding::kRope && any_rope) {
    // MLA rotates only each head's RoPE part (qk_rope_head_dim wide).
    // gpt-oss's _apply_rotary_emb rotates the two halves of each head: its cos and sin are d/2
    // wide (measured: hf_layers.json, [1, 1, s, d/2]).
    const Dim rope_d = g.rkv.value > 0                      ? g.dr
                       : m.hf_modules == HfModules::kGptOss ? Dim{"d/2", g.d.value / 2}
                                                            : g.d;
    // LlamaRotaryEmbedding computes cos/sin once per forward and every layer's RoPE mul keeps
    // the same two tensors: counted once per micro-batch, not per layer.
    if (m.hf_rope_complex) {
      // One complex64 table instead: s x d/2 x 8 B, in bf16 the bytes cos and sin take, in fp32
      // half of theirs (measured: tests/reference/families_cpu.json, deepseek_v2 and llama4_text).
      in.add("rope.freqs_cis",
             {g.s_tp, Dim{g.rkv.value > 0 ? "d_rope/2" : "d/2", rope_d.value / 2}},
             DType::kComplex64, "RoPE complex mul backward (every layer)",
             "q * freqs_cis needs freqs_cis",
             "transformers 5.17 modeling_deepseek_v2.py / modeling_llama4.py (freqs_cis); "
             "measured: tests/reference/gpu/hf_layers.json, tests/reference/families_cpu.json");
    } else {
      in.add("rope.cos", {g.s_tp, rope_d}, p, "RoPE mul backward (every layer)",
             "q * cos needs cos",
             "transformers modeling_llama.py LlamaRotaryEmbedding; measured: "
             "tests/reference/pytorch_saved.json");
      in.add("rope.sin", {g.s_tp, rope_d}, p, "RoPE mul backward (every layer)",
             "rotate_half(q) * sin needs sin",
             "transformers modeling_llama.py LlamaRotaryEmbedding; measured: "
             "tests/reference/pytorch_saved.json");
      if (m.hf_rope_tables > 1) {
        in.add("rope.local_cos", {g.s_tp, rope_d}, p, "RoPE mul backward (sliding layers)",
               "the sliding layers' own table (rope_local_base_freq)", kGemma3Rope);
        in.add("rope.local_sin", {g.s_tp, rope_d}, p, "RoPE mul backward (sliding layers)",
               "the sliding layers' own table (rope_local_base_freq)", kGemma3Rope);
      }
    }
  }
}

void build_io_layers(const ModelSpec& m, const LayerGeometry& g, Profile prof, RecordBuilder& in,
                     RecordBuilder& out) {
  const DType p = g.act;
  const bool torch_like = prof == Profile::kPytorch || prof == Profile::kHf;
  if (torch_like)
    in.add("embed.token_ids", {g.b, g.s_rep}, DType::kInt64, "embedding backward",
           "the weight gradient scatters into the rows the token ids name",
           "PyTorch derivatives.yaml: embedding_backward(grad, indices, ...)");
  if (torch_like && m.pos == PosEncoding::kLearned)
    in.add("embed.position_ids", {g.s_rep}, DType::kInt64, "position embedding backward",
           "the weight gradient scatters into the rows the position ids name",
           "PyTorch derivatives.yaml: embedding_backward(grad, indices, ...)");
  const bool whole = prof == Profile::kHf && g.compiled;
  add_rope_tables(m, g, prof, whole, in);
  if (prof == Profile::kHf && m.hf_embed_scale)
    in.add("embed.scale", {}, p, "mul backward",
           "the embeddings times sqrt(hidden), a 0-dim tensor in the activation dtype",
           "transformers 5.17 modeling_gemma2.py / modeling_gemma3.py (scaled word embedding); "
           "measured: tests/reference/gpu/hf_layers.json");
  if (g.hidden_dropout)
    in.add("embed.dropout_mask", {g.b, g.s_rep, g.h}, DType::kBool, "embedding dropout backward",
           "the same mask scales the gradient", kK43);
  if (whole) {
    // Compiled, the final norm keeps what a compiled block's norms keep.
    out.add("final_norm.in", {g.b, g.s_rep, g.h}, p, "compiled backward (final norm)",
            "the last layer's output: the norm's backward reads it", kCompiledWhole);
    out.add("final_norm.rstd", {g.b, g.s_rep}, DType::kFp32, "compiled backward (final norm)",
            "rsqrt(mean(x^2) + eps) in fp32", kCompiledWhole);
  } else if (torch_like) {
    // The final norm keeps what a layer's norm keeps (the hf RMSNorms' fp32 copy and, for
    // Llama, Gemma and gpt-oss alike, the normalized input the weight multiplies; measured:
    // hf_layers.json, model.norm), and lm_head keeps the norm's output besides.
    constexpr NormIds kFinal{"final_norm.in", "final_norm.mean", "final_norm.rstd",
                             "final_norm.normed", "final_norm.scale"};
    add_norm(kFinal, m, g, out, prof == Profile::kHf, false,
             prof == Profile::kHf && m.hf_modules == HfModules::kMamba2);
  } else {
    out.add("final_norm.in", {g.b, g.s_rep, g.h}, p, "final norm backward",
            "normalization gradient needs the input", kK43);
  }
  if (g.loss.impl == LossImpl::kFused) {
    // The projection and the loss run chunk by chunk in the forward, which also computes both
    // gradients; backward only scales them (validate.cpp: pytorch or hf profile, tp = 1).
    out.add("loss.grad_input", {g.b, g.s_tp, g.h}, p, "fused linear cross entropy backward",
            "the hidden states' gradient, computed in the forward and scaled in backward", kLiger);
    out.add("loss.grad_weight", {g.v, g.h}, g.weight, "fused linear cross entropy backward",
            "the output weight's gradient, computed in the forward (the weight's dtype)", kLiger);
    return;
  }
  if (g.loss.impl == LossImpl::kValue) {
    build_value_head(g, out);  // validate.cpp: the hf profile
    return;
  }
  add_head_input(g, out);
  if (rl_loss(g.loss)) {
    build_rl_loss(g, out);  // validate.cpp: the hf profile
    return;
  }
  if (torch_like && (g.loss.impl == LossImpl::kCompiled || whole)) {
    // The compiled loss keeps its bf16 input and recomputes the softmax from it; hf already
    // keeps those logits (the returned ModelOutput), the same tensor.
    if (prof != Profile::kHf)
      out.add("loss.logits", {g.b, g.s_tp, g.v}, p, "compiled cross-entropy backward",
              "the softmax is recomputed from the logits", kCompiledLoss);
    else
      out.add("logits", {g.b, g.s_tp, g.v}, p, "held by the returned ModelOutput",
              "CausalLMOutput.logits, also what the compiled loss recomputes its softmax from",
              kCompiledLoss);
    out.add("loss.amax", {g.b, g.s_tp}, DType::kFp32, "compiled cross-entropy backward",
            "each token's largest logit", kCompiledLoss);
    out.add("loss.lse", {g.b, g.s_tp}, DType::kFp32, "compiled cross-entropy backward",
            "each token's log-sum-exp", kCompiledLoss);
    out.add("loss.labels", {g.b, g.s_tp}, DType::kInt64, "nll_loss backward",
            "scatters -1/N into the target positions", kCompiledLoss);
    out.add("loss.total_weight", {}, DType::kFp32, "nll_loss backward",
            "the mean's divisor, the count of non-ignored targets", kCompiledLoss);
    if (whole)  // ForCausalLMLoss pads the shifted labels with ignore_index
      out.add("loss.valid", {g.b, g.s_tp}, DType::kBool, "compiled nll_loss backward",
              "target != ignore_index per token, where the gradient goes", kCompiledWhole);
    return;
  }
  if (torch_like) {
    // F.cross_entropy on the upcast logits: log_softmax keeps its fp32 output. transformers also
    // returns the lm_head logits in the ModelOutput, which the caller holds until backward.
    out.add("loss.log_softmax_out", {g.b, g.s_tp, g.v}, DType::kFp32, "log_softmax backward",
            "grad - exp(out) * sum(grad) needs the output",
            "PyTorch derivatives.yaml: _log_softmax");
    if (m.final_softcap > 0)
      // Gemma 2: logits = tanh(logits / cap) * cap before the loss.
      out.add("logits.softcap_tanh", {g.b, g.s_tp, g.v}, p, "tanh backward",
              "1 - tanh^2 needs the soft-capped logits' tanh",
              "transformers 5.17 modeling_gemma2.py Gemma2ForCausalLM (final_logit_softcapping)");
    if (prof == Profile::kHf)
      out.add("logits", {g.b, g.s_tp, g.v}, p, "held by the returned ModelOutput",
              "CausalLMOutput.logits stays referenced while loss.backward() runs",
              "transformers loss_utils.py ForCausalLMLoss (logits.float() inside the loss)");
    out.add("loss.labels", {g.b, g.s_tp}, DType::kInt64, "nll_loss backward",
            "scatters -1/N into the target positions", "PyTorch derivatives.yaml: nll_loss");
    // nll_loss with reduction="mean" returns its total weight, a 0-dim fp32 tensor the backward
    // divides by (measured: hf_layers.json, 4 B per step in every row).
    out.add("loss.total_weight", {}, DType::kFp32, "nll_loss backward",
            "the mean's divisor, the count of non-ignored targets",
            "PyTorch derivatives.yaml: nll_loss_forward's total_weight");
  } else {
    out.add("logits.fp32", {g.b, g.s_tp, g.v}, DType::kFp32, "cross-entropy backward",
            "the loss keeps the logits in fp32 (4sbv/t)", kK43);
  }
}

}  // namespace actmem::detail

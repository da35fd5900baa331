// The `megatron` profile: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", Sec. 4.1 (34sbh + 5as^2b per layer) generalized to GQA, SwiGLU and flash.
#include "inventory/builder.hpp"

namespace actmem::detail {

namespace {
constexpr const char* kK41 = "Korthikanti et al. 2022, Sec. 4.1";
constexpr const char* kK41Attn =
    "Korthikanti et al. 2022, Sec. 4.1, attention block (11sbh + 5as^2b)";
constexpr const char* kK41Mlp = "Korthikanti et al. 2022, Sec. 4.1, MLP (19sbh)";
constexpr const char* kQkNorm =
    "Megatron-LM megatron/core/transformer/attention.py (q_layernorm / k_layernorm on the "
    "[s, b, heads, d] query and key); input kept as Korthikanti et al. 2022, Sec. 4.1's layer norm";
constexpr const char* kMla =
    "Megatron-LM megatron/core/transformer/multi_latent_attention.py @ 003b4ce (MLA latents: "
    "TELinear down projections, parallel_mode 'duplicated', on the sequence-parallel shard), kept "
    "by Korthikanti et al. 2022, Sec. 4.1's norm and linear rules";
constexpr const char* kRelu2Meg =
    "Megatron-LM megatron/core/activations.py squared_relu, kept by Korthikanti et al. 2022, "
    "Sec. 4.1's activation rule";
constexpr const char* kFlash =
    "Dao 2023, FlashAttention-2, Sec. 3.1.1 (backward keeps Q, K, V, O, logsumexp)";
}  // namespace

void build_megatron(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                    RecordBuilder& rb) {
  const DType p = g.act;
  if (k.is_mamba()) {
    rb.add("ln1.in", {g.b, g.s_rep, g.h}, p, "norm backward",
           "normalization gradient needs the input's statistics",
           "Korthikanti et al. 2022, Sec. 4.1's layer-norm rule, for the Mamba layer's norm");
    add_mamba_megatron(g, rb);
    // MambaLayer's bias-dropout-add (megatron/core/ssm/mamba_layer.py, hidden_dropout).
    if (g.hidden_dropout)
      rb.add("mamba.dropout_mask", {g.b, g.s_rep, g.h}, DType::kBool, "residual dropout backward",
             "the same mask scales the gradient", kK41);
  }
  if (k.has_attention()) {
    rb.add("ln1.in", {g.b, g.s_rep, g.h}, p, "LayerNorm backward",
           "normalization gradient needs the input's statistics",
           "Korthikanti et al. 2022, Sec. 4.1, layer norm (4sbh for two)");
    rb.add("attn.qkv_in", {g.b, g.s_rep, g.h}, p, "QKV linear backward",
           "weight gradient = input^T x output gradient", kK41Attn);
    if (k.qk_norm || k.qk_l2_norm) {  // Qwen3's RMSNorm or Llama 4's L2 norm
      rb.add("attn.q_norm.in", {g.b, g.s_tp, g.a, g.d}, p, "q_layernorm backward",
             "normalization gradient needs its input", kQkNorm);
      rb.add("attn.k_norm.in", {g.b, g.s_tp, g.kv, g.d}, p, "k_layernorm backward",
             "normalization gradient needs its input", kQkNorm);
    }
    if (k.is_mla()) {
      // Megatron-LM multi_latent_attention.py: q_layernorm / kv_layernorm over the latents, then
      // the up projections; each norm keeps its input and each linear its input (Sec. 4.1's rules).
      // The down projections are duplicated on every TP rank and run on the layer's input as it
      // arrives, the s/t shard under sequence parallelism (_qkv_down_projection: "q_compressed:
      // [s / TP, b, q_lora_rank]"), so the latents, their norms and the column-parallel up
      // projections' kept inputs hold s/t tokens there, as LayerNorm inputs do.
      if (g.rq.value > 0) {
        rb.add("attn.q_latent_norm.in", {g.b, g.s_rep, g.rq}, p, "q latent norm backward",
               "normalization gradient needs its input", kMla);
        rb.add("attn.q_up_in", {g.b, g.s_rep, g.rq}, p, "query up-projection backward",
               "weight gradient needs its input (gathered again in backward under SP)", kMla);
      }
      rb.add("attn.kv_latent_norm.in", {g.b, g.s_rep, g.rkv}, p, "kv latent norm backward",
             "normalization gradient needs its input", kMla);
      rb.add("attn.kv_up_in", {g.b, g.s_rep, g.rkv}, p, "key/value up-projection backward",
             "weight gradient needs its input (gathered again in backward under SP)", kMla);
    }
    rb.add("attn.q", {g.b, g.a, g.s_tp, g.d}, p, "QK^T matmul backward",
           "gradient w.r.t. K needs Q", kK41Attn);
    rb.add("attn.k", {g.b, g.kv, g.s_tp, g.d}, p, "QK^T matmul backward",
           "gradient w.r.t. Q needs K", kK41Attn);
    if (g.flash) {
      rb.add("attn.lse", {g.b, g.a, g.s_tp}, DType::kFp32, "flash attention backward",
             "rebuilds the softmax tile by tile from the row log-sum-exp", kFlash);
    } else {
      core(rb.add("attn.softmax_out", {g.b, g.a, g.s_tp, g.s_keys}, p, "softmax backward",
                  "dsoftmax = y * (dy - sum(dy * y)) needs the output y", kK41Attn));
      if (g.attn_dropout) {
        core(rb.add("attn.dropout_mask", {g.b, g.a, g.s_tp, g.s_keys}, DType::kBool,
                    "attention dropout backward", "the same mask scales the gradient", kK41Attn));
        core(rb.add("attn.dropout_out", {g.b, g.a, g.s_tp, g.s_keys}, p,
                    "attention-over-V backward",
                    "gradient w.r.t. V needs the (dropped-out) probabilities", kK41Attn));
      }
    }
    rb.add("attn.v", {g.b, g.kv, g.s_tp, g.dv}, p, "attention-over-V backward",
           "gradient w.r.t. the probabilities needs V", kK41Attn);
    rb.add("attn.proj_in", {g.b, g.s_tp, g.a, g.dv}, p, "output projection backward",
           g.flash ? "weight gradient needs its input, which is also the attention output O flash "
                     "backward reads"
                   : "weight gradient = input^T x output gradient",
           kK41Attn);
    // A parallel block drops out its summed branches once: the MLP's mask below.
    if (g.hidden_dropout && m.block == BlockLayout::kSequential)
      rb.add("attn.proj_dropout_mask", {g.b, g.s_rep, g.h}, DType::kBool,
             "residual dropout backward", "the same mask scales the gradient", kK41Attn);
    if (m.sandwich_norm)
      rb.add(
          "attn.post_norm.in", {g.b, g.s_rep, g.h}, p, "post-attention norm backward",
          "normalization gradient needs its input",
          "Korthikanti et al. 2022, Sec. 4.1's layer-norm rule, for Gemma's post-attention norm");
  }
  if (!k.has_ffn) return;
  // Parallel layouts: the MLP's norm reads the layer input, ln1.in's storage (no second copy);
  // with one shared norm the MLP's input is attn.qkv_in's storage too.
  if (m.block == BlockLayout::kSequential)
    rb.add("ln2.in", {g.b, g.s_rep, g.h}, p, "LayerNorm backward",
           "normalization gradient needs the input's statistics",
           "Korthikanti et al. 2022, Sec. 4.1, layer norm (4sbh for two)");
  if (k.is_moe()) {
    build_moe_mlp(m, k, g, rb);
  } else {
    if (m.block != BlockLayout::kParallel)
      rb.add("mlp.fc1_in", {g.b, g.s_rep, g.h}, p, "first MLP linear backward",
             "weight gradient = input^T x output gradient", kK41Mlp);
    if (k.ffn == FfnType::kGelu) {
      rb.add("mlp.act_in", {g.b, g.s_tp, g.f}, p, "GeLU backward",
             "GeLU's derivative is a function of its input", kK41Mlp);
    } else if (k.ffn == FfnType::kRelu2) {
      // Megatron-LM squared_relu: pow(relu(x), 2) keeps relu's output, read by both backwards.
      rb.add("mlp.relu_out", {g.b, g.s_tp, g.f}, p, "squared ReLU backward",
             "relu keeps its output, which the square reads as its input", kRelu2Meg);
    } else {
      // Megatron-LM fuses gate and up into one [2f] projection and keeps it for the GLU backward.
      rb.add("mlp.act_in", {g.b, g.s_tp, Dim{"2", 2}, g.f}, p, "GLU activation backward",
             "d(act(gate) * up) needs both gate and up", kK41Mlp);
    }
    rb.add("mlp.fc2_in", {g.b, g.s_tp, g.f}, p, "second MLP linear backward",
           "weight gradient = input^T x output gradient", kK41Mlp);
  }
  if (m.sandwich_norm)
    rb.add(
        "mlp.post_norm.in", {g.b, g.s_rep, g.h}, p, "post-feedforward norm backward",
        "normalization gradient needs its input",
        "Korthikanti et al. 2022, Sec. 4.1's layer-norm rule, for Gemma's post-feedforward norm");
  if (g.hidden_dropout)
    rb.add("mlp.dropout_mask", {g.b, g.s_rep, g.h}, DType::kBool, "residual dropout backward",
           "the same mask scales the gradient", kK41);
}

}  // namespace actmem::detail

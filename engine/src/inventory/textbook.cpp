// The `textbook` profile: seed 000_4dd5ee95fd13b74d.txt, Sec. 2 table ("Detailed Breakdown for One
// Transformer Layer"), one record per table row, and its FlashAttention variant (Sec. 4, Strategy
// 2).
#include "inventory/builder.hpp"

namespace actmem::detail {

namespace {
constexpr const char* kSeedTable = "seed 000_4dd5ee95fd13b74d.txt, Sec. 2 table";
constexpr const char* kSeedFlash =
    "seed 000_4dd5ee95fd13b74d.txt, Sec. 4 Strategy 2 (only Q, K, V + row statistics)";
}  // namespace

void build_textbook(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                    RecordBuilder& rb) {
  const DType p = g.act;
  // State-space mixers are not in the seed: validate() refuses them under this profile.
  if (k.has_attention()) {
    rb.add("ln1.in", {g.b, g.s_rep, g.h}, p, "LayerNorm backward", "needs the original statistics",
           kSeedTable);
    rb.add("attn.qkv_in", {g.b, g.s_rep, g.h}, p, "QKV projection backward",
           "dL/dW = delta x^T needs the input x", kSeedTable);
    // A per-head q/k norm (Qwen3) by the seed's LayerNorm rule: its input is kept. The seed's
    // full multi-head K (below) applies to its norm too.
    if (k.qk_norm || k.qk_l2_norm) {  // Qwen3's RMSNorm or Llama 4's L2 norm
      rb.add("attn.q_norm.in", {g.b, g.s_tp, g.a, g.d}, p, "q norm backward",
             "needs the original statistics (the seed's LayerNorm rule)", kSeedTable);
      rb.add("attn.k_norm.in", {g.b, g.s_tp, g.a, g.d}, p, "k norm backward",
             "needs the original statistics (the seed's LayerNorm rule)", kSeedTable);
    }
    // MLA's latents (not in the seed) by its rules: each norm and each linear keeps its input.
    if (k.is_mla()) {
      if (g.rq.value > 0) {
        rb.add("attn.q_latent_norm.in", {g.b, g.s_tp, g.rq}, p, "q latent norm backward",
               "needs the original statistics (the seed's LayerNorm rule)", kSeedTable);
        rb.add("attn.q_up_in", {g.b, g.s_tp, g.rq}, p, "query up-projection backward",
               "dL/dW needs the input", kSeedTable);
      }
      rb.add("attn.kv_latent_norm.in", {g.b, g.s_tp, g.rkv}, p, "kv latent norm backward",
             "needs the original statistics (the seed's LayerNorm rule)", kSeedTable);
      rb.add("attn.kv_up_in", {g.b, g.s_tp, g.rkv}, p, "key/value up-projection backward",
             "dL/dW needs the input", kSeedTable);
    }
    // The seed counts Q, K and V as three b x s x h tensors (it assumes full multi-head K/V).
    rb.add("attn.q", {g.b, g.a, g.s_tp, g.d}, p, "attention backward", "chain rule through QK^T",
           kSeedTable);
    rb.add("attn.k", {g.b, g.a, g.s_tp, g.d}, p, "attention backward", "chain rule through QK^T",
           kSeedTable);
    rb.add("attn.v", {g.b, g.a, g.s_tp, g.dv}, p, "attention backward",
           "chain rule through the weights x V", kSeedTable);
    if (g.flash) {
      rb.add("attn.lse", {g.b, g.a, g.s_tp}, DType::kFp32, "flash attention backward",
             "the row statistics let backward rebuild the softmax", kSeedFlash);
    } else {
      core(rb.add("attn.softmax_out", {g.b, g.a, g.s_tp, g.s_keys}, p, "softmax backward",
                  "dy_i/dz_j = y_i (delta_ij - y_j) needs the output", kSeedTable));
      if (g.attn_dropout)
        core(rb.add("attn.dropout_mask", {g.b, g.a, g.s_tp, g.s_keys}, DType::kBool,
                    "dropout backward", "the same mask is applied in backward (1 byte/element)",
                    kSeedTable));
    }
    rb.add("attn.proj_in", {g.b, g.s_tp, g.a, g.dv}, p, "output projection backward",
           "dL/dW needs the input", kSeedTable);
    if (m.sandwich_norm)
      rb.add("attn.post_norm.in", {g.b, g.s_rep, g.h}, p, "post-attention norm backward",
             "needs the original statistics (the seed's LayerNorm rule)", kSeedTable);
  }
  if (!k.has_ffn) return;
  // Parallel layouts (not in the seed): the MLP's norm reads ln1.in's tensor; with one shared
  // norm the MLP's input is attn.qkv_in's tensor too. One tensor is counted once.
  if (m.block == BlockLayout::kSequential)
    rb.add("ln2.in", {g.b, g.s_rep, g.h}, p, "LayerNorm backward", "needs the original statistics",
           kSeedTable);
  if (k.is_moe()) {
    build_moe_mlp(m, k, g, rb);
    return;
  }
  if (m.block != BlockLayout::kParallel)
    rb.add("mlp.fc1_in", {g.b, g.s_rep, g.h}, p, "FFN gate+up projection backward",
           "dL/dW needs the input", kSeedTable);
  if (k.ffn == FfnType::kGelu) {
    rb.add("mlp.act_in", {g.b, g.s_tp, g.f}, p, "GELU backward",
           "non-trivial derivative needs the input", kSeedTable);
  } else if (k.ffn == FfnType::kRelu2) {
    // Squared ReLU: one f-wide tensor, the seed's rule for an activation with a derivative that
    // needs a saved tensor (relu's output serves both relu and the square).
    rb.add("mlp.relu_out", {g.b, g.s_tp, g.f}, p, "squared ReLU backward",
           "the derivative 2·relu(x) needs relu's output", kSeedTable);
  } else {
    rb.add("mlp.gate", {g.b, g.s_tp, g.f}, p, "SwiGLU backward", "gate output, for SwiGLU backward",
           kSeedTable);
    rb.add("mlp.up", {g.b, g.s_tp, g.f}, p, "SwiGLU backward", "up projection output", kSeedTable);
  }
  rb.add("mlp.fc2_in", {g.b, g.s_tp, g.f}, p, "down projection backward", "dL/dW needs the input",
         kSeedTable);
  if (m.sandwich_norm)
    rb.add("mlp.post_norm.in", {g.b, g.s_rep, g.h}, p, "post-feedforward norm backward",
           "needs the original statistics (the seed's LayerNorm rule)", kSeedTable);
}

}  // namespace actmem::detail

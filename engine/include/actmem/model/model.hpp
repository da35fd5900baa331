// The architecture of a decoder-only transformer, independent of where it was read from: model-wide
// dimensions and a stack of layers, each layer one of a small set of layer kinds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actmem/core/limits.hpp"

namespace actmem {

// kRelu2: squared ReLU without a gate (Nemotron-H's relu2, So et al. 2021 "Primer").
enum class FfnType { kGelu, kSwiglu, kGeglu, kRelu2 };
// A gated FFN (GLU) has a gate and an up projection: two first matrices.
inline bool is_gated(FfnType f) {
  return f == FfnType::kSwiglu || f == FfnType::kGeglu;
}
// What mixes tokens in a layer: attention, a Mamba-2 state-space mixer, or nothing (a layer that is
// only an FFN: Nemotron-H's '-' and 'E' layers).
enum class Mixer { kAttention, kMamba2, kNone };
enum class NormType { kLayerNorm, kRmsNorm };
enum class PosEncoding { kLearned, kRope, kNone };
// Where the MLP reads its input. Sequential: after attention (x + attn(ln1(x)), then ln2). The
// parallel layouts of GPT-J and Falcon: attention and MLP both read the layer input and their
// outputs are summed; `kParallel` normalizes it once for both (Falcon-7B, Falcon2-11B:
// input_layernorm), `kParallelTwoNorms` once for each (Falcon-40B/180B's new decoder
// architecture: ln_attn and ln_mlp over the same input). transformers modeling_falcon.py.
enum class BlockLayout { kSequential, kParallel, kParallelTwoNorms };
// Which transformers modules the `hf` profile follows where families differ in what they save:
// kAuto is GPT-2's (LayerNorm) or Llama's (RMSNorm) as the norm says; kFalcon is
// modeling_falcon.py (F.gelu, softmax in the activation dtype, K/V gathered by index lists);
// kGptOss is modeling_gpt_oss.py (GptOssRMSNorm multiplies its weight in fp32; eager attention
// concatenates the sinks, subtracts the row max and takes the softmax in the activation dtype);
// kPhimoe is modeling_phimoe.py (Llama's attention with LayerNorm norms); kLlama4 is
// modeling_llama4.py (Llama's modules with the softmax in the activation dtype).
// kMamba2 is modeling_mamba2.py (the residual stream in fp32: residual_in_fp32, so the final
// norm keeps fp32 tensors).
enum class HfModules { kAuto, kFalcon, kGptOss, kPhimoe, kLlama4, kMamba2 };

// Which transformers 5.x sparse block the `hf` profile follows (the grouped-experts
// implementation with its family's router), measured in tests/reference/gpu/hf_layers.json;
// kGeneric keeps the Megatron-style expert records in every profile.
enum class HfMoe { kGeneric, kQwen3Moe, kDeepseekV2, kDeepseekV3, kGptOss, kPhimoe, kLlama4 };

struct MoeSpec {
  std::uint64_t experts = 0;  // 0: dense layer
  std::uint64_t top_k = 0;
  std::uint64_t expert_ffn = 0;         // each routed expert's intermediate width
  std::uint64_t shared_experts = 0;     // always-on experts (DeepSeek/Qwen-MoE style)
  std::uint64_t shared_expert_ffn = 0;  // intermediate width of each shared expert
  double capacity_factor = 0.0;         // 0: dropless (tokens follow top-k routing exactly)
  bool norm_topk = false;               // the top-k weights are renormalized (norm_topk_prob)
  std::uint64_t groups = 1;             // DeepSeek-V3's group-limited routing: n_group ...
  std::uint64_t topk_groups = 1;        // ... of which topk_group are kept
  bool score_bias = false;              // DeepSeek-V3's e_score_correction_bias (E parameters)
  bool group_limited_greedy = false;    // DeepSeek-V2's topk_method: groups by their max score
  bool router_bias = false;             // gpt-oss's router is a linear with a bias (E parameters)
  bool input_jitter = false;            // PhiMoE's input_jitter_noise > 0: the MLP input is
                                        // scaled by fresh uniform noise in training
  HfMoe hf_block = HfMoe::kGeneric;
};

// Multi-head latent attention (DeepSeek-V2, Sec. 2.1; DeepSeek-V3): keys and values come from one
// compressed latent per token (kv_lora_rank) plus a RoPE key shared by the heads (qk_rope_dim);
// queries optionally through their own latent (q_lora_rank, 0: projected directly). Each head's
// query and key are qk_nope_dim + qk_rope_dim wide, its value v_head_dim.
struct MlaSpec {
  std::uint64_t q_lora_rank = 0;
  std::uint64_t kv_lora_rank = 0;  // 0: not MLA
  std::uint64_t qk_nope_dim = 0;
  std::uint64_t qk_rope_dim = 0;
  std::uint64_t v_head_dim = 0;
};

// Mamba-2's selective state-space mixer (Dao & Gu 2024, "Transformers are SSMs", Sec. 7;
// transformers Mamba2Mixer and NemotronHMamba2Mixer): one input projection to the gate z, the conv
// input [x, B, C] and the per-head step dt; a causal depthwise convolution over [x, B, C]; the SSD
// scan over H heads of P channels with an N-wide state, B and C shared by the heads of each of G
// groups, computed in chunks of Q tokens; a gated RMSNorm and the output projection.
// Which config names the Mamba-2 keys go by, for messages: NemotronHConfig's (mamba_num_heads,
// mamba_head_dim, ssm_state_size) or Mamba2Config's (num_heads, head_dim, state_size).
enum class MambaKeys { kNemotronH, kMamba2 };

struct MambaSpec {
  std::uint64_t heads = 0;        // H (num_heads, mamba_num_heads)
  std::uint64_t head_dim = 0;     // P
  std::uint64_t state = 0;        // N (state_size, ssm_state_size)
  std::uint64_t groups = 1;       // G (n_groups)
  std::uint64_t conv_kernel = 4;  // K
  std::uint64_t chunk = 256;      // Q (chunk_size)
  bool conv_bias = true;          // use_conv_bias
  bool proj_bias = false;         // use_bias: in_proj and out_proj biases
  // The gated RMSNorm normalizes each group's I/G channels apart (Nemotron-H: group_size =
  // intermediate_size / n_groups) or all I together (Mamba2's MambaRMSNormGated).
  bool norm_per_group = false;
  MambaKeys key_names = MambaKeys::kNemotronH;
  const char* heads_key() const {
    return key_names == MambaKeys::kMamba2 ? "num_heads" : "mamba_num_heads";
  }
  const char* head_dim_key() const {
    return key_names == MambaKeys::kMamba2 ? "head_dim" : "mamba_head_dim";
  }
  const char* state_key() const {
    return key_names == MambaKeys::kMamba2 ? "state_size" : "ssm_state_size";
  }
  // Widths (validate() bounds heads·head_dim and groups·state before any of these is used).
  std::uint64_t inner() const { return heads * head_dim; }                    // I
  std::uint64_t conv_dim() const { return inner() + 2 * groups * state; }     // I + 2GN
  std::uint64_t in_proj_dim() const { return conv_dim() + inner() + heads; }  // 2I + 2GN + H
  // One tensor-parallel rank's share (Megatron-LM MambaMixer: nheads and ngroups per rank;
  // validate() requires t to divide both).
  MambaSpec split(std::uint64_t t) const {
    MambaSpec r = *this;
    r.heads /= t;
    r.groups /= t;
    return r;
  }
};

// One kind of layer: everything that may differ from one layer of the stack to the next (its
// attention mixer and its FFN). Norms, positions, the hidden size and dropout are model-wide.
struct LayerKind {
  std::string name = "base";    // "base" (the model's top-level keys) or its key in layer_kinds
  std::string field = "model";  // where its keys were read, the prefix of its error messages
  // The token mixer (its norm is ln1) and whether an FFN follows (its norm is ln2); a layer has
  // at least one of them. Attention fields below are read only with Mixer::kAttention.
  Mixer mixer = Mixer::kAttention;
  bool has_ffn = true;
  MambaSpec mamba;  // with Mixer::kMamba2
  std::uint64_t heads = 0;
  std::uint64_t kv_heads = 0;
  std::uint64_t head_dim = 0;
  std::uint64_t ffn_hidden = 0;  // dense FFN width (0 for an MoE layer without one)
  FfnType ffn = FfnType::kGelu;
  bool qkv_bias = false;  // Qwen2, GPT-2
  bool o_bias = false;    // attention output projection bias (GPT-2, Llama attention_bias)
  bool mlp_bias = false;  // MLP biases (GPT-2, Llama mlp_bias), every expert's too (gpt-oss)
  // One learned logit per head in every softmax's denominator (gpt-oss's attention sinks,
  // GptOssAttention.sinks): a parameters per layer.
  bool attn_sinks = false;
  // Llama 4: RoPE on this layer (false: a NoPE layer), the weightless L2 norm over each head of q
  // and k after RoPE (Llama4TextL2Norm, use_qk_norm), and the NoPE layers' per-position query
  // temperature (attn_temperature_tuning).
  bool rope = true;
  bool qk_l2_norm = false;
  bool attn_temperature = false;
  // Tokens a query attends back to: a sliding window (Gemma 2/3, gpt-oss) or Llama 4's chunks;
  // 0 for full attention. It bounds the inference KV cache (min(s, window) tokens per layer);
  // eager and flash attention keep the same saved tensors either way (measured).
  std::uint64_t window = 0;
  // RMSNorm over each head's query and key before RoPE, one head_dim weight each, shared by the
  // heads (Qwen3Attention's q_norm/k_norm; Megatron-LM's qk_layernorm).
  bool qk_norm = false;
  MoeSpec moe;
  MlaSpec mla;  // with MLA, head_dim is qk_nope_dim + qk_rope_dim and kv_heads equals heads

  bool has_attention() const { return mixer == Mixer::kAttention; }
  bool is_mamba() const { return mixer == Mixer::kMamba2; }
  bool is_moe() const { return has_ffn && moe.experts > 0; }
  bool is_mla() const { return mla.kv_lora_rank > 0; }
  // Each head's value width: v_head_dim under MLA, else head_dim.
  std::uint64_t v_dim() const { return is_mla() ? mla.v_head_dim : head_dim; }
};

struct ModelSpec {
  std::string id;               // preset id or "custom"
  std::string field = "model";  // where its keys were read: "model.text_config" in a wrapper
  std::string name;             // display name
  std::string source;
  std::uint64_t published_params = 0;  // 0 when unknown
  std::string published_params_source;

  std::uint64_t layers = 0;
  std::uint64_t hidden = 0;
  std::uint64_t vocab = 0;
  std::uint64_t max_positions = 0;
  NormType norm = NormType::kLayerNorm;
  PosEncoding pos = PosEncoding::kLearned;
  bool tied_embeddings = false;
  bool lm_head_bias = false;  // PhiMoE's lm_head_bias (V parameters)
  // Gemma's RMSNorm (Gemma2RMSNorm, Gemma3RMSNorm): computed in fp32 throughout and scaled by
  // (1 + weight); and Gemma's sandwich layout: a norm after attention and after the MLP too.
  bool gemma_norm = false;
  bool sandwich_norm = false;
  // Gemma 2's tanh soft-capping of the attention scores and of the final logits (0: none).
  double attn_softcap = 0.0;
  double final_softcap = 0.0;
  BlockLayout block = BlockLayout::kSequential;
  HfModules hf_modules = HfModules::kAuto;
  // Falcon's module details (hf profile): the int64[1] index lists that gather K and V from the
  // fused QKV output (2 with multi-query or the new architecture, else 0), and whether K and V are
  // broadcast to every query head before attention (the new architecture).
  std::uint32_t hf_qkv_index_lists = 0;
  bool hf_kv_broadcast = false;
  // Gemma's embedding multiplies by sqrt(hidden) through a 0-dim tensor (hf: kept by the mul);
  // Gemma 3 computes two RoPE tables when it has both sliding and full layers (rotary_emb_local,
  // rope_local_base_freq), each layer's RoPE keeping its table's cos and sin.
  bool hf_embed_scale = false;
  std::uint32_t hf_rope_tables = 1;
  // DeepSeek-V2 and Llama 4 rotate through one complex64 table (freqs_cis, s x d/2) that the
  // complex multiply keeps whatever the activation dtype; the other families keep cos and sin in
  // it (measured: tests/reference/families_cpu.json, fp32 rows).
  bool hf_rope_complex = false;
  // Phi-3's apply_rotary_pos_emb concatenates the rotated and the passed-through channels, so
  // its queries are contiguous as (b, a, s, d): cuDNN attention's output then follows that layout
  // and o_proj's input is a copy (measured: hf_layers.json, phi3 sdpa).
  bool hf_rope_cat = false;
  // GPT-2's activation_function "gelu" or "gelu_pytorch_tanh": one F.gelu that keeps its input
  // (activations.py GELUActivation, PytorchGELUTanh), not the default gelu_new's Python ops
  // (NewGELUActivation keeps four tensors).
  bool hf_gelu_native = false;
  // DeepSeek-V3's multi-token-prediction depths (num_nextn_predict_layers): parameters counted
  // apart from the model's (model.mtp_params).
  std::uint64_t mtp_layers = 0;
  double attention_dropout = 0.0;  // defaults from the model card; the config may override
  double hidden_dropout = 0.0;

  // The layer kinds the stack uses, in order of first appearance (kinds[0] is layer 0's kind), and
  // the kind of each layer, bottom to top. An empty stack means every layer is kinds[0].
  std::vector<LayerKind> kinds = std::vector<LayerKind>(1);
  std::vector<std::uint32_t> stack;

  std::size_t kind_index(std::uint64_t layer) const {
    return stack.empty() ? 0 : static_cast<std::size_t>(stack[layer]);
  }
  const LayerKind& kind_of(std::uint64_t layer) const { return kinds[kind_index(layer)]; }
  // Layers of each kind in [first, first + n).
  std::vector<std::uint64_t> kind_counts(std::uint64_t first, std::uint64_t n) const {
    std::vector<std::uint64_t> out(kinds.size(), 0);
    for (std::uint64_t i = first; i < first + n; ++i) ++out[kind_index(i)];
    return out;
  }
  bool any_moe() const {
    for (const LayerKind& k : kinds)
      if (k.is_moe()) return true;
    return false;
  }
};

const char* ffn_name(FfnType f);
const char* norm_name(NormType n);
const char* pos_name(PosEncoding p);
const char* block_name(BlockLayout b);
const char* mixer_name(Mixer x);

}  // namespace actmem

// The `pytorch` and `hf` profiles: what PyTorch 2 autograd keeps on CUDA for blocks written with
// standard modules (`pytorch`) and for transformers' eager GPT-2/Llama modules (`hf`). Derived from
// derivatives.yaml and measured with saved_tensors_hooks (tests/reference/, docs/validation.md).
#include "inventory/builder.hpp"

namespace actmem::detail {

namespace {
constexpr const char* kDeriv =
    "PyTorch derivatives.yaml; measured: tests/reference/pytorch_saved.json";
constexpr const char* kHfLlama =
    "transformers modeling_llama.py (LlamaRMSNorm, eager attention); measured: "
    "tests/reference/pytorch_saved.json";
constexpr const char* kHfGpt2 =
    "transformers modeling_gpt2.py / activations.py NewGELUActivation; measured: "
    "tests/reference/pytorch_saved.json";
constexpr const char* kHfQwen3 =
    "transformers 5.17 modeling_qwen3.py (Qwen3Attention q_norm/k_norm, Qwen3RMSNorm); measured: "
    "tests/reference/gpu/hf_layers.json";
constexpr const char* kHfFalcon =
    "transformers 5.17 modeling_falcon.py (FalconAttention eager, FalconDecoderLayer, "
    "FalconMLP); measured: tests/reference/gpu/hf_layers.json";
constexpr const char* kHfDeepseek =
    "transformers 5.17 modeling_deepseek_v3.py / modeling_deepseek_v2.py (DeepseekV3Attention: "
    "q_a_layernorm, kv_a_layernorm, eager attention); measured: tests/reference/gpu/hf_layers.json";
constexpr const char* kHfGptOss =
    "transformers 5.17 modeling_gpt_oss.py (GptOssRMSNorm: weight * x in fp32; eager attention "
    "with sinks: cat, row max, softmax in the activation dtype); measured: "
    "tests/reference/gpu/hf_layers.json";
constexpr const char* kHfPhimoe =
    "transformers 5.17 modeling_phimoe.py (PhimoeAttention eager: Llama's, fp32 softmax); "
    "measured: tests/reference/gpu/hf_layers.json";
constexpr const char* kHfLlama4 =
    "transformers 5.17 modeling_llama4.py (Llama4TextL2Norm, NoPE temperature, eager softmax in "
    "the activation dtype); measured: tests/reference/gpu/hf_layers.json";
constexpr const char* kHfMamba2 =
    "transformers 5.17 modeling_mamba2.py (Mamba2RMSNorm over the fp32 residual stream: "
    "residual_in_fp32); measured: tests/reference/gpu/hf_layers.json";
constexpr const char* kRelu2 =
    "transformers activations.py ReLUSquaredActivation (Nemotron-H's relu2); measured: "
    "tests/reference/gpu/hf_layers.json";
constexpr const char* kSinks =
    "PyTorch derivatives.yaml for cat + softmax over the scores and the sink column (as "
    "modeling_gpt_oss.py writes it, without its explicit row max)";
constexpr const char* kSdpaFlash =
    "PyTorch derivatives.yaml _scaled_dot_product_flash_attention: q, k, v, out, logsumexp, rng "
    "state";
constexpr const char* kSdpaCudnn =
    "PyTorch derivatives.yaml _scaled_dot_product_cudnn_attention (q, k, v, out, softmax stats, "
    "philox seed and offset) as transformers 5.17's sdpa path calls it; measured on an H200, "
    "PyTorch 2.11: tests/reference/gpu/hf_layers.json, docs/validation.md 4.4";
constexpr const char* kSdpaMath =
    "PyTorch attention.cpp _scaled_dot_product_attention_math (fp32 upcast, >= 2.5); measured: "
    "tests/reference/pytorch_saved.json";

constexpr NormIds kLn1{"ln1.in", "ln1.mean", "ln1.rstd", "ln1.normed", "ln1.scale"};
constexpr NormIds kLn2{"ln2.in", "ln2.mean", "ln2.rstd", "ln2.normed", "ln2.scale"};
constexpr NormIds kAttnPost{"attn.post_norm.in", "attn.post_norm.mean", "attn.post_norm.rstd",
                            "attn.post_norm.normed", "attn.post_norm.scale"};
constexpr NormIds kMlpPost{"mlp.post_norm.in", "mlp.post_norm.mean", "mlp.post_norm.rstd",
                           "mlp.post_norm.normed", "mlp.post_norm.scale"};
constexpr const char* kHfGemma =
    "transformers 5.17 modeling_gemma2.py / modeling_gemma3.py (Gemma2RMSNorm: fp32 throughout, "
    "x * (1 + weight)); measured: tests/reference/gpu/hf_layers.json";

}  // namespace

// `shares_input`: a second norm over the layer input (the parallel layout's ln_mlp), whose saved
// input is the same storage as the first norm's wherever the norm keeps the input itself.
void add_norm(const NormIds& id, const ModelSpec& m, const LayerGeometry& g, RecordBuilder& rb,
              bool hf, bool shares_input, bool fp32_input) {
  const char* in_id = id.in;
  // The hf RMSNorms save an fp32 copy of their input, a new tensor per norm unless the activations
  // are fp32 already (then .to(float32) returns the input itself).
  const bool copies_input = hf && m.norm == NormType::kRmsNorm && g.act != DType::kFp32;
  const bool skip_in = shares_input && !copies_input;
  if (m.norm == NormType::kLayerNorm) {
    if (!skip_in)
      rb.add(in_id, {g.b, g.s_rep, g.h}, g.act, "native_layer_norm backward",
             "recomputes x_hat from the input", kDeriv);
    rb.add(id.mean, {g.b, g.s_rep}, DType::kFp32, "native_layer_norm backward",
           "per-row mean, fp32 on CUDA", kDeriv);
    rb.add(id.rstd, {g.b, g.s_rep}, DType::kFp32, "native_layer_norm backward",
           "per-row 1/sigma, fp32 on CUDA", kDeriv);
    return;
  }
  if (hf && m.gemma_norm) {
    // output = x.float() * rsqrt(mean(x^2) + eps); output * (1.0 + weight.float()): the fp32
    // input, the fp32 rstd, the fp32 (1 + weight) made each forward, and the fp32 normalized
    // input the last mul keeps (cast to the input dtype only after).
    if (!skip_in)
      rb.add(in_id, {g.b, g.s_rep, g.h}, DType::kFp32, "pow / mul backward (fp32 upcast)",
             "the fp32 copy is squared and scaled", kHfGemma);
    rb.add(id.rstd, {g.b, g.s_rep}, DType::kFp32, "rsqrt / mul backward", "the fp32 1/rms per row",
           kHfGemma);
    rb.add(id.scale, {g.h}, DType::kFp32, "mul backward (gradient of the normalized input)",
           "(1 + weight) in fp32, a new tensor each forward", kHfGemma);
    rb.add(id.normed, {g.b, g.s_rep, g.h}, DType::kFp32, "mul backward (weight gradient)",
           "the fp32 normalized input", kHfGemma);
    return;
  }
  if (hf) {
    // hs = x.to(fp32); hs * rsqrt(hs.pow(2).mean(-1) + eps); weight * hs.to(input_dtype)
    // (Llama), or (weight * hs).to(input_dtype) (gpt-oss: the normalized input stays fp32).
    // An fp32 input (Mamba2's residual_in_fp32 stream at the final norm) is kept itself, and
    // the normalized row, cast back to the input's dtype, stays fp32 (measured: hf_layers.json,
    // backbone.norm_f).
    const bool gpt_oss = m.hf_modules == HfModules::kGptOss;
    const char* src = gpt_oss ? kHfGptOss : fp32_input ? kHfMamba2 : kHfLlama;
    if (!skip_in)
      rb.add(in_id, {g.b, g.s_rep, g.h}, DType::kFp32,
             fp32_input ? "pow / mul backward (the fp32 input itself)"
                        : "pow / mul backward (fp32 upcast of the input)",
             "the RMSNorm squares and scales the fp32 copy", src);
    rb.add(id.rstd, {g.b, g.s_rep}, DType::kFp32, "rsqrt / mul backward", "the fp32 1/rms per row",
           src);
    rb.add(id.normed, {g.b, g.s_rep, g.h}, gpt_oss || fp32_input ? DType::kFp32 : g.act,
           "mul-by-weight backward", "weight gradient = sum(grad * normalized input)", src);
    return;
  }
  if (!skip_in)
    rb.add(in_id, {g.b, g.s_rep, g.h}, g.act, "pow / mul backward", "x^2 and x * r both read x",
           kDeriv);
  rb.add(id.rstd, {g.b, g.s_rep}, g.act, "rsqrt / mul backward",
         "r = rsqrt(mean(x^2) + eps) per row", kDeriv);
  rb.add(id.normed, {g.b, g.s_rep, g.h}, g.act, "mul-by-weight backward",
         "weight gradient = sum(grad * x * r)", kDeriv);
}
namespace {

// Qwen3's RMSNorm over each head of q (a heads) and k (kv heads), applied to the projection's
// output viewed as (b, s, heads, d) before the transpose and RoPE. The same three tensors as a
// hidden-state RMSNorm, one row per token and head (measured: hf_layers.json, qwen3 rows).
void add_head_norms(const ModelSpec& m, const LayerGeometry& g, RecordBuilder& rb, bool hf) {
  struct One {
    const char* in;
    const char* rstd;
    const char* normed;
    const char* scale;
    Dim heads;
  };
  for (const One& o :
       {One{"attn.q_norm.in", "attn.q_norm.rstd", "attn.q_norm.normed", "attn.q_norm.scale", g.a},
        One{"attn.k_norm.in", "attn.k_norm.rstd", "attn.k_norm.normed", "attn.k_norm.scale",
            g.kv}}) {
    if (hf && m.gemma_norm) {
      // Gemma 3's q_norm / k_norm are Gemma3RMSNorm(head_dim) on (b, heads, s, d).
      rb.add(o.in, {g.b, o.heads, g.s_tp, g.d}, DType::kFp32, "pow / mul backward (fp32 upcast)",
             "the fp32 copy of each head is squared and scaled", kHfGemma);
      rb.add(o.rstd, {g.b, o.heads, g.s_tp}, DType::kFp32, "rsqrt / mul backward",
             "the fp32 1/rms per token and head", kHfGemma);
      rb.add(o.scale, {g.d}, DType::kFp32, "mul backward", "(1 + weight) in fp32", kHfGemma);
      rb.add(o.normed, {g.b, o.heads, g.s_tp, g.d}, DType::kFp32, "mul backward (weight gradient)",
             "the fp32 normalized head", kHfGemma);
    } else if (hf) {
      rb.add(o.in, {g.b, g.s_tp, o.heads, g.d}, DType::kFp32,
             "pow / mul backward (fp32 upcast of the input)",
             "Qwen3RMSNorm squares and scales the fp32 copy of each head", kHfQwen3);
      rb.add(o.rstd, {g.b, g.s_tp, o.heads}, DType::kFp32, "rsqrt / mul backward",
             "the fp32 1/rms per token and head", kHfQwen3);
      rb.add(o.normed, {g.b, g.s_tp, o.heads, g.d}, g.act, "mul-by-weight backward",
             "weight gradient = sum(grad * normalized head)", kHfQwen3);
    } else {
      rb.add(o.in, {g.b, g.s_tp, o.heads, g.d}, g.act, "pow / mul backward",
             "x^2 and x * r both read x", kDeriv);
      rb.add(o.rstd, {g.b, g.s_tp, o.heads}, g.act, "rsqrt / mul backward",
             "r = rsqrt(mean(x^2) + eps) per token and head", kDeriv);
      rb.add(o.normed, {g.b, g.s_tp, o.heads, g.d}, g.act, "mul-by-weight backward",
             "weight gradient = sum(grad * x * r)", kDeriv);
    }
  }
}
// Llama 4's Llama4TextL2Norm over each head of q and k after RoPE: x.float() * rsqrt(mean(x^2)
// + eps), no weight; the fp32 copy and the rsqrt row are kept (measured: hf_layers.json).
void add_l2_head_norms(const LayerGeometry& g, RecordBuilder& rb) {
  rb.add("attn.q_norm.in", {g.b, g.s_tp, g.a, g.d}, DType::kFp32, "pow / mul backward",
         "the fp32 copy of each query head is squared and scaled", kHfLlama4);
  rb.add("attn.q_norm.rstd", {g.b, g.s_tp, g.a}, DType::kFp32, "rsqrt / mul backward",
         "the fp32 1/rms per token and head", kHfLlama4);
  rb.add("attn.k_norm.in", {g.b, g.s_tp, g.kv, g.d}, DType::kFp32, "pow / mul backward",
         "the fp32 copy of each key head is squared and scaled", kHfLlama4);
  rb.add("attn.k_norm.rstd", {g.b, g.s_tp, g.kv}, DType::kFp32, "rsqrt / mul backward",
         "the fp32 1/rms per token and head", kHfLlama4);
}
// MLA's latents (DeepseekV3Attention): q_a_layernorm over the query latent (when q_lora_rank > 0)
// and kv_a_layernorm over the key/value latent, each an RMSNorm keeping what a hidden-state norm
// keeps, one row per token; then q_b_proj and kv_b_proj keep their inputs, the normed latents.
// The shared RoPE key's rotation keeps only cos/sin (model-level). Measured: hf_layers.json,
// deepseek_v2 and deepseek_v3 rows.
void add_mla_latents(const LayerGeometry& g, RecordBuilder& rb, bool hf) {
  struct One {
    const char* in;
    const char* rstd;
    const char* normed;
    const char* up_in;
    Dim r;
    bool kv;  // the key/value latent, a slice of kv_a_proj_with_mqa's output
  };
  const DType p = g.act;
  const char* src = hf ? kHfDeepseek : kDeriv;
  for (const One& o : {One{"attn.q_latent_norm.in", "attn.q_latent_norm.rstd",
                           "attn.q_latent_norm.normed", "attn.q_up_in", g.rq, false},
                       One{"attn.kv_latent_norm.in", "attn.kv_latent_norm.rstd",
                           "attn.kv_latent_norm.normed", "attn.kv_up_in", g.rkv, true}}) {
    if (o.r.value == 0) continue;  // no query latent (DeepSeek-V2-Lite: q_proj)
    // The key/value latent is a slice of kv_a_proj_with_mqa's output (r_kv + d_rope wide). In
    // fp32 the norm's .to(float32) returns that slice itself, so the norm keeps the whole
    // storage; in bf16 it keeps an fp32 copy of the slice (measured:
    // tests/reference/families_cpu.json, deepseek_v2/v3 fp32 rows: 40,960 B, not 32,768, at s=64).
    if (hf && p == DType::kFp32 && o.kv)
      rb.add(o.in, {g.b, g.s_tp, Dim{"r_kv+d_rope", g.rkv.value + g.dr.value}}, DType::kFp32,
             "pow / mul backward (the fp32 latent is a view of the compressed KV)",
             "the latent's RMSNorm squares and scales its input, a slice of kv_a_proj's output",
             src);
    else
      rb.add(o.in, {g.b, g.s_tp, o.r}, hf ? DType::kFp32 : p,
             hf ? "pow / mul backward (fp32 upcast of the latent)" : "pow / mul backward",
             "the latent's RMSNorm squares and scales its input", src);
    rb.add(o.rstd, {g.b, g.s_tp}, hf ? DType::kFp32 : p, "rsqrt / mul backward", "1/rms per token",
           src);
    rb.add(o.normed, {g.b, g.s_tp, o.r}, p, "mul-by-weight backward",
           "weight gradient = sum(grad * normalized latent)", src);
    rb.add(o.up_in, {g.b, g.s_tp, o.r}, p, "up-projection backward",
           "weight gradient needs its input, the normed latent", src);
  }
}
}  // namespace

namespace {

// Which modules' attention a layer runs, and the source its eager records cite.
struct AttnFlavour {
  bool falcon, gpt_oss, upcast_softmax, fused_qkv;
  const char* src;
};

AttnFlavour attn_flavour(const ModelSpec& m, bool hf) {
  const bool falcon = hf && m.hf_modules == HfModules::kFalcon;
  const bool gpt_oss = hf && m.hf_modules == HfModules::kGptOss;
  // PhiMoE: Llama's attention (separate q/k/v, fp32 softmax) under LayerNorm norms.
  const bool phimoe = m.hf_modules == HfModules::kPhimoe;
  const bool llama_attn = m.norm == NormType::kRmsNorm || phimoe;
  // Llama: softmax(dtype=fp32); gpt-oss and Llama 4: softmax in the scores' dtype.
  const bool llama4 = hf && m.hf_modules == HfModules::kLlama4;
  const bool upcast_softmax = hf && llama_attn && !gpt_oss && !llama4;
  const char* attn_src = gpt_oss      ? kHfGptOss
                         : falcon     ? kHfFalcon
                         : !hf        ? kDeriv
                         : phimoe     ? kHfPhimoe
                         : llama4     ? kHfLlama4
                         : llama_attn ? kHfLlama
                                      : kHfGpt2;
  // GPT-2 blocks (LayerNorm) fuse Q, K and V into one projection whose q/k/v are views; Llama
  // blocks (RMSNorm) do not fuse. Falcon fuses but gathers K and V by index lists (copies).
  const bool fused_qkv = !llama_attn && !falcon;
  return AttnFlavour{falcon, gpt_oss, upcast_softmax, fused_qkv, attn_src};
}

// SDPA's flash or cuDNN kernel.
void attention_flash(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                     RecordBuilder& rb, bool hf) {
  const DType p = g.act;
  // SDPA's flash kernel keeps its inputs, output, logsumexp and RNG state. The pytorch block
  // expands K/V to all heads before SDPA (PyTorch < 2.5 needs it); transformers passes
  // enable_gqa=True, so hf keeps them at kv heads.
  // Falcon's new decoder architecture broadcasts K/V to every head and reshapes (a copy).
  //
  // cuDNN (sdpa_cudnn, measured: validation.md 4.4) keeps the same tensors but for three
  // things transformers' sdpa path decides. (1) A layer whose mask cannot be skipped (a window
  // or chunk the sequence reaches: masking_utils keeps is_causal only while s < window;
  // Falcon always passes its own) hands SDPA that mask, which the backend keeps converted to
  // the activation dtype, and repeat_kv's K and V at every head (enable_gqa needs no mask).
  // (2) The output follows Q's layout: where Q is contiguous as (b, a, s, d) (Phi-3's RoPE and
  // MLA build it with cat), o_proj's input is a copy beside the kept output. (3) MLA's V is a
  // view of kv_b_proj's output, whose whole (b, s, a, nope + v) storage stays.
  const bool masked =
      g.cudnn && hf &&
      ((k.window > 0 && g.s_tp.value >= k.window) || m.hf_modules == HfModules::kFalcon);
  const bool out_copy = g.cudnn && hf && (m.hf_rope_cat || k.is_mla());
  const char* src = g.cudnn ? kSdpaCudnn : kSdpaFlash;
  const Dim kvh = hf && !m.hf_kv_broadcast && !masked ? g.kv : g.a;
  if (masked)
    core(rb.add("attn.mask", {g.b, Dim{"1", 1}, g.s_tp, g.s_keys}, p, "cuDNN attention backward",
                "the layer's window or chunk mask, as SDPA keeps it", kSdpaCudnn));
  rb.add("attn.q", {g.b, g.a, g.s_tp, g.d}, p, "flash attention backward",
         "recomputes QK^T tile by tile", src);
  rb.add("attn.k", {g.b, kvh, g.s_tp, g.d}, p, "flash attention backward",
         "recomputes QK^T tile by tile", src);
  if (g.cudnn && hf && k.is_mla())
    rb.add("attn.v", {g.b, g.s_tp, g.a, Dim{"d_nope+d_v", g.d.value - g.dr.value + g.dv.value}}, p,
           "cuDNN attention backward",
           "dP = dO V^T; V is a view of kv_b_proj's output, whose storage stays", kSdpaCudnn);
  else
    rb.add("attn.v", {g.b, kvh, g.s_tp, g.dv}, p, "flash attention backward", "dP = dO V^T", src);
  if (g.cudnn) {
    rb.add("attn.lse", {g.b, g.a, g.s_tp, Dim{"1", 1}}, DType::kFp32, "cuDNN attention backward",
           "the fp32 softmax statistics (flash's lse bytes)", kSdpaCudnn);
    rb.add("attn.rng_state", {Dim{"2", 2}}, DType::kInt64, "cuDNN attention backward",
           "philox seed and offset, two 0-dim int64 tensors", kSdpaCudnn);
  } else {
    rb.add("attn.lse", {g.b, g.a, g.s_tp}, DType::kFp32, "flash attention backward",
           "rebuilds P = exp(S - lse) without storing it", kSdpaFlash);
    rb.add("attn.rng_state", {Dim{"3", 3}}, DType::kInt64, "flash attention backward",
           "philox seed/offset (16 B) and an unused slot (8 B) replay the dropout pattern",
           kSdpaFlash);
  }
  if (out_copy)
    rb.add("attn.out", {g.b, g.a, g.s_tp, g.dv}, p, "cuDNN attention backward",
           "the output O in Q's (b, a, s, d) layout", kSdpaCudnn);
  rb.add("attn.proj_in", {g.b, g.s_tp, g.a, g.dv}, p, "output projection and flash backward",
         out_copy ? "o_proj's input: the reshape of O copies it (O is not in (b, s, a, d))"
                  : "o_proj's input is the attention output O (a view, one storage)",
         src);
}

// SDPA's math backend.
void attention_math(const LayerGeometry& g, RecordBuilder& rb, bool fused_qkv) {
  const DType p = g.act;
  // _scaled_dot_product_attention_math upcasts q/k/v to fp32 below fp32 (PyTorch >= 2.5) and
  // keeps q*sqrt(scale), k^T*sqrt(scale), the probabilities and v in that type.
  const DType c = dtype_bytes(p) < 4 ? DType::kFp32 : p;
  rb.add("attn.q", {g.b, g.a, g.s_tp, g.d}, c, "bmm(Q, K^T) backward",
         "q * sqrt(scale), in the math dtype", kSdpaMath);
  rb.add("attn.k", {g.b, g.a, g.s_tp, g.d}, c, "bmm(Q, K^T) backward",
         "k^T * sqrt(scale), expanded to all heads", kSdpaMath);
  core(rb.add("attn.softmax_out", {g.b, g.a, g.s_tp, g.s_keys}, c, "softmax backward",
              "dsoftmax needs the output", kSdpaMath));
  if (g.attn_dropout) {
    core(rb.add("attn.dropout_mask", {g.b, g.a, g.s_tp, g.s_keys}, DType::kBool,
                "native_dropout backward", "1-byte mask on CUDA", kSdpaMath));
    core(rb.add("attn.dropout_out", {g.b, g.a, g.s_tp, g.s_keys}, c, "bmm(P, V) backward",
                "gradient w.r.t. V needs the dropped-out probabilities", kSdpaMath));
  }
  rb.add("attn.v", {g.b, g.a, g.s_tp, g.dv}, c, "bmm(P, V) backward", "gradient w.r.t. P needs V",
         kSdpaMath);
  if (fused_qkv && g.b.value == 1 && c == p)
    // With b = 1 and no upcast, matmul's reshape of v is a view, so bmm keeps the whole fused
    // QKV output alive: its q and k thirds count too.
    rb.add("attn.qkv_out_alias", {g.b, g.s_tp, Dim{"2", 2}, g.a, g.d}, p,
           "bmm(P, V) backward (storage of v)", "v is a view into the fused (b, s, 3h) QKV output",
           kSdpaMath);
  rb.add("attn.proj_in", {g.b, g.s_tp, g.a, g.dv}, p, "output projection backward",
         "transpose(1,2).contiguous() makes a new tensor the linear keeps", kDeriv);
}

// Eager attention: the modules' own matmuls and softmax.
void attention_eager(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                     RecordBuilder& rb, bool hf, const AttnFlavour& f) {
  const DType p = g.act;
  const bool gpt_oss = f.gpt_oss, upcast_softmax = f.upcast_softmax, fused_qkv = f.fused_qkv;
  const char* attn_src = f.src;
  // matmul on transposed heads reshapes through a copy, so bmm keeps contiguous copies of Q and
  // K; GQA's repeat_kv/expand makes those copies at all a heads.
  rb.add("attn.q", {g.b, g.a, g.s_tp, g.d}, p, "bmm(Q, K^T) backward", "gradient w.r.t. K needs Q",
         attn_src);
  rb.add("attn.k", {g.b, g.a, g.s_tp, g.d}, p, "bmm(Q, K^T) backward",
         "gradient w.r.t. Q needs K (expanded to every query head)", attn_src);
  if (hf && fused_qkv)
    rb.add("attn.scale_divisor", {}, p, "div backward",
           "GPT2Attention divides by torch.full([], sqrt(d)), a 0-dim device tensor", kHfGpt2);
  if (m.attn_softcap > 0)
    // Gemma 2: scores = tanh(scores / cap) * cap; tanh's backward needs its output.
    core(rb.add("attn.softcap_tanh", {g.b, g.a, g.s_tp, g.s_keys}, p, "tanh backward",
                "1 - tanh^2 needs the soft-capped scores' tanh", kHfGemma));
  if (k.attn_sinks) {
    // Sinks (gpt-oss): the scores get one more column per row, each head's sink logit; the
    // softmax runs over s + 1 columns and its output is kept whole (P V reads a view of the
    // first s). transformers also subtracts the row max first, whose backward keeps the
    // argmax of each row.
    const Dim keys_sink{"(s+1)", g.s_keys.value + 1};
    if (gpt_oss)
      core(rb.add("attn.row_max_idx", {g.b, g.a, g.s_tp, Dim{"1", 1}}, DType::kInt64,
                  "max(dim=-1) backward", "the argmax of each row the max is taken from",
                  kHfGptOss));
    core(rb.add("attn.softmax_out", {g.b, g.a, g.s_tp, keys_sink}, p, "softmax backward",
                "dsoftmax needs the output, the sink's column included",
                gpt_oss ? kHfGptOss : kSinks));
  } else if (upcast_softmax) {
    core(rb.add("attn.softmax_out", {g.b, g.a, g.s_tp, g.s_keys}, DType::kFp32, "softmax backward",
                "softmax(..., dtype=float32) keeps its fp32 output", kHfLlama));
  } else {
    core(rb.add("attn.softmax_out", {g.b, g.a, g.s_tp, g.s_keys}, p, "softmax backward",
                "dsoftmax needs the output", attn_src));
  }
  if (g.attn_dropout) {
    core(rb.add("attn.dropout_mask", {g.b, g.a, g.s_tp, g.s_keys}, DType::kBool,
                "native_dropout backward", "1-byte mask on CUDA", attn_src));
    core(rb.add("attn.dropout_out", {g.b, g.a, g.s_tp, g.s_keys}, p, "bmm(P, V) backward",
                "gradient w.r.t. V needs the dropped-out probabilities", attn_src));
  } else if (upcast_softmax && p != DType::kFp32) {
    core(rb.add("attn.probs", {g.b, g.a, g.s_tp, g.s_keys}, p, "bmm(P, V) backward",
                "the probabilities cast back to the activation dtype", kHfLlama));
  }
  rb.add("attn.v", {g.b, g.a, g.s_tp, g.dv}, p, "bmm(P, V) backward",
         "gradient w.r.t. P needs V (expanded to every query head)", attn_src);
  rb.add("attn.proj_in", {g.b, g.s_tp, g.a, g.dv}, p, "output projection backward",
         "transpose(1,2).contiguous() makes a new tensor the linear keeps", attn_src);
}

// The attention half of a layer: ln1, the projections and the attention core.
void add_attention(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                   RecordBuilder& rb, bool hf) {
  const DType p = g.act;
  const AttnFlavour f = attn_flavour(m, hf);
  const bool falcon = f.falcon;
  add_norm(kLn1, m, g, rb, hf);
  rb.add("attn.qkv_in", {g.b, g.s_rep, g.h}, p, "q/k/v linear backward",
         "weight gradient = input^T x output gradient (one storage for all three)", kDeriv);
  if (falcon && m.hf_qkv_index_lists > 0)
    // FalconAttention._split_heads: key = qkv[..., [-2], :], value = qkv[..., [-1], :]; each
    // index list is an int64[1] tensor the index backward keeps (8 B each).
    rb.add("attn.qkv_index", {Dim{"lists", m.hf_qkv_index_lists}}, DType::kInt64,
           "index backward (scatter of K/V's gradient into the fused output)",
           "the index lists [-2] and [-1] that gather K and V", kHfFalcon);
  if (k.qk_norm) add_head_norms(m, g, rb, hf);
  if (k.qk_l2_norm) add_l2_head_norms(g, rb);
  if (k.attn_temperature)
    // Llama 4's NoPE layers scale each query by a per-position fp32 factor
    // (log1p(floor((pos + 1) / floor_scale)) * attn_scale + 1), which the mul keeps.
    // (one value per position, expanded over the batch: s x 4 B of storage).
    rb.add("attn.temperature", {g.s_tp}, DType::kFp32, "mul backward",
           "the query's per-position temperature", kHfLlama4);
  if (k.is_mla()) add_mla_latents(g, rb, hf);
  if (g.flash)
    attention_flash(m, k, g, rb, hf);
  else if (g.sdpa_math)
    attention_math(g, rb, f.fused_qkv);
  else
    attention_eager(m, k, g, rb, hf, f);
  // A parallel block drops out the summed branches once (Falcon's dropout_add): the MLP's mask.
  if (g.hidden_dropout && m.block == BlockLayout::kSequential)
    rb.add("attn.proj_dropout_mask", {g.b, g.s_rep, g.h}, DType::kBool, "native_dropout backward",
           "1-byte mask on CUDA", kDeriv);
  if (m.sandwich_norm) add_norm(kAttnPost, m, g, rb, hf);
}

// The FFN half: ln2 and the MLP or the experts.
void add_ffn(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g, RecordBuilder& rb,
             bool hf) {
  const DType p = g.act;
  const bool falcon = hf && m.hf_modules == HfModules::kFalcon;
  // The parallel layout with one norm feeds its output to the MLP too: no second norm, and the
  // MLP's input is attn.qkv_in's storage.
  if (m.block != BlockLayout::kParallel)
    add_norm(kLn2, m, g, rb, hf, m.block == BlockLayout::kParallelTwoNorms);
  if (k.is_moe()) {
    if (hf && k.moe.hf_block != HfMoe::kGeneric)
      build_hf_moe(m, k, g, rb);
    else
      build_moe_mlp(m, k, g, rb);
  } else {
    if (m.block != BlockLayout::kParallel)
      rb.add("mlp.fc1_in", {g.b, g.s_rep, g.h}, p, "first linear(s) backward",
             "weight gradient needs the input (gate and up share it)", kDeriv);
    if (k.ffn == FfnType::kGelu && hf && !falcon && !m.hf_gelu_native) {
      // NewGELUActivation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) in Python ops.
      rb.add("mlp.act_in", {g.b, g.s_tp, g.f}, p, "pow(x, 3) backward", "3x^2 needs x", kHfGpt2);
      rb.add("mlp.gelu_tanh", {g.b, g.s_tp, g.f}, p, "tanh backward", "1 - tanh^2 needs the output",
             kHfGpt2);
      rb.add("mlp.gelu_half_x", {g.b, g.s_tp, g.f}, p, "mul backward",
             "(0.5x) * (1 + t) keeps both factors", kHfGpt2);
      rb.add("mlp.gelu_one_plus_tanh", {g.b, g.s_tp, g.f}, p, "mul backward",
             "(0.5x) * (1 + t) keeps both factors", kHfGpt2);
    } else if (k.ffn == FfnType::kGelu) {
      // F.gelu (the pytorch block's nn.GELU, Falcon's ACT2FN["gelu"], GPT-2's "gelu" and
      // "gelu_pytorch_tanh"): one saved input.
      rb.add("mlp.act_in", {g.b, g.s_tp, g.f}, p, "gelu backward", "gelu_backward(grad, self)",
             falcon ? kHfFalcon : kDeriv);
    } else if (k.ffn == FfnType::kRelu2) {
      // ReLUSquaredActivation: square(relu(x)); relu's backward reads its output and square's its
      // input, the same tensor.
      rb.add("mlp.relu_out", {g.b, g.s_tp, g.f}, p, "relu / square backward",
             "relu keeps its output, which square reads as its input", kRelu2);
    } else {
      rb.add("mlp.gate", {g.b, g.s_tp, g.f}, p, "silu/gelu backward",
             "the activation's derivative needs its input", kDeriv);
      rb.add("mlp.act_out", {g.b, g.s_tp, g.f}, p, "mul backward",
             "act(gate) * up keeps both factors", kDeriv);
      rb.add("mlp.up", {g.b, g.s_tp, g.f}, p, "mul backward", "act(gate) * up keeps both factors",
             kDeriv);
    }
    rb.add("mlp.fc2_in", {g.b, g.s_tp, g.f}, p, "down/second linear backward",
           "weight gradient needs the input", kDeriv);
  }
  if (m.sandwich_norm) add_norm(kMlpPost, m, g, rb, hf);
  if (g.hidden_dropout)
    rb.add("mlp.dropout_mask", {g.b, g.s_rep, g.h}, DType::kBool, "native_dropout backward",
           "1-byte mask on CUDA", kDeriv);
}

}  // namespace

void build_pytorch(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                   RecordBuilder& rb, bool hf) {
  // Compiled, the Llama-family block saves what compiled.cpp lists; GPT-2's block saves what its
  // eager forward keeps, tensor for tensor (measured: tests/reference/
  // compile_families_saved.json, docs/validation.md 6.2), so it takes the eager records.
  // transformers' Llama, Qwen2/3 and Phi-3 layers save the same set compiled (Phi-3's fused
  // gate_up output one storage of the gate's and up's bytes; compile_hf_saved.json); validate.cpp
  // admits the hf profile for those alone.
  if (g.compiled && is_gated(k.ffn)) return build_compiled(m, k, g, rb);
  if (k.has_attention()) {
    add_attention(m, k, g, rb, hf);
  } else if (k.is_mamba()) {
    add_norm(kLn1, m, g, rb, hf);
    // transformers picks the Mamba kernels by what is installed, not by the attention choice:
    // flash stands for mamba_ssm's fused kernels, sdpa_cudnn for the measured PyTorch path.
    if (g.flash && !g.cudnn)
      add_mamba_fused(g, rb);
    else
      add_mamba_torch(k, g, rb);
    // Residual dropout after the mixer (config.hidden_dropout; Megatron-LM MambaLayer's
    // bias-dropout-add): the 1-byte mask, as after attention.
    if (g.hidden_dropout)
      rb.add("mamba.dropout_mask", {g.b, g.s_rep, g.h}, DType::kBool, "native_dropout backward",
             "1-byte mask on CUDA", kDeriv);
  }
  if (k.has_ffn) add_ffn(m, k, g, rb, hf);
}

}  // namespace actmem::detail

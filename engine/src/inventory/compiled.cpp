// The records of a compiled block (config.compile, the pytorch profile): what torch.compile's
// partitioner saves for backward in torchtitan's Llama block at activation_memory_budget 1,
// measured with inductor's partitioner on torch 2.6 over five shapes (tests/reference/
// compile_saved.json, docs/validation.md 6.2), the same block under torchtitan's TP plan
// (compile_tp_saved.json, tp 2 and 4), and the blocks of the families measured beside it
// (compile_families_saved.json: Qwen2's q/k/v biases, Qwen3's q/k norms; compile_gemma_saved.json).
// validate.cpp admits only the blocks measured (flash attention, cp 1, no dropout).
#include "inventory/builder.hpp"

namespace actmem::detail {

namespace {

constexpr const char* kCompiled =
    "measured: inductor's partitioner (min_cut_rematerialization_partition, torch 2.6) on "
    "torchtitan 9dec370's Llama block, tests/reference/compile_saved.json, and on transformers' "
    "Llama, Qwen3 and Phi-3 layers, compile_hf_saved.json (docs/validation.md 6.2)";
constexpr const char* kCompiledFamilies =
    "measured: inductor's partitioner (torch 2.6) on the same block with Qwen3's q/k norms, "
    "tests/reference/compile_families_saved.json (docs/validation.md 6.2)";
constexpr const char* kCompiledGemma =
    "measured: inductor's partitioner (torch 2.6) on Gemma 2's and Gemma 3's decoder layer "
    "(sandwich norms), tests/reference/compile_gemma_saved.json (docs/validation.md 6.2)";
constexpr const char* kCompiledRng =
    "the flash kernel's philox seed and offset, as eager's (docs/validation.md 4.2); the CPU "
    "measurement has no CUDA RNG state";

}  // namespace

//   x [b, s, h] -> rmsnorm -> y -> wq, wk, wv -> RoPE -> q, k, v (repeat_kv) -> flash -> o -> wo
//   h = x + wo(o) -> rmsnorm -> z -> w1, w3 -> w2(silu(gate) * up); out = h + w2(...)
//   Qwen2: q, k, v with biases (the same records); Qwen3: q and k normalized per head before RoPE
//   (their inputs and fp32 rstd besides). Gemma 2 and 3 (sandwich norms): attention's output and
//   the MLP's each normalized before its residual add; the partitioner keeps those norms' inputs
//   and fp32 rstd and recomputes the residual h = x + norm(wo(o)) from them (no ln2.in).
void build_compiled(const ModelSpec& m, const LayerKind& k, const LayerGeometry& g,
                    RecordBuilder& rb) {
  const DType p = g.act;
  const Dim tokens = g.s_rep;  // the norms' tokens: the rank's sequence shard under TP (SP)
  rb.add("ln1.in", {g.b, tokens, g.h}, p, "compiled backward (attention norm)",
         "the block's input: the norm's backward and the residual read it", kCompiled);
  rb.add("ln1.rstd", {g.b, tokens}, DType::kFp32, "compiled backward (attention norm)",
         "rsqrt(mean(x^2) + eps) in fp32, the norm's backward reads it", kCompiled);
  // Under tensor parallelism the q/k/v and w1/w3 inputs are the sequence-parallel all-gather's
  // outputs, kept whole (measured: compile_tp_saved.json); the norms keep the rank's shard.
  rb.add("attn.qkv_in", {g.b, g.s_tp, g.h}, p, "q/k/v linear backward",
         "weight gradient needs the input (gathered over the sequence under TP)", kCompiled);
  if (k.qk_norm) {
    rb.add("attn.q_norm.in", {g.b, g.s_tp, g.a, g.d}, p, "compiled backward (q norm)",
           "q before its per-head RMSNorm (wq's output)", kCompiledFamilies);
    rb.add("attn.q_norm.rstd", {g.b, g.s_tp, g.a}, DType::kFp32, "compiled backward (q norm)",
           "each head's fp32 1/rms", kCompiledFamilies);
    rb.add("attn.k_norm.in", {g.b, g.s_tp, g.kv, g.d}, p, "compiled backward (k norm)",
           "k before its per-head RMSNorm (wk's output)", kCompiledFamilies);
    rb.add("attn.k_norm.rstd", {g.b, g.s_tp, g.kv}, DType::kFp32, "compiled backward (k norm)",
           "each head's fp32 1/rms", kCompiledFamilies);
  }
  rb.add("attn.q", {g.b, g.a, g.s_tp, g.d}, p, "flash attention backward",
         "q after RoPE, as the kernel received it", kCompiled);
  // repeat_kv copies k and v to every query head, except a single KV head, which it expands as
  // a stride-0 view of that head (measured: kv = 1 keeps one head's bytes).
  const Dim heads = g.kv.value == 1 && g.a.value > 1 ? g.kv : g.a;
  rb.add("attn.k", {g.b, heads, g.s_tp, g.d}, p, "flash attention backward",
         "k after RoPE and repeat_kv, as the kernel received it", kCompiled);
  rb.add("attn.v", {g.b, heads, g.s_tp, g.dv}, p, "flash attention backward",
         "v after repeat_kv, as the kernel received it", kCompiled);
  rb.add("attn.lse", {g.b, g.a, g.s_tp}, DType::kFp32, "flash attention backward",
         "rebuilds P = exp(S - lse) without storing it", kCompiled);
  rb.add("attn.rng_state", {Dim{"3", 3}}, DType::kInt64, "flash attention backward",
         "philox seed/offset (16 B) and an unused slot (8 B)", kCompiledRng);
  rb.add("attn.proj_in", {g.b, g.s_tp, g.a, g.dv}, p, "output projection and flash backward",
         "the attention output: wo's weight gradient and the kernel's backward read it", kCompiled);
  if (m.sandwich_norm) {
    rb.add("attn.post_norm.in", {g.b, tokens, g.h}, p, "compiled backward (post-attention norm)",
           "wo's output, the post-attention norm's input", kCompiledGemma);
    rb.add("attn.post_norm.rstd", {g.b, tokens}, DType::kFp32,
           "compiled backward (post-attention norm)", "its fp32 1/rms per row", kCompiledGemma);
  } else {
    rb.add("ln2.in", {g.b, tokens, g.h}, p, "compiled backward (FFN norm)",
           "the residual after attention, the FFN norm's input", kCompiled);
  }
  rb.add("ln2.rstd", {g.b, tokens}, DType::kFp32, "compiled backward (FFN norm)",
         "rsqrt(mean(h^2) + eps) in fp32", kCompiled);
  rb.add("mlp.fc1_in", {g.b, g.s_tp, g.h}, p, "w1/w3 linear backward",
         "weight gradient needs the input (gathered over the sequence under TP)", kCompiled);
  rb.add("mlp.gate", {g.b, g.s_tp, g.f}, p,
         k.ffn == FfnType::kGeglu ? "gelu backward" : "silu backward", "w1's output", kCompiled);
  rb.add("mlp.up", {g.b, g.s_tp, g.f}, p, "mul backward", "w3's output", kCompiled);
  rb.add("mlp.fc2_in", {g.b, g.s_tp, g.f}, p, "w2 linear backward",
         "act(gate) * up: w2's weight gradient needs its input", kCompiled);
  if (m.sandwich_norm) {
    rb.add("mlp.post_norm.in", {g.b, tokens, g.h}, p, "compiled backward (post-MLP norm)",
           "the down projection's output, the post-MLP norm's input", kCompiledGemma);
    rb.add("mlp.post_norm.rstd", {g.b, tokens}, DType::kFp32, "compiled backward (post-MLP norm)",
           "its fp32 1/rms per row", kCompiledGemma);
  }
}

}  // namespace actmem::detail

// vLLM's side of an RL step on shared GPUs (rl_parts.hpp): its budget, weights, profiled
// activation peak and KV cache, as vLLM's V1 worker sizes them, for verl's and TRL's rollouts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "actmem/setup/setup.hpp"
#include "plan/rl_parts.hpp"

namespace actmem::detail {

// An MoE layer's routed experts are one parameter per projection in transformers 5's grouped
// experts (gate and up fused: E x 2f x h), the hf profile's modules.
std::uint64_t largest_param(const ModelSpec& m) {
  std::uint64_t n = m.vocab * m.hidden;
  for (const LayerKind& k : m.kinds) {
    n = std::max({n, k.ffn_hidden * m.hidden, k.heads * k.head_dim * m.hidden});
    if (k.is_moe()) n = std::max(n, k.moe.experts * 2 * k.moe.expert_ffn * m.hidden);
  }
  return n;
}

Bytes no_grad_forward(const ModelSpec& m, const Setup& s, std::uint64_t tokens, Bytes head_bytes,
                      Checked& ck) {
  const Bytes layer =
      ck.mul(ck.mul(tokens, widest_layer_width(m, 1), "rl"), dtype_bytes(s.config.act_dtype), "rl");
  return ck.add(s.zero3_gather, std::max(layer, head_bytes), "rl");
}

std::optional<Error> check_full_attention(const ModelSpec& m) {
  for (const LayerKind& k : m.kinds) {
    if (!k.has_attention() || k.window > 0)
      return rl_error("model", "layer kind '" + k.name +
                                   "' (sliding-window or state-space layers): this rollout's "
                                   "cache of such layers (SGLang's, transformers' generate) is "
                                   "not modelled; full-attention models only (dense or MoE), "
                                   "or a vLLM rollout for sliding windows");
  }
  return std::nullopt;
}

bool any_window(const ModelSpec& m) {
  for (const LayerKind& k : m.kinds)
    if (k.window > 0) return true;
  return false;
}

// vLLM's V1 KV cache manager takes sliding-window layers beside full-attention ones (its hybrid
// manager, kv_cache_utils.py _get_kv_cache_groups_uniform_page_size) when every layer's page is
// the same; Llama 4's chunked local attention and state-space layers are not modelled.
std::optional<Error> check_vllm_attention(const ModelSpec& m, std::uint64_t tp, Checked& ck) {
  const bool windows = any_window(m);
  Bytes cell = 0;
  for (const LayerKind& k : m.kinds) {
    if (!k.has_attention())
      return rl_error("model", "layer kind '" + k.name +
                                   "' (state-space layers): vLLM's cache of such layers is not "
                                   "modelled; attention models only (dense or MoE)");
    if (k.window > 0 && m.hf_modules == HfModules::kLlama4)
      return rl_error("model", "layer kind '" + k.name +
                                   "' (Llama 4's chunked local attention): vLLM's cache of such "
                                   "layers is not modelled");
    const std::uint64_t kv = std::max<std::uint64_t>(1, k.kv_heads / tp);
    const Bytes c = kv_cache_width(k, k.is_mla() ? 1 : kv, ck);
    if (cell != 0 && c != cell && windows)
      return rl_error("model",
                      "sliding-window and full layers with different KV widths: vLLM "
                      "unifies their pages by block size, which is not modelled");
    cell = c;
  }
  return std::nullopt;
}

std::optional<Error> check_rollout(const TrainConfig& c, const RlRollout& r) {
  if (!(r.gpu_memory_utilization > 0 && r.gpu_memory_utilization <= 1))
    return rl_error("rl.rollout.gpu_memory_utilization",
                    "must be in (0, 1] (vLLM's fraction of the GPU's total)");
  if (r.tp == 0 || c.par.dp % r.tp != 0)
    return rl_error("rl.rollout.tp", std::to_string(r.tp) + " does not divide the " +
                                         std::to_string(c.par.dp) +
                                         " GPUs (config.dp) into rollout replicas");
  return std::nullopt;
}

std::optional<Error> check_vllm(const TrainConfig& c, const RlRollout& r,
                                std::uint64_t max_model_len) {
  if (auto err = check_rollout(c, r)) return err;
  static const std::uint64_t kBlocks[] = {8, 16, 32, 64, 128};
  if (std::find(std::begin(kBlocks), std::end(kBlocks), r.block_size) == std::end(kBlocks))
    return rl_error("rl.rollout.block_size",
                    std::to_string(r.block_size) + " tokens; allowed on CUDA: 8, 16, 32, 64, 128");
  if (max_model_len < c.seq)
    return rl_error("rl.rollout.max_model_len",
                    std::to_string(max_model_len) +
                        " is shorter than a prompt and its response (config.seq " +
                        std::to_string(c.seq) + "): vLLM would cut the response");
  return std::nullopt;
}

std::optional<Error> rollout_weights(const ModelSpec& m, std::uint64_t seq, std::uint64_t tp,
                                     const char* engine, Bytes* out, std::uint64_t ep_dp) {
  // The model under tensor parallelism tp in bf16 (the engine's own split: columns, rows and the
  // vocabulary divided, norms replicated, as vLLM's and SGLang's parallel layers do).
  TrainConfig v;
  v.profile = Profile::kHf;
  v.attention = Attention::kFlash;
  v.par.tp = tp;
  v.param_dtype = DType::kBf16;
  v.optimizer = Optimizer::kSgd;
  v.seq = seq;
  // Expert parallelism over ep_dp data-parallel ranks of tp each: the engine's routed experts
  // split ep_dp ways, each expert's columns tp ways, E x f / (tp x ep_dp) per GPU as vLLM's
  // whole experts over tp x ep_dp ranks hold; the dense weights split by tp alone.
  if (ep_dp > 1) v.par.dp = v.par.ep = ep_dp;
  auto vs = make_setup(m, v);
  if (!vs.ok())
    return rl_error(ep_dp > 1 ? "rl.rollout.expert_parallel_size" : "rl.rollout.tp",
                    std::string(engine) + "'s " +
                        (ep_dp > 1 ? "expert parallelism: " : "tensor parallelism: ") +
                        vs.error().message);
  *out = vs.value().ranks[0].stat.params_bytes;
  return std::nullopt;
}

Bytes kv_cell(const ModelSpec& m, std::uint64_t tp, Checked& ck) {
  // KV heads split by tp, at least one; MLA's latent is not split.
  Bytes cell = 0;
  for (std::uint64_t l = 0; l < m.layers; ++l) {
    const LayerKind& k = m.kind_of(l);
    const std::uint64_t kv = std::max<std::uint64_t>(1, k.kv_heads / tp);
    cell = ck.add(cell, ck.mul(kv_cache_width(k, k.is_mla() ? 1 : kv, ck), 2, "rl"), "rl");
  }
  return cell;
}

std::optional<Error> size_vllm(const ModelSpec& m, std::uint64_t seq, const RlRollout& r,
                               std::uint64_t max_num_seqs, std::uint64_t max_model_len, RlAnswer& a,
                               Checked& ck) {
  if (auto err = rollout_weights(m, seq, r.tp, "vLLM", &a.vllm_weights, r.dp)) return err;
  a.vllm_ep = r.ep;
  a.vllm_requested =
      static_cast<Bytes>(std::floor(r.gpu_memory_utilization * static_cast<double>(a.capacity)));
  a.max_model_len = max_model_len;
  a.max_num_seqs = max_num_seqs;
  // KV bytes per token on one GPU, and each layer's page of block_size tokens.
  a.kv_bytes_per_token = kv_cell(m, r.tp, ck);
  const std::uint64_t tokens =
      std::min(r.max_num_batched_tokens, ck.mul(max_num_seqs, a.max_model_len, "rl"));
  const std::uint64_t reqs = std::min(max_num_seqs, r.max_num_batched_tokens);
  if (r.profile_peak_bytes) {
    a.vllm_profile_peak = r.profile_peak_bytes;
  } else {
    // Estimate: the dummy prefill of max_num_batched_tokens tokens through the widest layer
    // (hidden, residual, qkv, gate/up/act), and the sampler's fp32 logits and probabilities for
    // min(max_num_seqs, max_num_batched_tokens) requests.
    a.vllm_profile_peak = ck.add(ck.mul(ck.mul(tokens, widest_layer_width(m, r.tp), "rl"), 2, "rl"),
                                 ck.mul(ck.mul(reqs, m.vocab, "rl"), 8, "rl"), "rl");
  }
  if (a.vllm_max_lora_rank) a.vllm_lora_slots = vllm_lora_slots(m, a.vllm_max_lora_rank, r.tp, ck);
  const Bytes non_kv =
      ck.add(ck.add(a.vllm_weights, a.vllm_lora_slots, "rl"), a.vllm_profile_peak, "rl");
  if (any_window(m)) {
    hybrid_kv(m, r, a.vllm_requested > non_kv ? a.vllm_requested - non_kv : 0, a, ck);
    return std::nullopt;
  }
  const Bytes page = ck.mul(r.block_size, a.kv_bytes_per_token, "rl");
  a.kv_holds_one = false;
  if (a.vllm_requested > non_kv && page > 0) {
    a.kv_blocks = (a.vllm_requested - non_kv) / page;
    a.kv_cache_bytes = ck.mul(a.kv_blocks, page, "rl");
    a.kv_tokens = ck.mul(a.kv_blocks, r.block_size, "rl");
    a.kv_concurrency = static_cast<double>(a.kv_tokens) / static_cast<double>(a.max_model_len);
    a.kv_holds_one = a.kv_tokens >= a.max_model_len;
  }
  return std::nullopt;
}

// The hybrid manager (vLLM kv_cache_utils.py at the V1 releases verl allows, read at 001cabc):
// layers grouped by attention type into groups of group_size layers (the fewest layers of a type,
// or the most where they are under 1.5 times the fewest), padded; group_size pools of num_blocks
// pages each (num_blocks = available // page // group_size); "GPU KV cache size" num_blocks //
// groups x block_size tokens; a request of max_model_len needs cdiv(max_model_len, block) blocks
// in each full group and cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), block) + 1
// in each sliding one (SlidingWindowSpec.max_memory_usage_bytes); vLLM starts when the
// available memory holds that request (check_enough_kv_cache_memory).
void hybrid_kv(const ModelSpec& m, const RlRollout& r, Bytes available, RlAnswer& a, Checked& ck) {
  std::map<std::uint64_t, std::uint64_t> layers;  // window (0: full) -> layers
  for (std::uint64_t l = 0; l < m.layers; ++l) ++layers[m.kind_of(l).window];
  std::uint64_t fewest = m.layers, most = 0;
  for (const auto& [w, n] : layers) fewest = std::min(fewest, n), most = std::max(most, n);
  const std::uint64_t group_size = 2 * most < 3 * fewest ? most : fewest;
  std::uint64_t groups = 0, per_request = 0;
  for (const auto& [w, n] : layers) {
    const std::uint64_t g = (n + group_size - 1) / group_size;
    const std::uint64_t tokens =
        w == 0 ? a.max_model_len
               : std::min(ck.add(w - 1, r.max_num_batched_tokens, "rl"), a.max_model_len);
    const std::uint64_t blocks = (tokens + r.block_size - 1) / r.block_size + (w == 0 ? 0 : 1);
    groups += g;
    per_request = ck.add(per_request, ck.mul(g, blocks, "rl"), "rl");
  }
  const Bytes page = ck.mul(r.block_size, a.kv_bytes_per_token / m.layers, "rl");
  a.kv_groups = groups;
  a.kv_group_size = group_size;
  a.kv_blocks = page > 0 ? available / page / group_size : 0;
  a.kv_cache_bytes = ck.mul(ck.mul(a.kv_blocks, page, "rl"), group_size, "rl");
  a.kv_tokens = ck.mul(a.kv_blocks / groups, r.block_size, "rl");
  a.kv_concurrency = static_cast<double>(a.kv_blocks) / static_cast<double>(per_request);
  a.kv_holds_one = available >= ck.mul(ck.mul(group_size, page, "rl"), per_request, "rl");
}

std::uint64_t vllm_max_lora_rank(std::uint64_t r) {
  for (std::uint64_t v : {1, 8, 16, 32, 64, 128, 256, 320, 512})
    if (r <= v) return v;
  return 0;
}

Bytes vllm_lora_slots(const ModelSpec& m, std::uint64_t r, std::uint64_t tp, Checked& ck) {
  Bytes elems = 0;
  for (std::uint64_t l = 0; l < m.layers; ++l) {
    const LayerKind& k = m.kind_of(l);
    const std::uint64_t h = m.hidden, d = k.head_dim, f = k.ffn_hidden;
    const std::uint64_t q = k.heads * d / tp, kv = std::max<std::uint64_t>(1, k.kv_heads / tp) * d;
    // qkv_proj: three slices of lora_a [r, h], lora_b [q, r], [kv, r], [kv, r]; o_proj:
    // [r, a d / tp] and [h, r]; gate_up_proj: two of [r, h] and [f / tp, r]; down_proj:
    // [r, f / tp] and [h, r].
    const std::uint64_t in = 3 * h + q + 2 * h + f / tp;
    const std::uint64_t out = (q + 2 * kv) + h + 2 * (f / tp) + h;
    elems = ck.add(elems, ck.mul(r, ck.add(in, out, "rl"), "rl"), "rl");
  }
  return ck.mul(elems, 2, "rl");
}

void vllm_notes(const RlRollout& r, RlAnswer& a) {
  if (a.free_at_start < a.vllm_requested)
    a.notes.push_back(
        "vLLM does not start: at its start the GPU has " + std::to_string(a.free_at_start) +
        " B free and gpu_memory_utilization asks for " + std::to_string(a.vllm_requested) +
        " B (vLLM raises 'Free memory on device ... is less than desired GPU memory "
        "utilization'); lower it or offload the actor's or reference's parameters");
  if (a.kv_blocks == 0)
    a.notes.push_back(
        "vLLM's budget leaves nothing for the KV cache after its weights and "
        "activations (vLLM raises 'No available memory for the cache blocks')");
  else if (a.kv_groups == 0 && a.kv_tokens < a.max_model_len)
    a.notes.push_back("the KV cache holds " + std::to_string(a.kv_tokens) +
                      " tokens, fewer than max_model_len " + std::to_string(a.max_model_len) +
                      " (vLLM raises at start)");
  else if (!a.kv_holds_one)
    a.notes.push_back("the KV cache's " + std::to_string(a.kv_blocks) +
                      " blocks per pool are too few for one request of max_model_len " +
                      std::to_string(a.max_model_len) + " (vLLM raises at start)");
  if (a.kv_groups > 0) {
    char conc[32];
    std::snprintf(conc, sizeof conc, "%.2f", a.kv_concurrency);
    a.notes.push_back("vLLM's hybrid KV cache manager: " + std::to_string(a.kv_groups) +
                      " groups of " + std::to_string(a.kv_group_size) +
                      " layers (sliding-window and full attention apart) share " +
                      std::to_string(a.kv_blocks) +
                      " blocks per pool; a sliding layer keeps only its window's blocks, so " +
                      conc + " requests of max_model_len fit at once");
  }
  if (!r.enforce_eager && r.cudagraph_bytes == 0)
    a.notes.push_back(
        "CUDA graphs are captured (enforce_eager false) but their memory is not included: vLLM "
        "logs it at start ('Graph capturing finished ... took X GiB'); give it as "
        "rl.rollout.cudagraph_bytes, or set enforce_eager");
  if (r.profile_peak_bytes == 0)
    a.notes.push_back(
        "vLLM's profiled activation peak is an estimate (the dummy prefill of "
        "max_num_batched_tokens through the widest layer and the sampler's fp32 "
        "logits); vLLM logs the true KV cache size ('Available KV cache memory')");
}

}  // namespace actmem::detail

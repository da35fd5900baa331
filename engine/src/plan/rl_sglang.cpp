// SGLang's side of verl's RL step (rl_parts.hpp): its static memory as SGLang 0.5.6 sizes it
// (the version verl b178a3c pins: setup.py l.54-58, sglang[srt,openai]==0.5.6), read at sglang
// commit 7ae368e ("bump SGLang version to 0.5.6"):
//   - python/sglang/srt/model_executor/model_runner.py l.702-707: the free memory at its start,
//     after its own CUDA context and NCCL, in GiB (utils/common.py get_available_gpu_memory:
//     empty_cache, mem_get_info()[0] / 2^30, the least over the tensor-parallel ranks); verl
//     starts it after the trainer's models (ray_trainer.py l.891, l.912);
//   - l.1367-1448 profile_max_num_token: rest = free after the weights - free at start x
//     (1 - mem_fraction_static), tokens = int(rest x 2^30 // cell_size), cell_size = kv heads per
//     rank x head dim x layers x 2 x 2 B (MLA: (latent + rope) x layers x 2 B);
//   - l.1729-1733: tokens rounded down to the page size (1: server_args.py l.1479-1481);
//     mem_cache/memory_pool.py l.601-622: each layer's K and V of (tokens + 1) rows; l.75-96 the
//     request map, max_running_requests x (context_len + 4) int32; mem_cache/allocator.py
//     l.134-135 its free list, one int64 per token.
// verl sets mem_fraction_static = rollout.gpu_memory_utilization and max_running_requests =
// max_num_seqs (async_sglang_server.py l.256-284).
#include <algorithm>
#include <cmath>

#include "plan/rl_parts.hpp"

namespace actmem::detail {

namespace {

// Python's float floor division (Objects/floatobject.c float_floor_div) for x, y > 0, as
// `rest_memory * (1 << 30) // cell_size` computes it.
double py_floor_div(double x, double y) {
  const double mod = std::fmod(x, y);
  const double div = (x - mod) / y;
  double floor_div = std::floor(div);
  if (div - floor_div > 0.5) floor_div += 1.0;
  return floor_div;
}

// server_args.py l.701-866: the chunked prefill SGLang picks by the GPU's memory in MiB (verl
// passes none).
std::uint64_t chunked_prefill(Bytes capacity) {
  const double mib = static_cast<double>(capacity) / (1 << 20);
  if (mib < 35 * 1024) return 2048;
  if (mib < 60 * 1024) return 4096;
  if (mib < 160 * 1024) return 8192;
  return 16384;
}

}  // namespace

std::optional<Error> size_sglang(const ModelSpec& m, std::uint64_t seq, const RlRollout& r,
                                 RlAnswer& a, Checked& ck) {
  if (auto err = rollout_weights(m, seq, r.tp, "SGLang", &a.vllm_weights)) return err;
  a.kv_bytes_per_token = kv_cell(m, r.tp, ck);
  a.max_num_seqs = r.max_num_seqs;
  // SGLang's context length is the model's (model_config.py l.286-318; verl passes none).
  a.max_model_len = m.max_positions ? m.max_positions : seq;
  a.context_known = m.max_positions != 0;
  const double gib = static_cast<double>(Bytes{1} << 30);
  const Bytes free = a.free_at_start;
  const double total = static_cast<double>(free) / gib;
  const double available =
      static_cast<double>(free > a.vllm_weights ? free - a.vllm_weights : 0) / gib;
  // Two statements, as Python evaluates them (no fused multiply-add).
  const double kept_free = total * (1.0 - r.gpu_memory_utilization);
  const double rest = available - kept_free;
  a.kv_tokens = 0;
  if (rest > 0 && a.kv_bytes_per_token > 0)
    a.kv_tokens = static_cast<std::uint64_t>(
        py_floor_div(rest * gib, static_cast<double>(a.kv_bytes_per_token)));
  a.kv_blocks = a.kv_tokens;  // pages of one token
  a.kv_cache_bytes =
      a.kv_tokens ? ck.mul(ck.add(a.kv_tokens, 1, "rl"), a.kv_bytes_per_token, "rl") : 0;
  a.kv_concurrency = static_cast<double>(a.kv_tokens) / static_cast<double>(seq);
  a.kv_concurrency_seq = seq;
  a.sglang_maps =
      ck.add(ck.mul(ck.mul(r.max_num_seqs, ck.add(a.max_model_len, 4, "rl"), "rl"), 4, "rl"),
             ck.mul(a.kv_tokens, 8, "rl"), "rl");
  // What SGLang holds awake: weights, the KV pool, the request map and the pool's free list.
  a.vllm_requested = ck.add(ck.add(a.vllm_weights, a.kv_cache_bytes, "rl"), a.sglang_maps, "rl");
  // Generation's activations, outside mem_fraction_static (an estimate, as vLLM's profile is):
  // a chunked prefill through the widest layer and the sampler's fp32 logits and probabilities.
  const std::uint64_t tokens = chunked_prefill(a.capacity);
  a.vllm_profile_peak =
      r.profile_peak_bytes
          ? r.profile_peak_bytes
          : ck.add(ck.mul(ck.mul(tokens, widest_layer_width(m, r.tp), "rl"), 2, "rl"),
                   ck.mul(ck.mul(std::min(r.max_num_seqs, tokens), m.vocab, "rl"), 8, "rl"), "rl");
  return std::nullopt;
}

void sglang_notes(const RlRollout& r, std::uint64_t seq, RlAnswer& a) {
  if (a.kv_tokens == 0)
    a.notes.push_back(
        "SGLang's rule leaves no KV cache: free memory at its start x mem_fraction_static (" +
        std::to_string(a.free_at_start) +
        " B free) does not pass its weights (SGLang raises 'Not enough memory. Please try to "
        "increase --mem-fraction-static'); raise gpu_memory_utilization or offload the actor's "
        "or reference's parameters");
  else if (a.kv_tokens < seq)
    a.notes.push_back("SGLang's KV pool holds " + std::to_string(a.kv_tokens) +
                      " tokens, fewer than a prompt and its response (" + std::to_string(seq) +
                      "): requests longer than the pool are rejected (tp_worker.py l.289-307 "
                      "max_req_len)");
  if (a.context_known && seq + 1 > a.max_model_len)
    a.notes.push_back("a prompt and its response (" + std::to_string(seq) +
                      " tokens) pass the model's context length less one (" +
                      std::to_string(a.max_model_len) + "): SGLang rejects such requests");
  if (!r.enforce_eager && r.cudagraph_bytes == 0)
    a.notes.push_back(
        "CUDA graphs are captured after SGLang sizes its pool, from what mem_fraction_static "
        "leaves, and verl does not release them at sleep (SGLANG_MEMORY_SAVER_CUDA_GRAPH unset); "
        "their memory is not included: SGLang logs it at start, give it as "
        "rl.rollout.cudagraph_bytes, or set enforce_eager");
  if (r.profile_peak_bytes == 0)
    a.notes.push_back(
        "SGLang's generation activations, outside mem_fraction_static, are an estimate (a "
        "chunked prefill of the GPU's default chunk through the widest layer and the sampler's "
        "fp32 logits)");
}

}  // namespace actmem::detail

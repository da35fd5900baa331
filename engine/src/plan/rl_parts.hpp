// Internal: what verl's and TRL's RL steps share (rl_step.cpp, rl_trl.cpp): vLLM's budget and KV
// cache (rl_vllm.cpp), the errors' shape, the largest parameter and the widest layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "actmem/core/checked.hpp"
#include "actmem/plan/rl.hpp"
#include "actmem/setup/setup.hpp"

namespace actmem::detail {

inline Error rl_error(const std::string& field, const std::string& message) {
  return make_error("invalid_value", field, field + ": " + message);
}

inline RlPhase rl_phase(const char* id, const char* label) {
  RlPhase p;
  p.id = id;
  p.label = label;
  return p;
}

// What every RL builder writes its phases with: a line added to a phase and its total, every
// sum checked (a byte count past 2^63 is an error, reported by overflow()).
class RlLines {
 public:
  std::optional<Error> overflow() const {
    if (ck_.overflowed()) return rl_error("rl", "a byte count passes 2^63");
    return std::nullopt;
  }

 protected:
  void line(RlPhase& p, const char* process, std::string what, Bytes b, const char* basis,
            const char* source) {
    p.lines.push_back({process, std::move(what), b, basis, source});
    p.total_bytes = ck_.add(p.total_bytes, b, "rl");
  }
  Checked ck_;
};

// A forward without grad (an estimate): the widest layer's working set over `tokens` in the
// activations' dtype, or the head's `head_bytes`, whichever is larger, beside ZeRO-3's gather of
// the largest layer.
Bytes no_grad_forward(const ModelSpec& m, const Setup& s, std::uint64_t tokens, Bytes head_bytes,
                      Checked& ck);

// A phase as fixes and rollout options name it: its id, after its pool's name when the processes
// have GPUs of their own ("actor/update").
inline std::string phase_name(const RlPhase& p) {
  return p.pool.empty() ? p.id : p.pool + "/" + p.id;
}

// The step's peak: the largest phase, and whether it fits the GPU.
inline void set_peak(RlAnswer& a) {
  for (std::size_t i = 0; i < a.phases.size(); ++i)
    if (a.phases[i].total_bytes > a.peak_bytes)
      a.peak_bytes = a.phases[i].total_bytes, a.peak_phase = i;
  a.fits = a.peak_bytes <= a.capacity;
}

// The largest parameter a weight sync gathers whole, in elements: the embedding or head (V x h),
// a projection (f x h, heads x d x h), an MoE layer's fused gate and up (E x 2f x h).
std::uint64_t largest_param(const ModelSpec& m);

// vLLM's side of the GPU (V1 gpu_worker.py determine_available_memory, kv_cache_utils.py): its
// requested budget from a.capacity, its weights at the rollout's tp (bf16), the profiled
// activation peak (given, or estimated from max_num_batched_tokens and max_num_seqs), and the KV
// cache in blocks for max_model_len; written into a (vllm_*, kv_*, max_model_len,
// max_num_seqs).
// With a.vllm_max_lora_rank set (verl's LoRA), vLLM's LoRA slots come out of the budget too.
std::optional<Error> size_vllm(const ModelSpec& m, std::uint64_t seq, const RlRollout& r,
                               std::uint64_t max_num_seqs, std::uint64_t max_model_len, RlAnswer& a,
                               Checked& ck);

// vLLM's max_lora_rank for adapters of rank r (verl b178a3c vllm_rollout/utils.py
// get_vllm_max_lora_rank: the smallest of vLLM's MaxLoRARanks 1, 8, 16, 32, 64, 128, 256, 320,
// 512 not below r); 0 past 512, which verl refuses.
std::uint64_t vllm_max_lora_rank(std::uint64_t r);

// vLLM's LoRA slots on one GPU for max_loras 1 of rank r at tensor parallelism tp (bf16): each
// decoder layer's qkv_proj, o_proj, gate_up_proj and down_proj, lora_a [r, in] and lora_b
// [out, r] per slice as vLLM's base_linear.py create_lora_weights makes them (column-parallel:
// lora_a whole, lora_b split by tp; row-parallel: lora_a split, lora_b whole).
Bytes vllm_lora_slots(const ModelSpec& m, std::uint64_t r, std::uint64_t tp, Checked& ck);

// The rollout's weights on one GPU under tensor parallelism tp, in bf16 (an error names
// rl.rollout.tp and the engine), and its KV cache's bytes per token, every layer's (kv heads split
// by tp, at least one; MLA's latent and RoPE widths whole).
std::optional<Error> rollout_weights(const ModelSpec& m, std::uint64_t seq, std::uint64_t tp,
                                     const char* engine, Bytes* out, std::uint64_t ep_dp = 1);
Bytes kv_cell(const ModelSpec& m, std::uint64_t tp, Checked& ck);

// What vLLM's KV cache is modelled for (rl_vllm.cpp): attention layers, sliding windows beside
// full attention with equal pages (its hybrid manager, hybrid_kv); no state-space layers or
// Llama 4's chunks. SGLang's and transformers' caches keep check_full_attention.
std::optional<Error> check_vllm_attention(const ModelSpec& m, std::uint64_t tp, Checked& ck);
bool any_window(const ModelSpec& m);
void hybrid_kv(const ModelSpec& m, const RlRollout& r, Bytes available, RlAnswer& a, Checked& ck);

// SGLang's side of verl's step (rl_sglang.cpp, SGLang 0.5.6): from a.free_at_start and
// a.capacity, its weights, KV pool in tokens (mem_fraction_static's rule), request map and free
// list (a.vllm_requested: all it holds awake), and generation's activations outside its budget
// (a.vllm_profile_peak, an estimate unless given); and the notes its figures call for.
std::optional<Error> size_sglang(const ModelSpec& m, std::uint64_t seq, const RlRollout& r,
                                 RlAnswer& a, Checked& ck);
void sglang_notes(const RlRollout& r, std::uint64_t seq, RlAnswer& a);

// Full-attention models only (dense or MoE): vLLM's cache of sliding-window and state-space layers
// is not modelled.
std::optional<Error> check_full_attention(const ModelSpec& m);

// What any rollout engine refuses (vLLM's and SGLang's): a utilization outside (0, 1], a tp that
// does not divide the GPUs.
std::optional<Error> check_rollout(const TrainConfig& c, const RlRollout& r);

// What vLLM refuses besides: a block size CUDA does not offer, a max_model_len shorter than a
// prompt and its response.
std::optional<Error> check_vllm(const TrainConfig& c, const RlRollout& r,
                                std::uint64_t max_model_len);

// The notes vLLM's figures call for: it does not start (free memory, no blocks, too few tokens for
// max_model_len), CUDA graphs not included, the profiled peak estimated.
void vllm_notes(const RlRollout& r, RlAnswer& a);

// TRL's GRPOTrainer step (rl_trl.cpp): its phases, the peak and the verdict, without the fixes
// and rollout options rl_step adds.
Result<RlAnswer> trl_phases(const ModelSpec& m, const TrainConfig& actor, const GpuSpec& gpu,
                            const RlSpec& rl);

// OpenRLHF's hybrid engine (rl_openrlhf.cpp): its phases, the peak and the verdict.
Result<RlAnswer> openrlhf_phases(const ModelSpec& m, const TrainConfig& actor, const GpuSpec& gpu,
                                 const RlSpec& rl);

}  // namespace actmem::detail

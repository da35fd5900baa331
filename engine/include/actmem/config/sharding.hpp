// The one place tensor, vocabulary and expert parallelism divide a dimension, and the per-element
// optimizer state widths: geometry (activations), parameter records and explanations all use these.
#pragma once

#include <cstdint>

#include "actmem/config/config.hpp"
#include "actmem/core/checked.hpp"

namespace actmem {

// Heads, FFN and expert widths split evenly over t tensor-parallel ranks (Shoeybi et al. 2019,
// Sec. 3: column-parallel QKV and first linear, row-parallel output; validate.cpp checks t
// divides them).
constexpr std::uint64_t tp_shard(std::uint64_t n, std::uint64_t t) {
  return t > 1 ? n / t : n;
}

// KV heads per rank: kv/t, or one replicated head when t is a multiple of kv (Megatron-LM GQA).
constexpr std::uint64_t tp_kv_heads(std::uint64_t kv, std::uint64_t t) {
  return t <= 1 ? kv : (kv % t == 0 ? kv / t : 1);
}

// Vocab-parallel embedding and head: each TP rank holds ceil(V/t) rows (Megatron-LM pads V).
constexpr std::uint64_t vocab_shard(std::uint64_t v, std::uint64_t t) {
  return t > 1 ? ceil_div(v, t) : v;
}

// The ranks ZeRO/FSDP shard over: dp, or dp × cp (config.shard_group), inside one of
// dp_replicate replicas (hybrid sharding; validate.cpp checks it divides dp). The one definition
// the static memory, the optimizer step's transient, the communication and their explanations use.
constexpr std::uint64_t shard_ranks(const Parallel& p) {
  const std::uint64_t dp = p.dp_replicate > 1 ? p.dp / p.dp_replicate : p.dp;
  return p.shard_group == ShardGroup::kDpCp ? dp * p.cp : dp;
}

// The dtype ZeRO-3 / FSDP gathers a layer's parameters in: FSDP2 (torchtitan) casts the sharded
// fp32 parameters to MixedPrecisionPolicy.param_dtype, the compute dtype, before its all-gather;
// ZeRO-3 elsewhere gathers the stored parameters.
// The multiple a sequence's tokens must be for the layout: context parallelism splits the
// sequence cp ways, sequence parallelism tp ways (validate.cpp refuses other lengths).
inline std::uint64_t seq_step(const Parallel& p) {
  return p.cp * (p.sp && p.tp > 1 ? p.tp : 1);
}

inline DType gather_dtype(const TrainConfig& c) {
  // FSDP's mixed precision gathers in the compute dtype (torchtitan's FSDP2 MixedPrecisionPolicy,
  // verl's FSDP MixedPrecision(param_dtype=bf16) over fp32 shards).
  return c.framework == Framework::kTorchtitan || c.framework == Framework::kVerl ? c.act_dtype
                                                                                  : c.param_dtype;
}

// FSDP keeps every layer of the stage gathered through the step (config.reshard_after_forward =
// false, or config.accumulate_unsharded): no per-layer gather transient, a static line instead.
inline bool gathers_resident(const TrainConfig& c) {
  return c.par.zero == 3 && (!c.reshard_after_forward || c.accumulate_unsharded);
}

// verl's actor under strategy fsdp2 (config.fsdp_version 2; verl b178a3c fsdp_utils.py
// apply_fsdp2): fully_shard over each decoder layer, the embedding as a group of its own when
// untied, then the root (the final norm and the head, and the embedding when tied), with
// MixedPrecisionPolicy(bf16, fp32) and every group resharded after forward. verl pins torch
// 2.9 (setup.py; vLLM <= 0.12), where an explicit reshard_after_forward=True reshards the root
// too (pytorch PR #154704): the root is gathered again for the head's backward, and no group
// stays gathered from forward to backward (setup.cpp set_verl_fsdp2).
inline bool verl_fsdp2(const TrainConfig& c) {
  return c.framework == Framework::kVerl && c.fsdp_version == 2 && c.par.zero == 3;
}

// FSDP2 (torchtitan's fully_shard over every block and the root; verl's strategy fsdp2): its
// all-gathers run on their own streams (device/stream.cpp).
inline bool fsdp2_gathers(const TrainConfig& c) {
  return (c.framework == Framework::kTorchtitan && c.par.zero == 3) || verl_fsdp2(c);
}

// FSDP2 with its layers resharded (not resident): each layer's forward and backward hold FSDP2's
// buffers (setup.cpp); torchtitan's root group and last block stay gathered (a static line).
inline bool fsdp2_buffers(const TrainConfig& c) {
  return fsdp2_gathers(c) && !gathers_resident(c);
}

// ... at one pipeline stage: FSDP2's tensors as it makes them, measured (docs/validation.md 4.6):
// the sharded gradients made per group in backward and freed by zero_grad, so absent in the
// forward and the loss of a step's one micro-batch; the groups kept gathered (the root, the
// last block) resharded at the end of backward, so absent in the optimizer step
// (step/static_at.cpp; the device replay, device/stream.cpp).
inline bool fsdp2_per_parameter(const TrainConfig& c) {
  return fsdp2_buffers(c) && c.par.pp == 1;
}

// verl's FSDP (FSDP1: verl b178a3c fsdp_workers.py l.527-539, FULL_SHARD with its decoder layers
// wrapped as units): the root unit, the parameters outside the layers (embedding, final norm,
// head) flattened into one FlatParameter, is never resharded after forward (torch 2.6
// fsdp/_runtime_utils.py _post_forward_reshard: free_unsharded_flat_param = not state._is_root
// and ...), so its unsharded copy in the compute dtype stays from the root's pre-forward to its
// post-backward at the end of each micro-batch's backward (setup.cpp set_fsdp1_root). verl's FSDP
// backend has no pipeline stages (pp 1).
inline bool fsdp1_root_held(const TrainConfig& c) {
  return c.framework == Framework::kVerl && c.fsdp_version != 2 && c.par.zero == 3 &&
         c.par.pp == 1 && !gathers_resident(c);
}

// ... and its units' sharded gradients made in backward: verl's actor calls zero_grad()
// (set_to_none) at each mini-batch's start (verl b178a3c dp_actor.py l.560), and each FSDP1 unit's
// _post_backward_hook makes its rank's fp32 shard on the post-backward stream (torch 2.6
// fsdp/_runtime_utils.py _reduce_grad: new_sharded_grad = torch.empty_like(chunks[0]); the first
// becomes the gradient, a later micro-batch's is added into it and goes). Under LoRA the base is
// frozen and the units keep their original parameters: not modelled, the line stays static.
inline bool fsdp1_grads_in_backward(const TrainConfig& c) {
  return fsdp1_root_held(c) && !c.lora.on();
}

// Either, at one micro-batch per step: no gradient exists before backward, and in backward those
// of the groups whose post-backward has run (Setup::grads_made_before; step/static_at.cpp).
inline bool grads_in_backward(const TrainConfig& c) {
  return (fsdp2_per_parameter(c) || fsdp1_grads_in_backward(c)) && default_micro_batches(c) == 1;
}

// Routed experts are split by EP inside the data-parallel group, so their ZeRO group is the
// expert-data-parallel group of dp/ep ranks.
constexpr std::uint64_t expert_dp(std::uint64_t dp, std::uint64_t ep) {
  return ep > 1 ? dp / ep : dp;
}

// Bytes of optimizer state per parameter element for the element-wise optimizers (AdamW: two
// moments, Loshchilov & Hutter 2019; SGD with momentum: one buffer; SGD: none), each of
// `state_bytes` (4 for fp32 states). False for the optimizers whose state depends on the tensor
// (8-bit Adam's blocks, Adafactor's factors).
constexpr bool optimizer_bytes_per_element(Optimizer o, std::uint64_t state_bytes,
                                           std::uint64_t* bytes) {
  switch (o) {
    case Optimizer::kAdamW:
      return *bytes = 2 * state_bytes, true;
    case Optimizer::kSgdMomentum:
      return *bytes = state_bytes, true;
    case Optimizer::kSgd:
      return *bytes = 0, true;
    default:
      return false;
  }
}

}  // namespace actmem

// The optimizer step's transient on each pipeline rank (docs/formulas.md, "The optimizer step"):
// what torch.optim's AdamW allocates by implementation, and what Megatron-LM's and DeepSpeed's
// optimizer wrappers add, beside the parameters, gradients and states that persist.
#include "setup/optimizer_step.hpp"

#include <algorithm>
#include <functional>

#include "actmem/config/framework.hpp"
#include "actmem/config/sharding.hpp"

namespace actmem::detail {

namespace {

// DeepSpeed v0.16.0 runtime/zero/config.py l.166: sub_group_size = 1e9 elements (ZeRO-3 steps
// its partition one sub-group at a time).
constexpr std::uint64_t kDeepspeedSubGroup = 1000000000;

// Elements of the largest trainable tensor rank `rk` steps (ZeRO >= 1: this rank's partition).
std::uint64_t largest_tensor(const Setup& e, const RankSetup& rk,
                             const std::vector<ParamRecord>& embed,
                             const std::vector<ParamRecord>& head) {
  std::uint64_t largest = 0;
  for (std::size_t ci = 0; ci < rk.chunk_sizes.size(); ++ci)
    for (std::uint64_t j = 0; j < rk.chunk_sizes[ci]; ++j)
      largest = std::max<std::uint64_t>(largest, e.kind_at(rk.chunk_first[ci] + j).largest_param);
  auto outer = [&](const std::vector<ParamRecord>& v) {
    for (const auto& q : v)
      if (!q.frozen) largest = std::max<std::uint64_t>(largest, q.rows * q.cols);
  };
  if (rk.embed_chunk != RankSetup::kNoChunk) outer(embed);
  if (rk.head_chunk != RankSetup::kNoChunk) outer(head);
  const Parallel& p = e.config.par;
  return p.zero >= 1 ? ceil_div(largest, shard_ranks(p)) : largest;
}

// torch.optim.AdamW's own step (torch 2.6 / 2.11 torch/optim/adam.py, AdamW its subclass):
//   foreach: _multi_tensor_adam's one new tensor list, exp_avg_sq_sqrt =
//     torch._foreach_sqrt(device_exp_avg_sqs), every state tensor at once (the other foreach ops
//     are in place; measured: the H200 step's trace allocates exactly the parameters' count in
//     the states' dtype, 622,891,008 B for 311,445,504 bf16 parameters, docs/validation.md 4.3);
//   fused: _fused_adamw_ updates in place (multi_tensor_apply), no tensor;
//   for-loop: _single_tensor_adam's denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt) holds
//     the sqrt and the quotient of one tensor at once.
Bytes adamw_bytes(const TrainConfig& c, const StaticMemory& st,
                  const std::function<std::uint64_t()>& largest, Checked& ck) {
  switch (effective_optimizer_impl(c)) {
    case OptimizerImpl::kAuto:  // effective_optimizer_impl resolves it
    case OptimizerImpl::kForeach:
      return st.optimizer_bytes / 2;  // exp_avg_sq's share of the two states
    case OptimizerImpl::kFused:
      return 0;
    case OptimizerImpl::kForLoop:
      return ck.mul(ck.mul(largest(), dtype_bytes(c.optimizer_dtype), "timeline.optimizer_step"), 2,
                    "timeline.optimizer_step");
  }
  return 0;
}

// What a framework's optimizer wrapper allocates around the step, for `elems` elements this
// rank's optimizer steps.
Bytes wrapper_bytes(const TrainConfig& c, std::uint64_t elems, Checked& ck) {
  const Bytes gw = dtype_bytes(c.grad_dtype);
  if (c.framework == Framework::kDeepspeed && c.par.zero >= 1) {
    // stage_1_and_2.py step l.1883-1893 (stage3.py _prepare_fp32_grad_for_sub_group l.1899):
    // flatten(averaged_gradients).to(fp32): the flat gradients in their dtype and their fp32
    // copy exist together (.to returns the same tensor when they are fp32 already); the copy
    // stays as the fp32 partition's .grad through _optimizer_step. ZeRO-3 steps one sub-group
    // at a time, of at most sub_group_size elements (its last parameter can pass the bound).
    const std::uint64_t n = c.par.zero == 3 ? std::min(elems, kDeepspeedSubGroup) : elems;
    const Bytes fp32 = ck.mul(n, 4, "timeline.optimizer_step");
    return gw == 4
               ? fp32
               : ck.add(fp32, ck.mul(n, gw, "timeline.optimizer_step"), "timeline.optimizer_step");
  }
  if (c.framework == Framework::kMegatronLm && gw != 4 && c.master_weights)
    // Megatron-LM 0011998 distrib_optimizer.py _copy_model_grads_to_main_grads l.2441:
    // shard_main_param.grad = shard_model_grad.float(), a new fp32 tensor when the gradient
    // buffer is not fp32 (a view of it otherwise), until the next zero_grad.
    return ck.mul(elems, 4, "timeline.optimizer_step");
  return 0;
}

}  // namespace

void set_optimizer_step(Setup& e, const std::vector<ParamRecord>& embed,
                        const std::vector<ParamRecord>& head, Checked& ck) {
  const TrainConfig& c = e.config;
  e.opt_temp = 0;
  for (RankSetup& rk : e.ranks) {
    rk.opt_temp = 0;
    // SGD (with or without momentum) updates in place (torch/optim/sgd.py _single_tensor_sgd:
    // buf.mul_(momentum).add_(grad), param.add_(grad, alpha=-lr)); the CPU executor's in-place
    // SGD measured no step temporary (docs/validation.md section 5). ZeRO-Offload steps on the
    // CPU (DeepSpeedCPUAdam).
    if (c.optimizer == Optimizer::kSgd || c.optimizer == Optimizer::kSgdMomentum ||
        c.optimizer_offload)
      continue;
    // The largest tensor only where a step reads it (a walk over the rank's layers: the advisor
    // builds thousands of setups).
    auto largest = [&] { return largest_tensor(e, rk, embed, head); };
    if (c.optimizer != Optimizer::kAdamW) {
      // 8-bit Adam and Adafactor compute their update in fp32 temporaries of one tensor at a
      // time (bitsandbytes' dequantized blocks, Adafactor's factored update).
      rk.opt_temp = ck.mul(largest(), 4, "timeline.optimizer_step");
    } else {
      const std::uint64_t elems = rk.stat.optimizer_bytes / 2 / dtype_bytes(c.optimizer_dtype);
      rk.opt_temp = ck.add(adamw_bytes(c, rk.stat, largest, ck), wrapper_bytes(c, elems, ck),
                           "timeline.optimizer_step");
    }
    e.opt_temp = std::max(e.opt_temp, rk.opt_temp);
  }
}

std::string optimizer_step_source(const TrainConfig& c) {
  if (c.optimizer == Optimizer::kSgd || c.optimizer == Optimizer::kSgdMomentum)
    return "SGD updates in place: no temporary";
  if (c.optimizer_offload) return "ZeRO-Offload steps on the CPU: no GPU temporary";
  if (c.optimizer != Optimizer::kAdamW)
    return "fp32 temporaries of the largest parameter tensor (one tensor at a time)";
  std::string s;
  switch (effective_optimizer_impl(c)) {
    case OptimizerImpl::kAuto:
    case OptimizerImpl::kForeach:
      s = "foreach AdamW: sqrt of every exp_avg_sq at once (one state's bytes)";
      break;
    case OptimizerImpl::kFused:
      s = "fused AdamW: in place, no temporary";
      break;
    case OptimizerImpl::kForLoop:
      s = "for-loop AdamW: sqrt and quotient of the largest tensor";
      break;
  }
  if (c.framework == Framework::kDeepspeed && c.par.zero >= 1)
    s += "; DeepSpeed's flat gradient partition and its fp32 copy";
  else if (c.framework == Framework::kMegatronLm && c.grad_dtype != DType::kFp32 &&
           c.master_weights)
    s += "; Megatron-LM's fp32 main gradients (a copy of a non-fp32 gradient buffer)";
  return s;
}

}  // namespace actmem::detail

// Launch configurations for one configuration: Megatron-LM's arguments and a PyTorch selective
// activation checkpointing policy (emit.hpp).
#include "actmem/frameworks/emit.hpp"

#include <algorithm>
#include <cstdio>

#include "actmem/setup/policy.hpp"

namespace actmem {

namespace {

Error cannot(const std::string& what) {
  return make_error("invalid_value", "emit", "emit: " + what);
}

// The recompute policy as Megatron-LM's arguments (transformer_config.py: recompute_granularity,
// recompute_method, recompute_num_layers, recompute_modules): selective recomputes the attention
// core (core_attn, the default module); uniform with K layers checkpoints the input of every unit
// of K layers of a block and re-runs the unit (every:K; K = 1 is full); block with N recomputes
// the first N layers of each pipeline chunk, each from its own input (layers:C..CK..K).
Result<std::vector<std::string>> recompute_args(const Recompute& r) {
  if (any_offload(r))
    return cannot(
        "megatron: offload (kept activations in host memory) has no Megatron-LM argument that "
        "keeps the same tensors; allowed: without offload");
  switch (r.kind) {
    case RecomputeKind::kNone:
      return std::vector<std::string>{};
    case RecomputeKind::kSelective:
      return std::vector<std::string>{"--recompute-granularity selective",
                                      "--recompute-modules core_attn"};
    case RecomputeKind::kFull:
      return std::vector<std::string>{"--recompute-granularity full", "--recompute-method uniform",
                                      "--recompute-num-layers 1"};
    case RecomputeKind::kEveryK:
      return std::vector<std::string>{"--recompute-granularity full", "--recompute-method uniform",
                                      "--recompute-num-layers " + std::to_string(r.every_k)};
    case RecomputeKind::kPattern: {
      const std::string& p = r.pattern;
      const std::size_t n =
          std::find_if(p.begin(), p.end(), [](char ch) { return ch != 'C'; }) - p.begin();
      const bool block = std::all_of(p.begin() + static_cast<std::ptrdiff_t>(n), p.end(),
                                     [](char ch) { return ch == 'K'; });
      if (block && n == 0) return std::vector<std::string>{};
      if (block)
        return std::vector<std::string>{"--recompute-granularity full", "--recompute-method block",
                                        "--recompute-num-layers " + std::to_string(n)};
      if (std::all_of(p.begin(), p.end(), [](char ch) { return ch == 'S'; }))
        return recompute_args([] {
          Recompute sel;
          sel.kind = RecomputeKind::kSelective;
          return sel;
        }());
      return cannot("megatron: the per-layer policy layers:" + p +
                    " has no Megatron-LM arguments (they choose selective for every layer, or "
                    "full for every layer, every unit of K layers or the first N of each chunk); "
                    "allowed: none, selective, full, every:K, layers:C...CK...K");
    }
    case RecomputeKind::kCustom:
      break;
  }
  return cannot("megatron: a custom keep list has no Megatron-LM argument");
}

}  // namespace

std::vector<std::uint64_t> pipeline_split(std::uint64_t layers, std::uint64_t pp) {
  if (pp <= 1 || layers % pp == 0 || layers < pp) return {};
  if (pp == 2) return {layers / 2, layers - layers / 2};
  std::uint64_t mid = layers / pp + 1;
  if (layers < (pp - 2) * mid + 2) mid = layers / pp;
  const std::uint64_t ends = layers - (pp - 2) * mid;
  std::vector<std::uint64_t> v(pp, mid);
  v.front() = ends / 2;
  v.back() = ends - ends / 2;
  return v;
}

Result<std::string> megatron_args(const ModelSpec& m, const TrainConfig& c) {
  const Parallel& p = c.par;
  if ((p.pp > 1 && effective_schedule(c) == Schedule::kGpipe) || is_split_backward(c.schedule))
    return cannot(std::string("megatron: Megatron-LM (main@d98e8a64) runs 1F1B or its "
                              "interleaved schedule, not ") +
                  schedule_name(c.schedule) + "; allowed schedules: 1f1b, interleaved");
  std::vector<std::string> a;
  a.push_back("--tensor-model-parallel-size " + std::to_string(p.tp));
  if (p.sp && p.tp > 1) a.push_back("--sequence-parallel");
  if (c.async_tp) a.push_back("--tp-comm-overlap");
  a.push_back("--pipeline-model-parallel-size " + std::to_string(p.pp));
  if (p.vpp > 1) a.push_back("--num-virtual-stages-per-pipeline-rank " + std::to_string(p.vpp));
  if (!c.layer_split.empty()) {
    // Megatron-LM gives the first and last stages' layers and splits the rest evenly.
    const auto& s = c.layer_split;
    const bool middle_even =
        s.size() < 3 ||
        std::all_of(s.begin() + 1, s.end() - 1, [&](std::uint64_t x) { return x == s[1]; });
    if (!middle_even)
      return cannot(
          "megatron: layer_split has unequal middle stages; Megatron-LM's "
          "--decoder-first/last-pipeline-num-layers give the two ends and split the rest evenly");
    a.push_back("--decoder-first-pipeline-num-layers " + std::to_string(s.front()));
    a.push_back("--decoder-last-pipeline-num-layers " + std::to_string(s.back()));
  }
  a.push_back("--context-parallel-size " + std::to_string(p.cp));
  if (p.ep > 1) {
    a.push_back("--expert-model-parallel-size " + std::to_string(p.ep));
    // The engine splits expert weights over the TP ranks as the dense ones.
    a.push_back("--expert-tensor-parallel-size " + std::to_string(p.tp));
  }
  // ZeRO-1 is the distributed optimizer; ZeRO-2 and 3 are Megatron-FSDP's sharding strategies
  // (distributed_data_parallel_config.py: optim_grads, optim_grads_params).
  if (p.zero == 1) a.push_back("--use-distributed-optimizer");
  // Hybrid sharding: arguments.py --num-distributed-optimizer-instances ("Number of Distributed
  // Optimizer copies across Data Parallel domain").
  if (p.zero == 1 && p.dp_replicate > 1)
    a.push_back("--num-distributed-optimizer-instances " + std::to_string(p.dp_replicate));
  if (p.zero >= 2 && p.dp_replicate > 1)
    return cannot("megatron: dp_replicate " + std::to_string(p.dp_replicate) + " with zero " +
                  std::to_string(p.zero) +
                  ": hybrid sharding is emitted for the distributed optimizer (zero 1) only");
  if (p.zero >= 2) {
    a.push_back("--use-megatron-fsdp");
    a.push_back(std::string("--data-parallel-sharding-strategy ") +
                (p.zero == 2 ? "optim_grads" : "optim_grads_params"));
  }
  a.push_back("--micro-batch-size " + std::to_string(c.micro_batch));
  a.push_back("--global-batch-size " + std::to_string(c.micro_batch * c.grad_accum * p.dp));
  a.push_back("--seq-length " + std::to_string(c.seq));
  if (c.param_dtype != c.act_dtype)
    return cannot("megatron: parameters in " + std::string(dtype_name(c.param_dtype)) +
                  " with activations in " + dtype_name(c.act_dtype) +
                  ": Megatron-LM keeps both in the training dtype (--bf16, --fp16 or neither)");
  if (c.act_dtype == DType::kBf16) a.push_back("--bf16");
  if (c.act_dtype == DType::kFp16) a.push_back("--fp16");
  if (c.act_dtype == DType::kFp8 || (c.float8 != Float8::kNone && c.float8 != Float8::kDelayed))
    return cannot(std::string("megatron: float8 ") + float8_name(c.float8) +
                  " is torchao's; Megatron-LM's fp8 is TransformerEngine's (float8 delayed)");
  if (c.float8 == Float8::kDelayed) {
    a.push_back("--fp8-format hybrid");
    a.push_back("--fp8-amax-history-len " + std::to_string(c.fp8_amax_history));
  }
  if (c.act_dtype != DType::kFp32 && c.grad_dtype == DType::kFp32)
    a.push_back("--accumulate-allreduce-grads-in-fp32");
  switch (c.attention) {
    case Attention::kFlash:
      a.push_back("--attention-backend flash");
      break;
    case Attention::kEager:
      a.push_back("--attention-backend unfused");
      break;
    case Attention::kSdpaMath:
      return cannot(
          "megatron: attention sdpa_math is PyTorch's math backend, which Megatron-LM does not "
          "use; allowed: eager (--attention-backend unfused), flash");
    case Attention::kSdpaCudnn:
      return cannot(
          "megatron: attention sdpa_cudnn is transformers' SDPA on PyTorch's cuDNN backend; "
          "allowed: eager (--attention-backend unfused), flash");
  }
  // Megatron-LM's dropouts default to 0.1 whatever the model's config says: always written.
  auto prob = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return std::string(buf);
  };
  a.push_back("--attention-dropout " +
              prob(c.attention_dropout >= 0 ? c.attention_dropout : m.attention_dropout));
  a.push_back("--hidden-dropout " +
              prob(c.hidden_dropout >= 0 ? c.hidden_dropout : m.hidden_dropout));
  // The optimizer: Megatron-LM's adam is AdamW with fp32 main parameters and states; its sgd
  // has momentum 0.9 unless told 0.
  switch (c.optimizer) {
    case Optimizer::kAdamW:
      break;
    case Optimizer::kSgdMomentum:
      a.push_back("--optimizer sgd");
      break;
    case Optimizer::kSgd:
      a.push_back("--optimizer sgd");
      a.push_back("--sgd-momentum 0");
      break;
    default:
      return cannot(std::string("megatron: the ") + optimizer_name(c.optimizer) +
                    " optimizer has no Megatron-LM argument; allowed: adamw, sgd, sgd_momentum");
  }
  if (c.compile)
    return cannot(
        "megatron: compile is torch.compile of torchtitan's block; Megatron-LM has no "
        "argument for it");
  // Megatron-LM 0011998 megatron/core/optimizer/__init__.py l.13-19: TransformerEngine's or Apex's
  // FusedAdam; torch's foreach AdamW only where neither is installed, which no argument asks for.
  if (c.optimizer == Optimizer::kAdamW && c.optimizer_impl != OptimizerImpl::kFused &&
      c.optimizer_impl != OptimizerImpl::kAuto)
    return cannot(std::string("megatron: optimizer_impl ") + optimizer_impl_name(c.optimizer_impl) +
                  ": Megatron-LM steps TransformerEngine's or Apex's FusedAdam; allowed: fused");
  if (c.act_dtype != DType::kFp32 && (!c.master_weights || c.optimizer_dtype != DType::kFp32))
    return cannot(
        "megatron: Megatron-LM keeps fp32 main parameters and optimizer states with --bf16 or "
        "--fp16 (other dtypes need --use-precision-aware-optimizer, not modelled); allowed: "
        "master weights with fp32 optimizer states");
  auto rc = recompute_args(c.recompute);
  if (!rc.ok()) return rc.error();
  for (const std::string& s : rc.value()) a.push_back(s);
  std::string out;
  for (std::size_t i = 0; i < a.size(); ++i) out += a[i] + (i + 1 < a.size() ? " \\\n" : "\n");
  return out;
}

Result<std::string> sac_policy(const ModelSpec& m, const TrainConfig& c) {
  const Recompute& r = c.recompute;
  if (any_offload(r)) return cannot("sac: offload is not a checkpointing policy");
  if (r.kind == RecomputeKind::kCustom && !r.op_policy.empty())
    return cannot("sac: op:" + r.op_policy +
                  " is torchtitan's own policy: activation_checkpoint.mode = 'selective', "
                  "selective_ac_option = 'op' in its TOML");
  if (r.kind == RecomputeKind::kCustom && r.ops)
    return cannot(
        "sac: an op list (op:...) names actmem's op ids; allowed: none, selective, "
        "full, every:K, layers:PATTERN without X");
  if (r.kind == RecomputeKind::kCustom)
    return cannot("sac: a custom keep list names actmem records, not PyTorch ops");
  std::string s =
      "# actmem: recompute " + recompute_name(r) + " for " + m.name +
      " as PyTorch activation checkpointing (torch >= 2.4).\n"
      "# Replace each pipeline chunk's layers: model.layers = apply(model.layers).\n"
      "from functools import partial\n\n"
      "import torch\n"
      "from torch.utils.checkpoint import (CheckpointPolicy, checkpoint,\n"
      "                                    create_selective_checkpoint_contexts)\n\n"
      "# Selective (Korthikanti et al. 2022, Sec. 5): the attention core (scores, softmax, its\n"
      "# dropout and the product with V) is recomputed; every other op's output is saved.\n"
      "_CORE = {\n"
      "    torch.ops.aten.bmm.default, torch.ops.aten.baddbmm.default,\n"
      "    torch.ops.aten._softmax.default, torch.ops.aten.native_dropout.default,\n"
      "    torch.ops.aten._scaled_dot_product_efficient_attention.default,\n"
      "    torch.ops.aten._scaled_dot_product_flash_attention.default,\n"
      "}\n\n\n"
      "def _selective(ctx, op, *args, **kwargs):\n"
      "    return CheckpointPolicy.PREFER_RECOMPUTE if op in _CORE else "
      "CheckpointPolicy.MUST_SAVE\n\n\n"
      "class _Checkpointed(torch.nn.Module):\n"
      "    def __init__(self, layer, selective):\n"
      "        super().__init__()\n"
      "        self.layer, self.selective = layer, selective\n\n"
      "    def forward(self, *args, **kwargs):\n"
      "        ctx = partial(create_selective_checkpoint_contexts, _selective) if self.selective "
      "else None\n"
      "        extra = {'context_fn': ctx} if ctx else {}\n"
      "        return checkpoint(self.layer, *args, use_reentrant=False, **extra, **kwargs)\n\n\n";
  // One letter per layer of a chunk, as layers:PATTERN writes it (repeated over the chunk): K keep,
  // S selective, C checkpoint (the layer from its input), R recomputed inside the segment of the
  // C before it (a chunk's first layer starts a segment: R there is C, policy.cpp choice_at).
  std::string letters;
  switch (r.kind) {
    case RecomputeKind::kNone:
      letters = "K";
      break;
    case RecomputeKind::kSelective:
      letters = "S";
      break;
    case RecomputeKind::kFull:
      letters = "C";
      break;
    case RecomputeKind::kEveryK:
      letters = "C" + std::string(r.every_k - 1, 'R');
      break;
    case RecomputeKind::kPattern:
      letters = r.pattern;
      break;
    case RecomputeKind::kCustom:
      break;
  }
  if (letters.find('X') != std::string::npos)
    return cannot("sac: a custom keep list (X) names actmem records, not PyTorch ops");
  s += "POLICY = '" + letters +
       "'  # one letter per layer, repeated over a chunk's layers\n\n\n"
       "class _Segment(torch.nn.Module):\n"
       "    \"\"\"Layers run in a row; a tuple output passes its first element on.\"\"\"\n\n"
       "    def __init__(self, layers):\n"
       "        super().__init__()\n"
       "        self.layers = torch.nn.ModuleList(layers)\n\n"
       "    def forward(self, x, *args, **kwargs):\n"
       "        for layer in self.layers:\n"
       "            x = layer(x, *args, **kwargs)\n"
       "            x = x[0] if isinstance(x, tuple) else x\n"
       "        return x\n\n\n"
       "def apply(layers):\n"
       "    \"\"\"One pipeline chunk's transformer layers, in order -> the modules to run "
       "instead.\"\"\"\n"
       "    letter = lambda i: 'C' if i == 0 and POLICY[0] == 'R' else POLICY[i % len(POLICY)]\n"
       "    out, i = [], 0\n"
       "    while i < len(layers):\n"
       "        if letter(i) == 'C':  # a segment: this layer and the R layers after it\n"
       "            j = i + 1\n"
       "            while j < len(layers) and letter(j) == 'R':\n"
       "                j += 1\n"
       "            out.append(_Checkpointed(_Segment(layers[i:j]), selective=False))\n"
       "            i = j\n"
       "            continue\n"
       "        out.append(_Checkpointed(layers[i], selective=True) if letter(i) == 'S' else "
       "layers[i])\n"
       "        i += 1\n"
       "    return torch.nn.ModuleList(out)\n";
  return s;
}

}  // namespace actmem

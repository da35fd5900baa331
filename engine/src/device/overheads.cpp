// The fixed costs of one GPU in a training job that no tensor accounts for: the CUDA context with
// PyTorch's start-up and the kernels it loads, the driver's reserved memory, and each NCCL
// communicator the parallel layout creates on the GPU. Each is a named line with its formula and
// source (docs/formulas.md, "Device memory").
#include <algorithm>
#include <string>

#include "actmem/config/gpu.hpp"
#include "actmem/core/checked.hpp"
#include "actmem/device/device.hpp"
#include "actmem/setup/setup.hpp"

namespace actmem {

namespace {

constexpr Bytes kMiB = 1048576;

// Measured on an H200 with PyTorch 2.11.0+cu130, driver 580.159.04 (docs/validation.md 4.3,
// tests/reference/gpu/step.json): the device's used memory after torch.cuda.init() beyond the
// first 2 MiB segment, and what the first training step's loaded kernels and library handles
// (cuBLAS, cuBLASLt, SDPA) added beyond reserved memory.
constexpr Bytes kContextH200 = 648871936;
constexpr Bytes kKernelsH200 = 155189248;
constexpr const char* kContextSource =
    "measured on an H200, PyTorch 2.11.0+cu130 (docs/validation.md 4.3): 648,871,936 B after "
    "torch.cuda.init(), 155,189,248 B more after the first step";

// NCCL >= 2.22 with cuMem (its default since 2.19 on CUDA 12+ drivers) and runtime connection:
// every device allocation is rounded to the 2 MiB granularity G; per channel 3 metadata
// allocations (channel.cc initChannel) and 2 per communicator (init.cc devCommAndChans,
// rankToLocalRank); a connection is a receive buffer of ncclRecvMem + LL 512 KiB + LL128
// 4,915,200 B + SIMPLE 4 MiB (10 MiB after rounding) and a send-side ncclSendMem (2 MiB), 12 MiB
// per channel and peer (transport/p2p.cc; NVIDIA/nccl#1685 logs exactly these two sizes on H100).
// 24 collective channels and 32 send/recv channels per peer are what 8-GPU A100/H100 NVLink
// systems log (NVIDIA/nccl-tests#100, NVIDIA/nccl#1685); send/recv over the network shares one
// pool of p2p channels x 16 steps x 128 KiB (transport/net.cc). Read at NCCL v2.27.7 (593de54e).
constexpr Bytes kG = 2 * kMiB;
constexpr Bytes kCollChannels = 24, kP2pChannels = 32, kP2pPerPeer = 32;
constexpr Bytes kPair = 12 * kMiB;
constexpr Bytes kNetPool = kP2pChannels * 16 * 128 * 1024;
constexpr const char* kNcclSource =
    "derived from NCCL v2.27.7 (init.cc, channel.cc, transport/p2p.cc, transport/net.cc) with "
    "8-GPU NVLink channel counts (NVIDIA/nccl#1685, nccl-tests#100); not measured";

std::string mib(Bytes b) {
  return std::to_string(b / kMiB) + " MiB";
}

}  // namespace

std::vector<DeviceOverhead> device_overheads(const Setup& e, const GpuSpec* gpu) {
  const TrainConfig& c = e.config;
  const Parallel& p = c.par;
  std::vector<DeviceOverhead> out;
  // The CUDA context and loaded kernels.
  if (c.cuda_context_bytes != kDefaultBytes) {
    out.push_back({"cuda.context", c.cuda_context_bytes, "config.cuda_context_bytes",
                   "given in the configuration"});
  } else if (gpu && gpu->context_bytes != 0) {
    out.push_back({"cuda.context", gpu->context_bytes, "the GPU preset's measured context",
                   gpu->context_source});
  } else {
    out.push_back({"cuda.context", kContextH200 + kKernelsH200,
                   "648,871,936 (context) + 155,189,248 (kernels and handles loaded by a step)",
                   std::string(kContextSource) +
                       "; not measured on this GPU: set cuda_context_bytes to override"});
  }
  // What the driver keeps of the reported total (nvidia-smi -q's "Reserved"): in nvidia-smi's
  // used figure, never available to a process.
  if (gpu && gpu->reported_bytes != 0 && gpu->driver_reserved_bytes != 0)
    out.push_back({"driver.reserved", gpu->driver_reserved_bytes,
                   "nvidia-smi total - cudaMemGetInfo total", gpu->reported_source});
  // NCCL communicators. Megatron-LM's order of ranks puts tp innermost, then cp, dp (ep inside
  // it) and pp (parallel_state.py initialize_model_parallel, order "tp-cp-ep-dp-pp"): a group is
  // inside one node when its stride times its size fits gpus_per_node.
  const Bytes node = c.gpus_per_node;
  auto intra = [&](Bytes stride, Bytes size) { return stride * size <= node; };
  auto comm = [&](const std::string& name, Bytes bytes, const std::string& formula) {
    if (c.nccl_comm_bytes != kDefaultBytes)
      out.push_back(
          {name, c.nccl_comm_bytes, "config.nccl_comm_bytes", "given in the configuration"});
    else
      out.push_back({name, bytes, formula, kNcclSource});
  };
  const Bytes meta = 3 * kG * std::max(kCollChannels, kP2pChannels) + 2 * kG;
  const std::string meta_f = "metadata 3 x 2 MiB x 32 channels + 4 MiB = " + mib(meta);
  // Collectives (all-reduce, all-gather, reduce-scatter) run on rings: one receive and one send
  // connection per channel whatever the group size.
  auto collective = [&](const std::string& name) {
    comm(name, meta + kCollChannels * kPair,
         meta_f + "; ring 24 channels x 12 MiB = " + mib(kCollChannels * kPair));
  };
  // Send/recv: per peer 32 channels x 12 MiB inside a node; across nodes one shared pool.
  auto p2p = [&](const std::string& name, Bytes peers, bool in_node) {
    const Bytes b = in_node ? peers * kP2pPerPeer * kPair : kNetPool;
    comm(name, meta + b,
         meta_f +
             (in_node ? "; " + std::to_string(peers) + " peer(s) x 32 channels x 12 MiB = "
                      : "; network send/recv pool 32 channels x 16 x 128 KiB = ") +
             mib(b));
  };
  if (p.tp > 1) collective("nccl.tp");
  // Gradients are reduced over data x context parallel ranks when cp > 1 (Megatron-LM's
  // dp-cp group); context parallelism itself exchanges K/V blocks around a ring (send/recv).
  // Hybrid sharding (dp_replicate > 1 with ZeRO) talks over two groups: the shard group inside a
  // replica and the replicate group across them, one communicator each.
  if (p.dp_replicate > 1 && p.zero >= 1) {
    if (p.dp / p.dp_replicate * p.cp > 1)
      collective(p.cp > 1 ? "nccl.dp_cp_shard" : "nccl.dp_shard");
    collective("nccl.dp_replicate");
  } else if (p.dp * p.cp > 1) {
    collective(p.cp > 1 ? "nccl.dp_cp" : "nccl.dp");
  }
  if (p.cp > 1) p2p("nccl.cp", 2, intra(p.tp, p.cp));
  if (p.ep > 1) {
    // The token all-to-all talks to every other rank of the expert group.
    p2p("nccl.ep", p.ep - 1, intra(p.tp * p.cp, p.ep));
  }
  if (p.pp > 1) {
    // A middle stage sends to and receives from both neighbours.
    p2p("nccl.pp", p.pp > 2 ? 2 : 1, intra(p.tp * p.cp * p.dp, p.pp));
  }
  if (c.async_tp) {
    // Both are mapped with cuMemCreate, outside PyTorch's caching allocator, and rounded to the
    // allocation granularity (taken as 2 MiB, cuMem's on these GPUs, as for NCCL above).
    // Sizes are checked; one that overflows saturates, and the device sum then reports it.
    Checked ck;
    const Bytes row = ck.mul(c.micro_batch * (c.seq / p.cp), e.model.hidden, "async_tp");
    const Bytes el = dtype_bytes(c.act_dtype);
    auto round = [&](Bytes n) { return ck.mul(ceil_div(n, kG), kG, "async_tp"); };
    auto sat = [&](Bytes n) { return ck.overflowed() ? ~Bytes{0} : n; };
    if (c.profile == Profile::kMegatron) {
      // Megatron-LM 2da43ef initialize_tp_communicators with TransformerEngine v1.13: ten named
      // userbuffers of [s·b/cp, h] each (qkv/proj/fc1/fc2 fprop, dgrad, wgrad), in the
      // activations' dtype; with fp8, the six all-gather buffers are one byte.
      const bool fp8 = c.act_dtype == DType::kFp8;
      const Bytes bytes =
          fp8 ? ck.add(ck.mul(round(row), 6, "async_tp"),
                       ck.mul(round(ck.mul(row, 2, "async_tp")), 4, "async_tp"), "async_tp")
              : ck.mul(round(ck.mul(row, el, "async_tp")), 10, "async_tp");
      out.push_back({"tp_comm_overlap.userbuffers", sat(bytes),
                     "10 buffers of b·s/cp·h = " + std::to_string(row) + " elements x " +
                         (fp8 ? std::string("(6 x 1 B + 4 x 2 B)") : std::to_string(el) + " B") +
                         ", each rounded to 2 MiB",
                     "Megatron-LM 2da43ef megatron/training/initialize.py _initialize_tp_"
                     "communicators (input_shape [seq_length * micro_batch_size / cp, hidden]) "
                     "with TransformerEngine v1.13 initialize_ub; cuMemCreate, not in the caching "
                     "allocator; not measured"});
    } else {
      // PyTorch 2.6 _symmetric_memory: one workspace per TP group, grown to the largest request,
      // the matmul reduce-scatter's two output chunks (2·b·s·h/tp elements), plus its 2048-byte
      // signal pad.
      const Bytes req =
          ck.add(ceil_div(ck.mul(ck.mul(row, 2, "async_tp") / p.tp, el, "async_tp"), 16) * 16, 2048,
                 "async_tp");
      const Bytes bytes = round(req);
      out.push_back({"async_tp.symm_mem_workspace", sat(bytes),
                     "2 x b·s/cp·h/tp = " + std::to_string(2 * row / p.tp) + " elements x " +
                         std::to_string(el) + " B + 2048 B signal pad, rounded to 2 MiB",
                     "torchtitan 9dec370 parallelize_llama.py (enable_symm_mem_for_group, "
                     "_micro_pipeline_tp; needs torch.compile) and PyTorch 2.6.0 "
                     "distributed/_symmetric_memory/__init__.py get_symm_mem_workspace; "
                     "cuMemCreate, not in the caching allocator; not measured"});
    }
  }
  return out;
}

}  // namespace actmem

// The engine's bounds on input and work, stated once: every client (CLI, page, executors, fuzzers)
// gets the same limits, and each rejection names the field and the limit it passed.
// docs/reliability.md lists them with the reason for each number.
#pragma once

#include <cstddef>
#include <cstdint>

namespace actmem {

// One request or file: 16 MiB of JSON text (the largest real config.json is ~10 KB), nested at most
// 64 levels (ours need 4; nlohmann's parser and our copies recurse per level).
constexpr std::size_t kMaxJsonTextBytes = std::size_t{16} << 20;
constexpr std::size_t kMaxJsonDepth = 64;
// ...and holding at most 2^18 values (a 65,536-layer per-layer list fits four times over): 16 MiB
// of "[{},{},...]" is 5.6 million values, a 1 GB tree.
constexpr std::size_t kMaxJsonValues = std::size_t{1} << 18;

// Model dimensions: any real model is far below 2^40, and products of a few such dimensions stay
// inside the checked 64-bit arithmetic (checked.hpp) without wrapping first.
constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 40;
constexpr std::uint64_t kMaxLayers = 65536;
// A Mamba-2 layer's state size, conv kernel and chunk length: tensors of Q x Q or N per token
// whatever b and s (real models: Q <= 256, N <= 256, K = 4).
constexpr std::uint64_t kMaxMambaWidth = 65536;
// Multi-token-prediction depths trained at once (DeepSeek-V3 trains one).
constexpr std::uint64_t kMaxMtpDepths = 4;
constexpr std::size_t kMaxLayerKinds = 64;

// Parameter tensors one GPU holds (each layer's weights, and each routed expert's own: PyTorch
// allocates every expert's weights apart). The device replay allocates each one, its gradient,
// master copy and optimizer states, so this bounds its work and memory before anything is
// allocated: at 2^20 the replay takes about 0.6 s and 500 MB natively, 3 s under ASan (measured
// 2026-12-03 at 2^18.6: 0.19 s, 1.3 s). Real models hold far fewer: DeepSeek-V3 at ep 1 about
// 30,000, a 65,536-layer dense model on one GPU about 650,000.
constexpr std::uint64_t kMaxParamTensors = std::uint64_t{1} << 20;

// Lists in a config: one layer_split entry per pipeline stage, custom_keep one per tensor id.
constexpr std::size_t kMaxLayerSplitEntries = 4096;
constexpr std::size_t kMaxCustomKeep = 256;

// Micro-batches per step, and the pipeline ops (pp x vpp x micro-batches) one walk simulates:
// real runs reach pp=64, vpp=8, 1,024 micro-batches = 524,288 ops = 2^19, the bound. At 2^20 a
// 405B timeline with --json took 1.8-3.0 s beside a build (hostile run); at 2^19 about half.
constexpr std::uint64_t kMaxMicroBatches = kMaxLayers * 64;
constexpr std::uint64_t kMaxPipelineOps = std::uint64_t{1} << 19;

// Fixed per-GPU buffers a user may set (cuBLAS workspace, DDP bucket): 2^50 bytes (1 PiB).
constexpr std::uint64_t kMaxBufferBytes = std::uint64_t{1} << 50;
// GPUs in one node (NCCL groups inside it use NVLink buffers); the largest NVLink domains are 72.
constexpr std::uint64_t kMaxGpusPerNode = 1024;

// fit's searches: micro-batches up to 2^20, sequences up to 2^30 tokens. An answer at the bound
// says so (FitResult::*_at_limit): more may fit.
constexpr std::uint64_t kMaxFitMicroBatch = std::uint64_t{1} << 20;
constexpr std::uint64_t kMaxFitSeq = std::uint64_t{1} << 30;

// Timeline events written out (JSON, CSV): the walk always covers every op and computes the exact
// peak; a longer step's event list is cut at this many per stage and the answer says so.
constexpr std::uint64_t kMaxTimelineEvents = 100000;

}  // namespace actmem

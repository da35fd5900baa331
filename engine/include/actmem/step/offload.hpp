// Whether offloading kept activations to host memory can hide behind compute: each layer's kept
// bytes leave over the host link while the next layer runs its forward (and come back while the
// layers above run their backward, which takes twice as long), so the forward is what binds. The
// GPU's dense bf16 FLOPs at an assumed utilisation give the compute time; its host link's
// bandwidth per direction the copy time. Seconds are estimates on stated assumptions, never a
// measured figure; the bytes they divide are the engine's.
#pragma once

#include <cstdint>
#include <string>

#include "actmem/config/config.hpp"
#include "actmem/core/checked.hpp"

namespace actmem {

struct Setup;
struct GpuSpec;

// Model FLOPs utilisation assumed for the compute offloaded copies hide behind: Llama 3's 16K-GPU
// pre-training ran at 38-43% BF16 MFU on H100 (Dubey et al. 2024, Table 4).
constexpr double kAssumedMfu = 0.40;

struct OffloadTiming {
  bool known = false;  // the GPU's bf16 FLOPs and host link are known, and the step is bf16/fp16
  std::string why_unknown;
  double link_bytes_per_s = 0;  // per direction
  std::string link_source;
  double flops_per_s = 0;  // dense bf16 peak x kAssumedMfu
  // Per step on the most loaded stage: all copies out (and as many back), the forward compute
  // they overlap, and the copy time no forward hides.
  double copy_out_s = 0, forward_s = 0, exposed_s = 0;
  bool hidden = false;
  std::uint64_t worst_layer = 0;  // global index of the layer whose copy exceeds its forward most
  double worst_copy_s = 0, worst_forward_s = 0;  // that layer's, one micro-batch
  // Host memory: the offloaded bytes resident at once on the stage, against what the host has per
  // GPU (0: unknown, then host_fits is false).
  Bytes host_peak_bytes = 0, host_memory_bytes = 0;
  bool host_fits = false;
};

// The exposed copy time as a share of the stage's ideal step (its forwards and backwards, three
// times the forwards: Narayanan et al. 2021, Sec. 5.1), %: the advisor's offload cost, beside the
// pipeline bubble and the recompute overhead.
inline double offload_exposed_pct(const OffloadTiming& t) {
  return t.known && t.forward_s > 0 ? 100.0 * t.exposed_s / (3.0 * t.forward_s) : 0.0;
}

// The timing of offloading `r`'s kept bytes on pipeline rank `rank` of `s` on `gpu`;
// `host_peak` the stage's offloaded bytes resident at once (the walk's host_peak_bytes).
OffloadTiming offload_timing(const Setup& s, const Recompute& r, std::size_t rank,
                             const GpuSpec& gpu, Bytes host_peak);

}  // namespace actmem

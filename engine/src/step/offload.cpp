// Offload timing (offload.hpp): per offloaded layer, its kept bytes over the host link against the
// forwards that run while they leave.
#include "actmem/step/offload.hpp"

#include "actmem/config/gpu.hpp"
#include "actmem/setup/policy.hpp"
#include "actmem/setup/setup.hpp"

namespace actmem {

OffloadTiming offload_timing(const Setup& s, const Recompute& r, std::size_t rank,
                             const GpuSpec& gpu, Bytes host_peak) {
  OffloadTiming t;
  t.host_peak_bytes = host_peak;
  t.host_memory_bytes = gpu.host_memory_bytes;
  t.host_fits = gpu.host_memory_bytes > 0 && host_peak <= gpu.host_memory_bytes;
  const TrainConfig& c = s.config;
  if (gpu.host_link_gbs <= 0 || gpu.bf16_tflops <= 0) {
    t.why_unknown = "the GPU's host link or dense bf16 FLOPs are not in its preset";
    return t;
  }
  if (c.act_dtype != DType::kBf16 && c.act_dtype != DType::kFp16) {
    t.why_unknown = std::string("the step runs in ") + dtype_name(c.act_dtype) +
                    ", whose tensor-core rate the GPU presets do not give";
    return t;
  }
  t.known = true;
  t.link_bytes_per_s = gpu.host_link_gbs * 1e9;
  t.link_source = gpu.host_link_source;
  t.flops_per_s = gpu.bf16_tflops * 1e12 * kAssumedMfu;
  const RankSetup& rk = s.ranks[rank];
  const double m = static_cast<double>(c.grad_accum);
  double worst_gap = 0;
  bool any = false;
  for (std::size_t ci = 0; ci < rk.chunk_sizes.size(); ++ci) {
    const std::uint64_t n = rk.chunk_sizes[ci], g0 = rk.chunk_first[ci];
    for (std::uint64_t j = 0; j < n; ++j) {
      const std::uint64_t g = g0 + j;
      const KindEstimate& k = s.kind_at(g);
      t.forward_s += k.costs.flops_fwd / t.flops_per_s * m;
      if (!offloaded_at(r, j)) continue;
      const double copy =
          static_cast<double>(kept_bytes(choice_at(r, j), k.costs)) / t.link_bytes_per_s;
      // The copy of layer j's kept bytes runs beside the forwards of the layers after it, up to
      // and including the next offloaded one (whose own copy starts when its forward ends): one
      // layer when every layer offloads. The chunk's last offloaded layer has the rest of the
      // chunk; the chunk's last layer the next op, for which its own forward stands in.
      double fwd = 0;
      std::uint64_t i = j + 1;
      for (; i < n; ++i) {
        fwd += s.kind_at(g0 + i).costs.flops_fwd / t.flops_per_s;
        if (offloaded_at(r, i)) break;
      }
      if (j + 1 == n) fwd = k.costs.flops_fwd / t.flops_per_s;
      t.copy_out_s += copy * m;
      if (copy > fwd) t.exposed_s += (copy - fwd) * m;
      if (!any || copy - fwd > worst_gap) {
        worst_gap = copy - fwd, any = true;
        t.worst_layer = g, t.worst_copy_s = copy, t.worst_forward_s = fwd;
      }
    }
  }
  t.hidden = t.exposed_s == 0;
  return t;
}

}  // namespace actmem

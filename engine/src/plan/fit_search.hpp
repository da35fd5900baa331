// Internal: fit's search for the largest size that fits the GPU (planner.cpp), shared with the
// data's limits (data_peaks.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "actmem/config/gpu.hpp"
#include "actmem/setup/setup.hpp"

namespace actmem {

// A size whose device verdict the caller already has (a configuration's own, from its estimate).
struct KnownFit {
  std::uint64_t x = 0;
  bool fits = false;
};

// The largest x in [1, hi] whose config (`set` writes x into `norm`'s copy) fits `budget` on
// the tensor peak and then the GPU on the device figure; 0 if x = 1 does not. Adds the configs
// simulated to *probes and those replayed on the device to *device_probes. `known`: taken as the
// answer of that x's device probe (counted as one), instead of replaying it.
std::uint64_t largest_fitting(const ModelSpec& m, const TrainConfig& norm, const GpuSpec& gpu,
                              Bytes budget, std::uint64_t hi,
                              const std::function<void(TrainConfig&, std::uint64_t)>& set,
                              std::uint64_t* probes, std::uint64_t* device_probes,
                              std::optional<KnownFit> known = std::nullopt);

}  // namespace actmem

// What the GPU really holds during a training step: the step's tensors replayed through the
// caching-allocator model (allocator.hpp) for allocated and reserved memory per pipeline stage,
// plus the fixed costs no tensor accounts for (CUDA context, loaded kernels, NCCL communicators,
// the driver's reserved memory), and the verdict on that total against the capacity the driver
// reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actmem/config/config.hpp"
#include "actmem/core/checked.hpp"
#include "actmem/core/error.hpp"
#include "actmem/device/allocator.hpp"

namespace actmem {

struct Setup;
struct GpuSpec;

// One fixed cost on every GPU of the job, with its formula and where its figure comes from.
struct DeviceOverhead {
  std::string name;  // e.g. "cuda.context", "nccl.dp"
  Bytes bytes = 0;
  std::string formula;  // the numbers behind it, e.g. "2 channels x 9,830,400 B ..."
  std::string source;
};

// One pipeline stage's steady-state step as the allocator sees it.
struct StageDevice {
  std::uint64_t stage = 0;
  Bytes allocated_peak_bytes = 0;  // torch.cuda.max_memory_allocated() of the second step
  Bytes reserved_peak_bytes = 0;   // torch.cuda.max_memory_reserved()
  Bytes requested_peak_bytes = 0;  // the requests before rounding
  std::uint64_t segments_peak = 0;
  std::uint64_t allocations = 0;  // tensor allocations of one step
  std::uint64_t ooms = 0;         // requests the capacity could not serve, even after flushing
  // Reserved at the step's end by the segments of other CUDA streams than the default: FSDP2's
  // all-gather copy-in stream (device/stream.cpp), cached apart from the default stream's blocks.
  Bytes side_stream_reserved_bytes = 0;
  AllocatorStats stats;
};

struct DeviceMemory {
  std::vector<StageDevice> stages;  // the stages replayed (every one, or the most loaded)
  std::size_t worst = 0;            // the stage with the largest total
  std::vector<DeviceOverhead> overheads;
  Bytes overhead_bytes = 0;
  Bytes allocated_peak_bytes = 0;  // the worst stage's
  Bytes reserved_peak_bytes = 0;
  Bytes total_bytes = 0;     // reserved peak + overheads: what nvidia-smi shows as used
  Bytes capacity_bytes = 0;  // the GPU's total as nvidia-smi reports it (0: no GPU given)
  std::string capacity_source;
  bool fits = false;           // total_bytes <= capacity_bytes and no request failed
  bool out_of_memory = false;  // replayed within the capacity, a request found no room
  std::int64_t headroom_bytes = 0;
  std::string allocator;                      // the settings simulated, as PYTORCH_CUDA_ALLOC_CONF
  std::uint64_t micro_batches_simulated = 0;  // of the step's; fewer once the peaks settle
  std::vector<std::string> notes;  // what the figures assume (steady state, unknown GPU figures)
  const StageDevice& worst_stage() const { return stages[worst]; }
};

// The fixed costs of one GPU of the job under `s`'s configuration on `gpu` (null: none given).
std::vector<DeviceOverhead> device_overheads(const Setup& s, const GpuSpec* gpu);

// The capacity the verdict compares with: the total the driver reports when the GPU preset
// carries it, else its nominal memory (a budget given by the user is taken as is); its source.
Bytes device_capacity(const GpuSpec& gpu, std::string* source);

// Replays two steps of every pipeline stage of `s` (the first warms the cache, as a real job's
// first step does; the second is reported) through the allocator model, adds the overheads and,
// with a GPU, decides the verdict. `policy` (null: the setup's own) evaluates another recompute
// policy on the same setup (the planner's candidates). Without `all_stages` only the stage with
// the largest tensor peak is replayed (what searches need: the most loaded stage's verdict).
Result<DeviceMemory> device_memory(const Setup& s, const GpuSpec* gpu,
                                   const Recompute* policy = nullptr, bool all_stages = true);

// device_memory(s, &gpu, policy, false) for searches, which need the verdict: where the step fits
// the same answer; where it does not, only `fits` (false), `out_of_memory`, the overheads and the
// capacity are set, the replay having ended at its first request with no room (without the
// second replay that says by how much it is short).
Result<DeviceMemory> device_verdict(const Setup& s, const GpuSpec& gpu,
                                    const Recompute* policy = nullptr, bool all_stages = false);

// Every micro-batch of both steps of every stage replayed, nothing shortened (no settled peaks, no
// period proof, no shortened run's failed request): the reference device_memory's shortened
// replays are checked against (tests/device/test_device_periodic.cpp, test_device_verdict.cpp).
// Within `capacity` (0: none) each stage stops at its first request that finds no room, as the
// verdict's replay of a whole step does. O(m) per stage: for checks, not for searches.
Result<std::vector<StageDevice>> device_replay_full(const Setup& s,
                                                    const Recompute* policy = nullptr,
                                                    Bytes capacity = 0);

// The sum of device_overheads(s, gpu) (checked: an overflow returns kMaxBytes).
Bytes device_overhead_bytes(const Setup& s, const GpuSpec* gpu);

}  // namespace actmem

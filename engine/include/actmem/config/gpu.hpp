// A GPU as a run sees it: its nominal and reported memory, what the driver and the CUDA context
// keep, its bf16 throughput and host link (presets/gpus/*.json, read by read/config.cpp). Every
// stage that compares bytes with a device (the step's offload timing, the device replay, fit,
// plan, advise, the report) reads this one type.
#pragma once

#include <string>

#include "actmem/core/checked.hpp"

namespace actmem {

struct GpuSpec {
  std::string id;
  std::string name;
  Bytes memory_bytes = 0;  // the nominal memory (the tensor verdict, peak_bytes)
  std::string source;
  // As the driver reports it (nvidia-smi's "Total"; 0: not known for this GPU), and what the
  // driver keeps of it (nvidia-smi -q's "Reserved": never usable by a process).
  Bytes reported_bytes = 0;
  Bytes driver_reserved_bytes = 0;
  std::string reported_source;
  // The CUDA context and PyTorch's start-up on this GPU (0: not measured for this GPU).
  Bytes context_bytes = 0;
  std::string context_source;
  // Dense bf16 tensor FLOPs (TFLOP/s) and the host link's bandwidth per direction (GB/s, 10^9
  // B/s), for the offload timing (offload.hpp); 0 when the preset does not give them.
  double bf16_tflops = 0;
  double host_link_gbs = 0;
  std::string host_link_source;
  // Host memory an offloading job has per GPU (the reference system's over its GPUs; 0: unknown).
  Bytes host_memory_bytes = 0;
  std::string host_memory_source;
};

}  // namespace actmem

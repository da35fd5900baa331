// The CPU reference device: plain C++ loops on host memory, fp32 or fp64, accumulating in double.
#pragma once

#include <memory>

#include "device.hpp"

namespace actmem::exec {

// `elem` is kF32 or kF64: every floating buffer of the run has that type.
std::unique_ptr<Device> make_cpu_device(Elem elem);

}  // namespace actmem::exec

namespace actmem::exec {
// The fp64 CPU device every reference and finite-difference run uses.
inline std::unique_ptr<Device> make_cpu_reference() {
  return make_cpu_device(Elem::kF64);
}
}  // namespace actmem::exec

// The CUDA device: the same kernel set on one GPU (cuBLAS for the GEMMs), fp32 or bf16 storage
// with fp32 math, every cudaMalloc through the tracker.
#pragma once

#include <memory>
#include <string>

#include "device.hpp"

namespace actmem::exec {

bool cuda_available();
std::string cuda_status();  // why there is no device, or which one there is
// `elem` is kF32 or kBf16 (activations, parameters and gradients); logits and the flash
// statistics are fp32 either way.
std::unique_ptr<Device> make_cuda_device(Elem elem);

}  // namespace actmem::exec

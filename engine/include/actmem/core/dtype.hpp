// Element types of saved tensors and of parameter/optimizer storage, with their byte widths.
#pragma once

#include <cstdint>
#include <string>

namespace actmem {

enum class DType { kFp32, kBf16, kFp16, kFp8, kBool, kInt64, kInt8, kInt32, kComplex64 };

constexpr std::uint64_t dtype_bytes(DType t) {
  switch (t) {
    case DType::kFp32:
      return 4;
    case DType::kBf16:
      return 2;
    case DType::kFp16:
      return 2;
    case DType::kFp8:
      return 1;
    case DType::kBool:
      return 1;
    case DType::kInt64:
      return 8;
    case DType::kInt8:
      return 1;
    case DType::kInt32:
      return 4;
    case DType::kComplex64:  // two fp32 (RoPE tables kept as freqs_cis)
      return 8;
  }
  return 0;
}

const char* dtype_name(DType t);
// Parses the user-facing names fp32|bf16|fp16|fp8 (and float32/bfloat16/float16 aliases as HF
// writes them in torch_dtype). Returns false for anything else.
bool parse_float_dtype(const std::string& s, DType* out);

}  // namespace actmem

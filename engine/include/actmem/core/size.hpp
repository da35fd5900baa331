// Byte sizes as people write them ("80GiB", "79.6 GiB", "85899345920"): parsed exactly, in integer
// arithmetic (no double), the one parser the CLI's --gpu-memory and the config's gpu_memory share.
#pragma once

#include <string>
#include <string_view>

#include "actmem/core/checked.hpp"

namespace actmem {

// Decimal digits, an optional '.' and fraction digits, optional spaces, and an optional unit: B,
// KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000). The value is computed
// exactly and rounded down to whole bytes once; it must be at least 1 and at most kMaxBytes.
// Anything else (a sign, two dots, an unknown unit, trailing text) is refused.
bool parse_size(std::string_view text, Bytes* out);

// What parse_size accepts, for messages.
constexpr const char* kSizeAllowed =
    "a positive number of bytes, or a number with B, KiB, MiB, GiB, TiB, KB, MB, GB or TB "
    "(e.g. 80GiB, 79.6GiB)";

}  // namespace actmem

// Internal: the one wording of an activation-byte overflow, naming the input a user changes.
#pragma once

#include <string>

#include "actmem/config/config.hpp"
#include "actmem/core/error.hpp"

namespace actmem::detail {

// `what` is the total that overflowed (e.g. "timeline.peak_bytes"); the field is config.seq, the
// input every activation total grows with, as the inventory's own overflow names it.
inline Error activation_overflow(const std::string& what, const TrainConfig& c) {
  return make_error("overflow", "config.seq",
                    "config.seq: " + what + " would exceed 2^63-1 bytes at micro_batch=" +
                        std::to_string(c.micro_batch) + ", seq=" + std::to_string(c.seq) +
                        "; reduce config.seq or config.micro_batch (or the model size)");
}

}  // namespace actmem::detail

// Overflow-checked 64-bit byte arithmetic: a product that would pass INT64_MAX is an error, never a
// wrap.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace actmem {

using Bytes = std::uint64_t;

// Byte counts are kept at or below INT64_MAX so they survive signed consumers (JSON int64,
// headroom arithmetic) unchanged.
constexpr Bytes kMaxBytes = static_cast<Bytes>(std::numeric_limits<std::int64_t>::max());

// Accumulates arithmetic and remembers the first field whose value overflowed; callers check
// `overflowed()` once at the end and turn it into an Error naming that field.
class Checked {
 public:
  Bytes mul(Bytes a, Bytes b, const char* field) {
    // Both factors below 2^32 (nearly every product): it cannot wrap, so only the INT64_MAX bound
    // is checked. WebAssembly lowers the overflow builtin to a 128-bit multiply call (__multi3),
    // which the advisor's search paid for in every walk.
    if (((a | b) >> 32) == 0) return a * b > kMaxBytes ? fail(field) : a * b;
    Bytes out = 0;
    if (__builtin_mul_overflow(a, b, &out) || out > kMaxBytes) return fail(field);
    return out;
  }
  Bytes add(Bytes a, Bytes b, const char* field) {
    Bytes out = 0;
    if (__builtin_add_overflow(a, b, &out) || out > kMaxBytes) return fail(field);
    return out;
  }
  // a + b for signed offsets (the timeline's kept-bytes deltas); an overflow is recorded like a
  // byte overflow.
  std::int64_t add_signed(std::int64_t a, std::int64_t b, const char* field) {
    std::int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out)) return static_cast<std::int64_t>(fail(field));
    return out;
  }
  // a · b for signed steps (a run of repeated schedule periods applied in bulk).
  std::int64_t mul_signed(std::int64_t a, std::int64_t b, const char* field) {
    std::int64_t out = 0;
    if (__builtin_mul_overflow(a, b, &out)) return static_cast<std::int64_t>(fail(field));
    return out;
  }
  bool overflowed() const { return !field_.empty(); }
  const std::string& field() const { return field_; }

 private:
  Bytes fail(const char* field) {
    if (field_.empty()) field_ = field;
    return 0;
  }
  std::string field_;
};

// ceil(a / b) for b > 0, without the a + b - 1 overflow.
constexpr Bytes ceil_div(Bytes a, Bytes b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace actmem

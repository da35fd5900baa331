// Exact byte-size parsing (size.hpp): integer and fraction digits scaled by the unit in 128-bit
// integers, so 9007199254740993 stays 9007199254740993, 1.5KiB is 1536 and 79.6GiB is
// 85469849190 (the fraction of a byte dropped once, at the end).
#include "actmem/core/size.hpp"

namespace actmem {

namespace {

__extension__ typedef unsigned __int128 U128;  // GCC/Clang; exact products of two 64-bit values

bool unit_bytes(std::string_view u, U128* out) {
  struct Unit {
    const char* name;
    unsigned long long bytes;
  };
  static const Unit kUnits[] = {{"", 1},
                                {"B", 1},
                                {"KiB", 1ull << 10},
                                {"MiB", 1ull << 20},
                                {"GiB", 1ull << 30},
                                {"TiB", 1ull << 40},
                                {"KB", 1000ull},
                                {"MB", 1000ull * 1000},
                                {"GB", 1000ull * 1000 * 1000},
                                {"TB", 1000ull * 1000 * 1000 * 1000}};
  for (const Unit& x : kUnits)
    if (u == x.name) {
      *out = x.bytes;
      return true;
    }
  return false;
}

}  // namespace

bool parse_size(std::string_view s, Bytes* out) {
  std::size_t i = 0;
  U128 whole = 0, frac = 0, scale = 1;
  const U128 limit = static_cast<U128>(kMaxBytes);
  std::size_t digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    whole = whole * 10 + static_cast<unsigned>(s[i] - '0');
    if (whole > limit) return false;
    ++i;
    ++digits;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (scale > limit) return false;  // more fraction digits than any byte count can need
      frac = frac * 10 + static_cast<unsigned>(s[i] - '0');
      scale *= 10;
      ++i;
      ++digits;
    }
  }
  if (digits == 0) return false;
  while (i < s.size() && s[i] == ' ') ++i;
  U128 unit = 0;
  if (!unit_bytes(s.substr(i), &unit)) return false;
  const U128 bytes = whole * unit;
  if (bytes > limit) return false;
  // A fraction of a byte is dropped (79.6GiB = 85469849190.4 bytes -> 85469849190): exact, then
  // rounded down once.
  const U128 total = bytes + frac * unit / scale;
  if (total == 0 || total > limit) return false;
  *out = static_cast<Bytes>(total);
  return true;
}

}  // namespace actmem

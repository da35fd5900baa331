// The subset of Python's pickle format that torch.cuda.memory._snapshot() files use (protocols 2
// to 5: dicts, lists, tuples, sets, ints, floats, strings, bytes, booleans, None and the memo),
// read without Python into a flat arena of values. No object construction, no globals: a pickle
// that names a class or function is refused, so a hostile file can only fail to parse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actmem/core/error.hpp"

namespace actmem {

// Bounds on what one file may hold (docs/reliability.md): real snapshots are hundreds of MB.
constexpr std::uint64_t kMaxSnapshotBytes = std::uint64_t{1} << 30;  // 1 GiB
constexpr std::uint64_t kMaxPickleValues = std::uint64_t{1} << 26;   // 67 million values
constexpr std::uint64_t kMaxPickleStack = std::uint64_t{1} << 20;    // open marks and stack items

class Pickle {
 public:
  using Id = std::uint32_t;
  static constexpr Id kNone = 0;  // the one None value; every file has it at index 0
  // kBigInt: an integer outside int64 (PyTorch 2.11 writes a frame's unknown line as 2**64 - 1);
  // its value is not kept, and no reader takes it for a number.
  enum class Kind : std::uint8_t {
    kNone,
    kBool,
    kInt,
    kBigInt,
    kFloat,
    kStr,
    kBytes,
    kList,
    kTuple,
    kDict
  };
  struct Value {
    Kind kind = Kind::kNone;
    bool flag = false;      // kBool
    std::int64_t i = 0;     // kInt
    double f = 0;           // kFloat
    std::string s;          // kStr, kBytes
    std::vector<Id> items;  // kList, kTuple; kDict: key, value, key, value, ...
  };

  // Parses `bytes` (the whole file); an error names the byte offset and what was wrong.
  static Result<Pickle> parse(std::string_view bytes);

  Id root() const { return root_; }
  const Value& at(Id id) const { return values_[id]; }
  // A dict's value for a string key, or kNone (also when `dict` is not a dict).
  Id get(Id dict, std::string_view key) const;
  bool is(Id id, Kind k) const { return values_[id].kind == k; }
  // An int value (bools count as 0/1), or `fallback` for anything else.
  std::int64_t int_or(Id id, std::int64_t fallback) const;
  const std::string& str(Id id) const;  // "" unless a string
  std::size_t size() const { return values_.size(); }

 private:
  std::vector<Value> values_;
  Id root_ = kNone;
};

}  // namespace actmem

// One table per enum: the names users type, the name written back, and the listing every error
// message and the page's option lists use (names.cpp holds the tables).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace actmem {

template <class E>
struct EnumName {
  E value;
  const char* name;
  bool listed = true;  // false for accepted aliases ("adam", "bfloat16"), never written back
};

// A table as a view (a pointer and a count, cheap to copy): its entries and their count.
template <class E>
struct EnumTable {
  const EnumName<E>* entries;
  std::size_t size;

  const char* name(E v) const {
    for (std::size_t i = 0; i < size; ++i)
      if (entries[i].value == v && entries[i].listed) return entries[i].name;
    return "?";
  }
  bool parse(const std::string& s, E* out) const {
    for (std::size_t i = 0; i < size; ++i)
      if (s == entries[i].name) {
        *out = entries[i].value;
        return true;
      }
    return false;
  }
  // "a, b, c": the listed names in table order.
  std::string list() const {
    std::string s;
    for (std::size_t i = 0; i < size; ++i)
      if (entries[i].listed) s += (s.empty() ? "" : ", ") + std::string(entries[i].name);
    return s;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (std::size_t i = 0; i < size; ++i)
      if (entries[i].listed) v.push_back(entries[i].name);
    return v;
  }
};

enum class Profile;
enum class Attention;
enum class Optimizer;
enum class Schedule;
enum class FfnType;
enum class NormType;
enum class PosEncoding;
enum class BlockLayout;
enum class DType;
enum class Framework;
enum class ShardGroup;
enum class Float8;
enum class OptimizerImpl;

EnumTable<Profile> profile_table();
EnumTable<Attention> attention_table();
EnumTable<Optimizer> optimizer_table();
EnumTable<OptimizerImpl> optimizer_impl_table();
EnumTable<Schedule> schedule_table();
EnumTable<FfnType> ffn_table();
EnumTable<NormType> norm_table();
EnumTable<PosEncoding> pos_table();
EnumTable<BlockLayout> block_table();
EnumTable<DType> float_dtype_table();  // the dtypes a config may name
EnumTable<Framework> framework_table();
EnumTable<ShardGroup> shard_group_table();
EnumTable<Float8> float8_table();

// The recompute policies as a user writes them (config.recompute), for listings.
std::string recompute_names();

}  // namespace actmem

// Internal: the part of TOML 1.0 (toml.io/en/v1.0.0) that launch configurations use, read into a
// JSON object of tables: [table] and [dotted.table] headers, bare, quoted and dotted keys, basic
// and literal strings, decimal integers (64-bit, checked), floats, booleans and arrays of those.
// What a config file has no use for (multi-line strings, inline tables, arrays of tables, dates,
// hex/octal/binary integers) is refused by line, never guessed at. Bounded: kMaxTomlBytes of
// text, kMaxTomlValues values, arrays nested kMaxTomlDepth deep.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"

namespace actmem::detail {

constexpr std::size_t kMaxTomlBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxTomlValues = std::size_t{1} << 16;
constexpr std::size_t kMaxTomlDepth = 8;

// The document as nested JSON objects; errors name `field` and the line ("field: line 3: ...").
// Floats that are not finite (inf, nan) are kept as the strings "inf", "-inf" and "nan".
Result<nlohmann::json> parse_toml(const std::string& text, const std::string& field);

}  // namespace actmem::detail

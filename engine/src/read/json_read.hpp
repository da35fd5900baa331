// Internal: typed, exception-free field readers over nlohmann::json with field-named errors.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/core/text.hpp"

// Returns the error of a reader call from the enclosing function (which returns Result<T>).
#define ACTMEM_TRY(expr)                  \
  do {                                    \
    if (auto err_ = (expr)) return *err_; \
  } while (0)

namespace actmem::detail {

using nlohmann::json;

inline std::string kind_of(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

inline std::string short_dump(const json& v) {
  std::string s = v.dump(-1, ' ', true, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// What a wrong-typed value was, with the value itself when it is a scalar (escaped, at most 40
// characters): "a string \"0x10\"", "a boolean true", "an array".
inline std::string got(const json& v) {
  if (v.is_array() || v.is_object() || v.is_null()) return kind_of(v);
  // Python's non-finite tokens arrive as strings of their name (parse_json_text).
  if (v.is_string() && (v == "NaN" || v == "Infinity" || v == "-Infinity"))
    return v.get<std::string>() + " (not a finite number)";
  return kind_of(v) + " " + short_dump(v);
}

// "model.<key>: <its value> <why>": a model key whose value is read but not modelled (the family
// readers' refusals; the key must be present).
inline Error refuse_value(const json& j, const char* key, const std::string& why) {
  return make_error("unsupported", std::string("model.") + key,
                    std::string("model.") + key + ": " + short_dump(j[key]) + " " + why);
}

// Reads a positive (or, with allow_zero, non-negative) integer; 4096.0 is accepted, 4096.5 is not.
inline std::optional<Error> read_uint(const json& v, const std::string& field, std::uint64_t* out,
                                      bool allow_zero = false) {
  const std::string need = allow_zero ? "a non-negative integer" : "a positive integer";
  if (v.is_number_unsigned()) {
    *out = v.get<std::uint64_t>();
  } else if (v.is_number_integer()) {
    const std::int64_t i = v.get<std::int64_t>();
    if (i < 0)
      return make_error("invalid_value", field,
                        field + ": must be " + need + ", got " + std::to_string(i));
    *out = static_cast<std::uint64_t>(i);
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < 0 || d != std::floor(d) || d >= 9.2e18)
      return make_error("invalid_value", field,
                        field + ": must be " + need + ", got " + short_dump(v));
    *out = static_cast<std::uint64_t>(d);
  } else {
    return make_error("wrong_type", field, field + ": must be " + need + ", got " + got(v));
  }
  if (*out == 0 && !allow_zero)
    return make_error("invalid_value", field, field + ": must be " + need + ", got 0");
  return std::nullopt;
}

inline std::optional<Error> read_double(const json& v, const std::string& field, double* out) {
  if (!v.is_number())
    return make_error("wrong_type", field, field + ": must be a number, got " + got(v));
  *out = v.get<double>();
  if (!std::isfinite(*out)) return make_error("invalid_value", field, field + ": must be finite");
  return std::nullopt;
}

inline std::optional<Error> read_bool(const json& v, const std::string& field, bool* out) {
  if (!v.is_boolean())
    return make_error("wrong_type", field, field + ": must be true or false, got " + got(v));
  *out = v.get<bool>();
  return std::nullopt;
}

inline std::optional<Error> read_string(const json& v, const std::string& field, std::string* out) {
  if (!v.is_string())
    return make_error("wrong_type", field, field + ": must be a string, got " + kind_of(v));
  *out = v.get<std::string>();
  return std::nullopt;
}

// Whether `k` is one of a fixed list of names (the family readers' key lists).
template <std::size_t N>
bool listed(const char* const (&list)[N], const std::string& k) {
  for (const char* s : list)
    if (k == s) return true;
  return false;
}

// Closest allowed key by edit distance, for "did you mean" hints on unknown keys (json_keys.cpp).
std::string closest(const std::string& key, const char* const* allowed, std::size_t n);

// A rate in [0, 1) (the dropout keys of models and configs alike).
inline std::optional<Error> read_prob(const json& v, const std::string& field, double* out) {
  ACTMEM_TRY(read_double(v, field, out));
  if (*out < 0.0 || *out >= 1.0)
    return make_error("invalid_value", field, field + ": must be in [0, 1), got " + short_dump(v));
  return std::nullopt;
}

// A name read by `parse` (one of names.hpp's tables), refused with the list of what is allowed.
template <typename Parse, typename T>
std::optional<Error> read_choice(const json& v, const std::string& field, Parse parse, T* out,
                                 const std::string& allowed) {
  std::string s;
  ACTMEM_TRY(read_string(v, field, &s));
  if (!parse(s, out))
    return make_error("invalid_value", field,
                      field + ": '" + shown_text(s) + "' is not allowed; allowed: " + allowed);
  return std::nullopt;
}

// "PREFIX.KEY: unknown key (did you mean 'X'?); allowed: a, b, c" (`tail` replaces the allowed
// list when given; `what` replaces "unknown key").
std::optional<Error> unknown_key(const std::string& prefix, const std::string& key,
                                 const char* const* allowed, std::size_t n,
                                 const char* what = "unknown key", const std::string& tail = "");

// The one key check for every object the engine reads: the first key not in `allowed` is an
// unknown_key error.
std::optional<Error> check_keys(const json& obj, const std::string& prefix,
                                const char* const* allowed, std::size_t n,
                                const char* what = "unknown key", const std::string& tail = "");

}  // namespace actmem::detail

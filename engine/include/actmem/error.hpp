// Errors as values: every engine entry point returns Result<T>, never throws across its API.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace actmem {

// code: a stable machine-readable kind ("invalid_value", "unknown_key", "overflow", ...);
// field: the dotted path of the offending input ("config.tp", "model.num_attention_heads");
// message: one human line naming the value and what is allowed.
struct Error {
  std::string code;
  std::string field;
  std::string message;
};

template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose, like std::optional
  Result(Error error) : error_(std::move(error)) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const T& value() const { return *value_; }
  T& value() { return *value_; }
  const Error& error() const { return error_; }

 private:
  std::optional<T> value_;
  Error error_;
};

inline Error make_error(std::string code, std::string field, std::string message) {
  return Error{std::move(code), std::move(field), std::move(message)};
}

}  // namespace actmem

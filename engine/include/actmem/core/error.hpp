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

// An error about a model read from somewhere other than the request's "model" (a multimodal
// wrapper's text_config): every "model.KEY" path in its field and message, where a path starts
// (at the beginning, after a space or a parenthesis), becomes "ROOT.KEY". The model's metadata
// stays where it was given.
inline Error nest_model_fields(Error e, const std::string& root) {
  if (root == "model") return e;
  auto nest = [&](const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
      const bool starts = i == 0 || s[i - 1] == ' ' || s[i - 1] == '(';
      if (starts && s.compare(i, 6, "model.") == 0 && s.compare(i, 14, "model.metadata") != 0 &&
          s.compare(i, root.size() + 1, root + ".") != 0) {
        out += root + ".";
        i += 6;
      } else {
        out += s[i++];
      }
    }
    return out;
  };
  e.field = nest(e.field);
  e.message = nest(e.message);
  return e;
}

}  // namespace actmem

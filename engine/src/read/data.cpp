// The data command's request (data_read.hpp): sequence lengths from a list, a histogram or a
// lengths file's text, each checked against the bounds of data.hpp, and how they are batched.
#include <algorithm>
#include <string_view>

#include "actmem/core/limits.hpp"
#include "read/data_read.hpp"
#include "read/json_read.hpp"

namespace actmem::detail {

namespace {

std::optional<Error> too_many(const std::string& field) {
  return make_error("invalid_value", field,
                    field + ": more than " + std::to_string(kMaxDataSequences) +
                        " sequences; allowed: at most that many (docs/reliability.md)");
}

std::optional<Error> read_length(const json& v, const std::string& field, std::uint64_t* out) {
  ACTMEM_TRY(read_uint(v, field, out));
  if (*out > kMaxDataLength)
    return make_error("invalid_value", field,
                      field + ": " + std::to_string(*out) + " tokens; allowed: 1 to " +
                          std::to_string(kMaxDataLength));
  return std::nullopt;
}

// A line of digits alone, read without a JSON parser (a 100,000-line file is mostly these).
bool plain_integer(std::string_view s, std::uint64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  std::uint64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(ch - '0');
  }
  *out = v;
  return true;
}

// One line of a lengths file: an integer, or an object with "length" or "input_ids".
std::optional<Error> read_line(std::string_view line, const std::string& field,
                               std::vector<std::uint64_t>* out) {
  std::uint64_t v = 0;
  if (plain_integer(line, &v)) {
    if (v == 0 || v > kMaxDataLength)
      return make_error("invalid_value", field,
                        field + ": " + std::to_string(v) + " tokens; allowed: 1 to " +
                            std::to_string(kMaxDataLength));
    out->push_back(v);
    return std::nullopt;
  }
  const json j = json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_number()) {
    ACTMEM_TRY(read_length(j, field, &v));
  } else if (j.is_object() && j.contains("length")) {
    ACTMEM_TRY(read_length(j["length"], field + ".length", &v));
  } else if (j.is_object() && j.contains("input_ids") && j["input_ids"].is_array()) {
    ACTMEM_TRY(read_length(json(j["input_ids"].size()), field + ".input_ids", &v));
  } else if (j.is_object() && j.contains("prompt") && j.contains("response")) {
    // An RL sample: its prompt and its response tokens, one sequence of both.
    std::uint64_t p = 0, r = 0;
    ACTMEM_TRY(read_length(j["prompt"], field + ".prompt", &p));
    ACTMEM_TRY(read_length(j["response"], field + ".response", &r));
    ACTMEM_TRY(read_length(json(p + r), field, &v));
  } else {
    return make_error("invalid_value", field,
                      field + ": '" + shown_text(line) +
                          "' is not a length; allowed: a positive integer, or an object with "
                          "\"length\", \"input_ids\" or \"prompt\" and \"response\"");
  }
  out->push_back(v);
  return std::nullopt;
}

std::optional<Error> read_array(const json& a, const std::string& field,
                                std::vector<std::uint64_t>* out) {
  if (a.size() > kMaxDataSequences) return too_many(field);
  out->reserve(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::uint64_t v = 0;
    ACTMEM_TRY(read_length(a[i], field + "[" + std::to_string(i) + "]", &v));
    out->push_back(v);
  }
  return std::nullopt;
}

// A lengths file's text: a JSON array, or JSONL (blank lines skipped; lines counted from 1).
std::optional<Error> read_text(const std::string& text, std::vector<std::uint64_t>* out) {
  if (text.size() > kMaxJsonTextBytes)
    return make_error("invalid_value", "data.lengths",
                      "data.lengths: " + std::to_string(text.size()) +
                          " bytes of text; allowed: at most " + std::to_string(kMaxJsonTextBytes));
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start != std::string::npos && text[start] == '[') {
    const json a = json::parse(text, nullptr, false);
    if (!a.is_array())
      return make_error("invalid_value", "data.lengths",
                        "data.lengths: the text starts with '[' but is not a JSON array");
    return read_array(a, "data.lengths", out);
  }
  std::size_t line_no = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + at, nl - at);
    at = nl + 1;
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty()) continue;
    if (out->size() == kMaxDataSequences) return too_many("data.lengths");
    ACTMEM_TRY(read_line(line, "data.lengths line " + std::to_string(line_no), out));
  }
  return std::nullopt;
}

// [[length, count], ...]: each length repeated count times, in the order listed.
std::optional<Error> read_histogram(const json& h, std::vector<std::uint64_t>* out) {
  if (!h.is_array() || h.empty())
    return make_error(
        "wrong_type", "data.histogram",
        "data.histogram: must be a non-empty array of [length, count] pairs, got " + got(h));
  for (std::size_t i = 0; i < h.size(); ++i) {
    const std::string at = "data.histogram[" + std::to_string(i) + "]";
    if (!h[i].is_array() || h[i].size() != 2)
      return make_error("wrong_type", at,
                        at + ": must be a [length, count] pair, got " + got(h[i]));
    std::uint64_t len = 0, count = 0;
    ACTMEM_TRY(read_length(h[i][0], at + "[0]", &len));
    ACTMEM_TRY(read_uint(h[i][1], at + "[1]", &count));
    if (count > kMaxDataSequences - out->size()) return too_many("data.histogram");
    out->insert(out->end(), count, len);
  }
  return std::nullopt;
}

std::optional<Error> read_batching(const json& v, Batching* out) {
  std::string s;
  ACTMEM_TRY(read_string(v, "data.batching", &s));
  for (int i = 0; i < 3; ++i)
    if (s == kBatchingNames[i]) {
      *out = static_cast<Batching>(i);
      return std::nullopt;
    }
  return make_error("invalid_value", "data.batching",
                    "data.batching: '" + shown_text(s) +
                        "' is not allowed; allowed: padded, padding_free, token_budget");
}

}  // namespace

Result<DataSpec> read_data_spec(const json& data) {
  if (!data.is_object())
    return make_error("wrong_type", "data",
                      "data: must be an object with lengths or histogram, got " + got(data));
  static const char* const kKeys[] = {
      "lengths",        "histogram",          "batching", "max_tokens", "pad_to_multiple_of",
      "step_sequences", "iteration_sequences"};
  ACTMEM_TRY(check_keys(data, "data", kKeys, 7));
  DataSpec d;
  const bool lengths = data.contains("lengths"), histogram = data.contains("histogram");
  if (lengths == histogram)
    return make_error(lengths ? "invalid_value" : "missing_key", "data.lengths",
                      "data.lengths: give the lengths or a histogram, one of the two");
  if (lengths) {
    const json& l = data["lengths"];
    if (l.is_string())
      ACTMEM_TRY(read_text(l.get_ref<const std::string&>(), &d.lengths));
    else if (l.is_array())
      ACTMEM_TRY(read_array(l, "data.lengths", &d.lengths));
    else
      return make_error(
          "wrong_type", "data.lengths",
          "data.lengths: must be an array of lengths or a lengths file's text, got " + got(l));
  } else {
    ACTMEM_TRY(read_histogram(data["histogram"], &d.lengths));
  }
  if (d.lengths.empty())
    return make_error("invalid_value", "data.lengths", "data.lengths: no sequence lengths given");
  if (data.contains("batching")) ACTMEM_TRY(read_batching(data["batching"], &d.batching));
  if (data.contains("pad_to_multiple_of"))
    ACTMEM_TRY(
        read_length(data["pad_to_multiple_of"], "data.pad_to_multiple_of", &d.pad_to_multiple_of));
  const bool budget = d.batching == Batching::kTokenBudget;
  for (const char* k : {"max_tokens", "step_sequences", "iteration_sequences"}) {
    if (!data.contains(k)) continue;
    const std::string field = std::string("data.") + k;
    if (!budget)
      return make_error("invalid_value", field,
                        field +
                            ": read only with batching token_budget (the other batchings take "
                            "config.micro_batch sequences per micro-batch)");
    const std::string key = k;
    std::uint64_t* dst = key == "max_tokens"       ? &d.max_tokens
                         : key == "step_sequences" ? &d.step_sequences
                                                   : &d.iteration_sequences;
    ACTMEM_TRY(read_length(data[k], field, dst));
  }
  if (budget && d.max_tokens == 0)
    return make_error("missing_key", "data.max_tokens",
                      "data.max_tokens: batching token_budget needs the budget per micro-batch "
                      "(verl's ppo_max_token_len_per_gpu)");
  return d;
}

}  // namespace actmem::detail

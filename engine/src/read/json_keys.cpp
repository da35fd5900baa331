// The one check of a JSON object's keys, used for every object the engine reads (request, model,
// metadata, layer kinds, stack runs, config, GPU, sweep): the first unknown key is an error naming
// it, with the closest allowed key as a "did you mean" hint.
#include <algorithm>
#include <vector>

#include "actmem/core/text.hpp"
#include "read/json_read.hpp"

namespace actmem::detail {

namespace {

// Keys longer than this get no hint: the distance is O(|key| x |allowed|) per allowed key.
constexpr std::size_t kHintMaxKey = kPlainTextMax;

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string closest(const std::string& key, const char* const* allowed, std::size_t n) {
  std::string best;
  if (key.size() > kHintMaxKey) return best;
  std::size_t bd = 4;  // only suggest close matches
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t d = edit_distance(key, allowed[i]);
    if (d < bd) bd = d, best = allowed[i];
  }
  return best;
}

std::optional<Error> unknown_key(const std::string& prefix, const std::string& key,
                                 const char* const* allowed, std::size_t n, const char* what,
                                 const std::string& tail) {
  const std::string field = prefix.empty() ? shown_text(key) : prefix + "." + shown_text(key);
  const std::string hint = closest(key, allowed, n);
  std::string list;
  for (std::size_t i = 0; i < n; ++i) list += (i ? ", " : "") + std::string(allowed[i]);
  return make_error("unknown_key", field,
                    field + ": " + what + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                        "; " + (tail.empty() ? "allowed: " + list : tail));
}

std::optional<Error> check_keys(const json& obj, const std::string& prefix,
                                const char* const* allowed, std::size_t n, const char* what,
                                const std::string& tail) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::none_of(allowed, allowed + n, [&](const char* k) { return it.key() == k; }))
      return unknown_key(prefix, it.key(), allowed, n, what, tail);
  return std::nullopt;
}

}  // namespace actmem::detail

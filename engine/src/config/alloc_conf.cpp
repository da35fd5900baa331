// PYTORCH_CUDA_ALLOC_CONF as PyTorch reads it (c10/core/AllocatorConfig.cpp and
// c10/cuda/CUDAAllocatorConfig.cpp at main@b944315b): comma-separated key:value options. The keys
// that change device memory are read into the allocator model; those that do not (host pinning,
// lock release) are accepted; those the model does not follow are refused by name.
#include <cstdlib>
#include <string>

#include "actmem/config/allocator_config.hpp"
#include "actmem/core/text.hpp"

namespace actmem {

namespace {

std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
  return std::string(s.substr(a, b - a));
}

bool read_count(const std::string& s, std::uint64_t max, std::uint64_t* out) {
  if (s.empty() || s.size() > 12) return false;
  std::uint64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(ch - '0');
  }
  if (v > max) return false;
  *out = v;
  return true;
}

bool power_of_two(std::uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

// "4" or "[256:1,512:2,>:4]": per power-of-two interval from 1 MiB (AllocatorConfig.cpp
// parseRoundUpPower2Divisions); the first listed size also fills every interval below it, ">"
// every interval after the last listed one.
std::string read_divisions(const std::string& v, AllocatorConfig* c) {
  const std::string allowed =
      "a power of two, or a list [MB:N,...,>:N] of power-of-two sizes in MB and power-of-two "
      "divisions";
  if (v.empty() || v[0] != '[') {
    std::uint64_t n = 0;
    if (!read_count(v, 1u << 20, &n) || (n != 0 && !power_of_two(n)))
      return "roundup_power2_divisions: '" + shown_text(v) +
             "' is not allowed; allowed: " + allowed;
    c->roundup_divisions.fill(static_cast<std::uint32_t>(n));
    return "";
  }
  if (v.back() != ']')
    return "roundup_power2_divisions: '" + shown_text(v) +
           "' has no closing ']'; allowed: " + allowed;
  const std::string body = v.substr(1, v.size() - 2);
  std::size_t last = 0;
  bool first = true, any = false;
  std::size_t pos = 0;
  while (pos <= body.size()) {
    const std::size_t comma = body.find(',', pos);
    const std::string item =
        trim(body.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    pos = comma == std::string::npos ? body.size() + 1 : comma + 1;
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos)
      return "roundup_power2_divisions: '" + shown_text(item) +
             "' is not MB:N; allowed: " + allowed;
    const std::string key = trim(item.substr(0, colon)), val = trim(item.substr(colon + 1));
    std::uint64_t n = 0;
    if (!read_count(val, 1u << 20, &n) || (n != 0 && !power_of_two(n)))
      return "roundup_power2_divisions: '" + shown_text(item) +
             "' has no power-of-two division count; "
             "allowed: " +
             allowed;
    if (key == ">") {
      for (std::size_t i = any ? last + 1 : 0; i < kRoundupIntervals; ++i)
        c->roundup_divisions[i] = static_cast<std::uint32_t>(n);
      break;
    }
    std::uint64_t mb = 0;
    if (!read_count(key, std::uint64_t{1} << 40, &mb) || !power_of_two(mb))
      return "roundup_power2_divisions: '" + shown_text(item) +
             "' has no power-of-two size in MB; allowed: " + allowed;
    std::size_t idx = static_cast<std::size_t>(63 - __builtin_clzll(mb));
    if (idx >= kRoundupIntervals) idx = kRoundupIntervals - 1;
    if (first)
      for (std::size_t i = 0; i < idx; ++i) c->roundup_divisions[i] = static_cast<std::uint32_t>(n);
    c->roundup_divisions[idx] = static_cast<std::uint32_t>(n);
    last = idx;
    first = false;
    any = true;
  }
  return "";
}

}  // namespace

std::string parse_alloc_conf(std::string_view text, AllocatorConfig* out) {
  AllocatorConfig c;
  const std::string s(text);
  std::size_t pos = 0;
  while (pos < s.size()) {
    // A list value holds commas: take up to its ']'.
    std::size_t end = s.find(',', pos);
    const std::size_t bracket = s.find('[', pos);
    if (bracket != std::string::npos && (end == std::string::npos || bracket < end)) {
      const std::size_t close = s.find(']', bracket);
      end = close == std::string::npos ? std::string::npos : s.find(',', close);
    }
    const std::string item =
        trim(s.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    pos = end == std::string::npos ? s.size() : end + 1;
    if (item.empty()) continue;
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos)
      return "'" + shown_text(item) + "' is not key:value (e.g. expandable_segments:True)";
    const std::string key = trim(item.substr(0, colon)), val = trim(item.substr(colon + 1));
    std::uint64_t mb = 0;
    if (key == "expandable_segments") {
      if (val != "True" && val != "False")
        return "expandable_segments: '" + shown_text(val) +
               "' is not allowed; allowed: True, False";
      c.expandable_segments = val == "True";
    } else if (key == "max_split_size_mb" || key == "max_non_split_rounding_mb") {
      // PyTorch requires more than kLargeBuffer's 20 MB and caps the value at SIZE_MAX.
      if (!read_count(val, std::uint64_t{1} << 40, &mb) || mb < 20)
        return shown_text(key) + ": '" + shown_text(val) +
               "' is not allowed; allowed: a whole number of MB, at least 20";
      (key == "max_split_size_mb" ? c.max_split_size : c.max_non_split_rounding) = mb << 20;
    } else if (key == "roundup_power2_divisions") {
      const std::string err = read_divisions(val, &c);
      if (!err.empty()) return err;
    } else if (key == "garbage_collection_threshold") {
      // Acts only under a per-process memory fraction (malloc: set_fraction && threshold > 0,
      // CUDACachingAllocator.cpp), which a training job does not set: no effect on the step.
      char* stop = nullptr;
      double t = val.empty() || val.size() > 32 ? -1 : std::strtod(val.c_str(), &stop);
      if (stop != val.c_str() + val.size()) t = -1;
      if (!(t > 0.0 && t < 1.0))
        return "garbage_collection_threshold: '" + shown_text(val) +
               "' is not allowed; allowed: a number "
               "strictly between 0 and 1";
    } else if (key == "backend") {
      if (val != "native")
        return "backend: '" + shown_text(val) +
               "' is not modelled; allowed: native (cudaMallocAsync pools "
               "memory in the driver, not in PyTorch's caching allocator)";
    } else if (key == "release_lock_on_cudamalloc" || key == "pinned_use_cuda_host_register" ||
               key == "pinned_num_register_threads" || key == "pinned_use_background_threads" ||
               key == "graph_capture_record_stream_reuse") {
      // Locking and host (pinned) memory: no effect on device memory.
    } else {
      return "'" + shown_text(key) +
             "' is not a setting the model reads; allowed: expandable_segments, "
             "max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions, "
             "garbage_collection_threshold, backend, "
             "release_lock_on_cudamalloc, pinned_use_cuda_host_register, "
             "pinned_num_register_threads, pinned_use_background_threads";
    }
  }
  *out = c;
  return "";
}

}  // namespace actmem

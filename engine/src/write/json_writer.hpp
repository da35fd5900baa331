// Internal: a streaming JSON writer for the large answers (the estimate), byte-identical to
// nlohmann::json::dump(-1, ' ', false, replace) of the same value: object keys in sorted order
// (fields may be written in any order; each object is sorted when it closes), numbers and strings
// formatted as nlohmann formats them. tests/read/test_json.cpp checks parse(text).dump() == text.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace actmem::detail {

class JsonWriter {
 public:
  std::string out;

  void begin_object() { open('{', true); }
  void end_object() { close('}'); }
  void begin_array() { open('[', false); }
  void end_array() { close(']'); }

  // Starts a field of the innermost object (keys are literals or live until the object closes).
  void key(std::string_view k) {
    Level& l = levels_[depth_ - 1];
    if (l.count++) out += ',';
    l.fields.push_back(Field{k, out.size(), 0});
    string(k);
    out += ':';
  }
  void value(std::uint64_t v) {
    element();
    out += std::to_string(v);
  }
  void value(std::int64_t v) {
    element();
    out += std::to_string(v);
  }
  void value(int v) { value(static_cast<std::int64_t>(v)); }
  void value(bool v) {
    element();
    out += v ? "true" : "false";
  }
  void value(double v) {
    element();
    out += nlohmann::json(v).dump();  // nlohmann's shortest round-trip form
  }
  void value(std::string_view s) {
    element();
    string(s);
  }
  void value(const char* s) { value(std::string_view(s)); }
  void value(const std::string& s) { value(std::string_view(s)); }

  // A value already written as JSON text (another answer nested in this one).
  void raw(std::string_view json_text) {
    element();
    out += json_text;
  }

  template <class T>
  void field(std::string_view k, const T& v) {
    key(k);
    value(v);
  }

 private:
  struct Field {
    std::string_view key;
    std::size_t begin, end;  // the field's text, "key":value, in out
  };
  struct Level {
    bool object = false;
    std::size_t count = 0;
    std::size_t body = 0;  // where the first field starts
    std::vector<Field> fields;
  };
  std::vector<Level> levels_;
  std::size_t depth_ = 0;
  std::string scratch_;

  // A value in an array needs a comma before all but the first; in an object the key wrote it.
  void element() {
    if (depth_ == 0) return;
    Level& l = levels_[depth_ - 1];
    if (!l.object && l.count++) out += ',';
  }
  void open(char c, bool object) {
    element();
    out += c;
    if (levels_.size() <= depth_) levels_.emplace_back();
    Level& l = levels_[depth_++];
    l.object = object;
    l.count = 0;
    l.body = out.size();
    l.fields.clear();
  }
  void close(char c) {
    Level& l = levels_[--depth_];
    if (l.object && l.fields.size() > 1) sort_fields(l);
    out += c;
  }
  // Reorders the fields of the object being closed by key (std::map order, as nlohmann writes).
  void sort_fields(Level& l) {
    for (std::size_t i = 0; i < l.fields.size(); ++i)
      l.fields[i].end = i + 1 < l.fields.size() ? l.fields[i + 1].begin - 1 : out.size();
    const bool sorted =
        std::is_sorted(l.fields.begin(), l.fields.end(),
                       [](const Field& a, const Field& b) { return a.key < b.key; });
    if (sorted) return;
    std::stable_sort(l.fields.begin(), l.fields.end(),
                     [](const Field& a, const Field& b) { return a.key < b.key; });
    scratch_.clear();
    for (std::size_t i = 0; i < l.fields.size(); ++i) {
      if (i) scratch_ += ',';
      scratch_.append(out, l.fields[i].begin, l.fields[i].end - l.fields[i].begin);
    }
    out.replace(l.body, out.size() - l.body, scratch_);
  }
  // Well-formed UTF-8 (Unicode Table 3-7): no overlongs, surrogates or code points past U+10FFFF.
  static bool utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      std::size_t n = 0;
      unsigned char lo = 0x80, hi = 0xBF;
      if (c < 0x80) {
        ++i;
        continue;
      } else if (c >= 0xC2 && c <= 0xDF) {
        n = 1;
      } else if (c >= 0xE0 && c <= 0xEF) {
        n = 2, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
      } else if (c >= 0xF0 && c <= 0xF4) {
        n = 3, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
      } else {
        return false;
      }
      if (i + n >= s.size()) return false;  // the continuation bytes must exist
      for (std::size_t k = 1; k <= n; ++k) {
        const unsigned char d = static_cast<unsigned char>(s[i + k]);
        if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF)) return false;
      }
      i += n + 1;
    }
    return true;
  }
  void string(std::string_view s) {
    if (!utf8(s)) {  // nlohmann replaces invalid bytes with U+FFFD: let it
      out += nlohmann::json(std::string(s))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
    }
    out += '"';
    // Runs that need no escape are appended whole.
    std::size_t run = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c != '"' && c != '\\') continue;
      out.append(s.data() + run, i - run);
      run = i + 1;
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default: {
          static const char* const hex = "0123456789abcdef";
          const char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
          out.append(u, 6);
        }
      }
    }
    out.append(s.data() + run, s.size() - run);
    out += '"';
  }
};

}  // namespace actmem::detail

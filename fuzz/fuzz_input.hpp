// Shared by the command-line fuzz targets: one fuzz input as argv plus one file. Layout: argv
// tokens separated by NUL bytes; an empty token (two NULs) ends argv and the rest of the input is
// the file's contents; a token "F" names that file. Inputs naming device or proc paths are skipped
// (the CLI opens what it is given, and a fuzzer must not read /dev/stdin).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

namespace actmem::fuzz {

struct ArgvInput {
  std::vector<std::string> argv;
  bool skip = false;
};

inline ArgvInput split_argv(const std::uint8_t* data, std::size_t size, std::size_t max_tokens) {
  ArgvInput r;
  const std::string s(reinterpret_cast<const char*>(data), size);
  static const std::string path = "/tmp/actmem-fuzz-" + std::to_string(getpid()) + ".json";
  std::size_t start = 0;
  std::string file;
  while (start <= s.size()) {
    const std::size_t nul = s.find('\0', start);
    const std::string tok =
        s.substr(start, nul == std::string::npos ? std::string::npos : nul - start);
    if (tok.empty() && nul != std::string::npos) {
      file = s.substr(nul + 1);
      break;
    }
    if (!tok.empty()) r.argv.push_back(tok == "F" ? path : tok);
    if (nul == std::string::npos) break;
    start = nul + 1;
  }
  for (const std::string& t : r.argv)
    if (t.find("/dev") != std::string::npos || t.find("/proc") != std::string::npos ||
        t.find("/sys") != std::string::npos || t == "-")
      r.skip = true;
  if (r.argv.size() > max_tokens) r.skip = true;
  if (!r.skip) {
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fwrite(file.data(), 1, file.size(), f);
      std::fclose(f);
    }
  }
  return r;
}

// One line (ending in one newline), no control characters: what every error message must be.
inline bool one_clean_line(const std::string& s) {
  if (s.empty() || s.back() != '\n') return false;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

// Output may hold newlines (tables, pretty JSON) but no other control character.
inline bool no_controls(const std::string& s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c == 0x7f) return false;
  return true;
}

}  // namespace actmem::fuzz

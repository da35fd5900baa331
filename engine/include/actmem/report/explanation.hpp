// One explained total: a symbolic formula, the same with numbers substituted, and the value, as
// the estimate lists them and explain.cpp writes them.
#pragma once

#include <string>

#include "actmem/core/checked.hpp"

namespace actmem {

// A total written out as a student would: the symbolic formula, the numbers substituted, the value.
struct Explanation {
  std::string id;
  std::string title;
  std::string formula;
  std::string substituted;
  Bytes bytes = 0;
  std::string source;
};

}  // namespace actmem

// Internal: turns a set of records or a product of factors into "formula = substituted = value"
// text.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "actmem/inventory/inventory.hpp"
#include "actmem/report/explanation.hpp"

namespace actmem::detail {

// Sum of records, equal-shaped terms merged: "4·b·s·h + 2·b·a·s·s" and "4·1·2048·6144 + ...".
Explanation explain_records(const std::string& id, const std::string& title,
                            const std::vector<const TensorRecord*>& recs);

// A product of named factors: {{"L/pp", 12}, {"per-layer", 1234}}.
Explanation explain_product(const std::string& id, const std::string& title,
                            const std::vector<std::pair<std::string, std::uint64_t>>& factors,
                            Bytes value, const std::string& source);

// A sum of named parts: {{"layers", a}, {"input layer", b}}.
Explanation explain_sum(const std::string& id, const std::string& title,
                        const std::vector<std::pair<std::string, Bytes>>& parts, Bytes value,
                        const std::string& source);

}  // namespace actmem::detail

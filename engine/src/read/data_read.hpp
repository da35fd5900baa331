// Internal: the data command's "data" object read into a DataSpec (data.cpp), with its lengths
// as a list, a histogram or the text of a lengths file.
#pragma once

#include <nlohmann/json.hpp>

#include "actmem/core/error.hpp"
#include "actmem/plan/data.hpp"

namespace actmem::detail {

// {"lengths": [n, ...] or "TEXT", "histogram": [[length, count], ...], "batching": ...,
//  "pad_to_multiple_of": N, "max_tokens": N, "step_sequences": N}; exactly one of lengths and
// histogram. TEXT: a JSON array, or one sequence per line (an integer, or an object with
// "length" or "input_ids"), as a JSONL file holds them.
Result<DataSpec> read_data_spec(const nlohmann::json& data);

}  // namespace actmem::detail

// libFuzzer target: any bytes as a lengths file (the data command's "data.lengths" text,
// `actmem data --lengths FILE`): the JSONL/array reader and its bounds, each batching (the first
// byte picks padded, padding_free or token_budget) and the data answer that follows. Every input
// gets one JSON answer with "ok"; a refusal names its field; nothing crashes or hangs.
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "actmem/json_io.hpp"
#include "fuzz_answer.hpp"

using actmem::fuzz::check_answer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const kBatching[] = {"padded", "padding_free", "token_budget"};
  const char* batching = kBatching[data[0] % 3];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  // A small Llama-shaped model (4 layers of h 64), so that each input's searches stay quick.
  const nlohmann::json model = {{"hidden_size", 64},
                                {"num_attention_heads", 4},
                                {"num_key_value_heads", 2},
                                {"num_hidden_layers", 4},
                                {"vocab_size", 128},
                                {"intermediate_size", 192},
                                {"max_position_embeddings", 4096}};
  nlohmann::json d = {{"lengths", text}, {"batching", batching}, {"pad_to_multiple_of", 8}};
  if (data[0] % 3 == 2) d["max_tokens"] = 65536, d["step_sequences"] = 4;
  const nlohmann::json req = {{"command", "data"},
                              {"model", model},
                              {"config",
                               {{"gpu_memory_bytes", std::uint64_t{1} << 28},
                                {"attention", "flash"},
                                {"micro_batch", 2},
                                {"dp", 2},
                                {"micro_batches", 2}}},
                              {"data", d}};
  check_answer(actmem::evaluate_json(req));
  return 0;
}

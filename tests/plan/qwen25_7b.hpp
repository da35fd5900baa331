// Qwen2.5-7B's shape for the RL tests' hand checks (presets/models/qwen2.5-7b.json): h 3584, 28
// layers, 28 heads of 128, 4 kv heads, f 18944, V 152064, q/k/v biases, untied embeddings,
// max_position_embeddings 131072; its parameter count written out from them.
#pragma once

#include <cstdint>

namespace actmem::test::qwen25_7b {

constexpr std::uint64_t kH = 3584, kL = 28, kF = 18944, kV = 152064, kKv = 4 * 128;
constexpr std::uint64_t kLayerParams =
    (kH * kH + kH) + 2 * (kH * kKv + kKv) + kH * kH + 3 * kH * kF + 2 * kH;
constexpr std::uint64_t kParams = 2 * kV * kH + kL * kLayerParams + kH;

}  // namespace actmem::test::qwen25_7b

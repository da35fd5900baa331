// Launch configurations for one estimated configuration, as the frameworks take them: Megatron-LM's
// command-line arguments (the layout, batch, precision, attention backend and recompute policy),
// a torchtitan job config TOML and a PyTorch selective-activation-checkpoint policy. A setting a
// framework has no argument for is an error naming it, never left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actmem/config/config.hpp"
#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem {

// The pipeline split Megatron-LM can express when pp does not divide the layers: the first and
// last stages given (--decoder-first/last-pipeline-num-layers), the middle ones equal. The middle
// stages take ceil(L/pp) layers when that leaves the two ends at least one each, else floor(L/pp);
// the ends share the rest, the last one taking the odd layer. Empty when pp divides L.
std::vector<std::uint64_t> pipeline_split(std::uint64_t layers, std::uint64_t pp);

// Megatron-LM (main at d98e8a64, 2026-08-22) arguments for `c` (normalized: a setup's config) on
// a job of tp·pp·cp·dp GPUs, one per line with shell continuations. Model-defining arguments
// (--num-layers, --hidden-size, ...) are the user's own and are not written.
Result<std::string> megatron_args(const ModelSpec& m, const TrainConfig& c);

// A torchtitan job config TOML fragment (the layout of 9dec370, 2024-12-26, whose defaults
// framework torchtitan follows) for `c` (normalized): the degrees, batch, precision, pipeline
// schedule and split, activation checkpointing and float8. `c` must be what torchtitan runs for its
// layout (the pytorch profile, flash attention, FSDP2 when dp_shard x cp > 1 with its mixed
// precision and residency, DDP or one GPU in fp32 otherwise); anything else is an error naming the
// setting. The model's name, flavor and tokenizer are the user's own and are not written.
Result<std::string> torchtitan_toml(const ModelSpec& m, const TrainConfig& c);

// A PyTorch (2.4+) selective activation checkpointing policy applying `c`'s recompute policy to a
// model's transformer layers (torch.utils.checkpoint with create_selective_checkpoint_contexts).
Result<std::string> sac_policy(const ModelSpec& m, const TrainConfig& c);

}  // namespace actmem

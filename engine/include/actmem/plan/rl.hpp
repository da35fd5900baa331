// An RL post-training step on shared GPUs (issue 37): GRPO and PPO as verl runs them with its FSDP
// hybrid engine and a colocated vLLM rollout server on every GPU (volcengine/verl b178a3c; vLLM's
// V1 worker and its start-snapshot memory rule), and GRPO as TRL's GRPOTrainer runs it
// (huggingface/trl f2cd577: transformers' generate, or vLLM in the training process or on a
// server). The step is a sequence of phases (weight sync, generation, the old policy's and the
// reference's log-probabilities, the policy update); each phase's peak is the sum of what the
// trainer and vLLM hold on one GPU during it, line by line, each line marked exact (the engine's
// own figures), from the code (a framework's rule, cited), or an estimate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actmem/config/config.hpp"
#include "actmem/config/gpu.hpp"
#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem {

struct RlRollout {
  // Who generates: "vllm", or "transformers" (TRL's use_vllm false: generate() on the policy);
  // "none" for DPO.
  std::string engine = "vllm";  // verl: "vllm" or "sglang" (SGLang 0.5.6, rl_sglang.cpp)
  // Where vLLM runs: "colocate" (on the training GPUs), "server" (TRL's vllm_mode server: on
  // other GPUs; these hold none of it) or "separate" (OpenRLHF without --train.colocate_all:
  // vLLM and every model on GPUs of their own, RlSpec's pools).
  std::string mode = "colocate";
  std::uint64_t tp = 2;                         // tensor_model_parallel_size (verl default 2)
  double gpu_memory_utilization = 0.5;          // verl default 0.5
  std::uint64_t max_num_seqs = 256;             // verl default 256; TRL: 0, derived
  std::uint64_t max_num_batched_tokens = 8192;  // verl default 8192
  std::uint64_t max_model_len = 0;  // 0: the config's seq (verl); the model's positions (TRL)
  std::uint64_t block_size = 16;    // vLLM's default on CUDA
  bool free_cache_engine = true;    // verl default: sleep (level 2 in hybrid mode)
  bool enforce_eager = false;       // verl default: CUDA graphs captured
  Bytes cudagraph_bytes = 0;        // what vLLM logs for its graphs; 0: not given
  Bytes bucket_bytes = Bytes{2048} << 20;  // checkpoint_engine.update_weights_bucket_megabytes
  Bytes context_bytes = 0;                 // the vLLM process's CUDA context; 0: the GPU's
  Bytes profile_peak_bytes = 0;            // vLLM's profiled activation peak; 0: estimated
  // verl's rollout.layered_summon (default false): with LoRA, the adapters are gathered one
  // decoder layer at a time, and vLLM sleeps at level 1 (vllm_rollout.py l.91-95).
  bool layered_summon = false;
  // verl's rollout.expert_parallel_size and data_parallel_size (vLLM's enable_expert_parallel
  // with data-parallel attention, vllm_async_server.py l.308-325): ep = tp x dp, each GPU the
  // dense weights split by tp and the routed experts by ep. 1, 1: off.
  std::uint64_t ep = 1, dp = 1;
  // OpenRLHF's --vllm.num_engines (each engine tp GPUs). 0: as OpenRLHF requires with
  // --train.colocate_all, the actor's GPUs / tp; with separate pools, 1.
  std::uint64_t num_engines = 0;
};

struct RlSpec {
  std::string framework = "verl";  // "verl", "trl" (TRL's trainers) or "openrlhf"
  std::string algorithm = "grpo";  // grpo, ppo (verl), dpo (TRL)
  bool reference = false;          // a reference model (use_kl_loss or use_kl_in_reward)
  bool param_offload = false;      // actor.fsdp_config.param_offload (verl default false)
  bool optimizer_offload = false;  // actor.fsdp_config.optimizer_offload
  bool ref_param_offload = false;  // ref.fsdp_config.param_offload
  // PPO's critic (the actor's model with a one-label score head, critic.fsdp_config's offloads).
  bool critic_param_offload = false, critic_optimizer_offload = false;
  std::uint64_t log_prob_micro_batch = 0;  // log_prob_micro_batch_size_per_gpu; 0: micro_batch
  // TRL: steps_per_generation (0: the config's gradient accumulation steps, GRPOConfig's
  // default) and vllm_importance_sampling_correction (true: an old-policy pass with vLLM).
  std::uint64_t steps_per_generation = 0;
  bool importance_sampling_correction = true;
  // OpenRLHF: a reward model beside the others (a reward.model_name_or_path; the actor's
  // architecture with a one-label head), and --ds.enable_sleep (the optimizer states, master
  // weights and gradients offloaded outside each model's own update).
  bool reward_model = false;
  bool deepspeed_sleep = false;
  // OpenRLHF's separate pools (rollout.mode "separate"): the reference's, critic's and reward
  // model's GPUs (--ref/--critic/--reward.num_nodes x num_gpus_per_node, 1 x 8 by default,
  // train_ppo_ray.py l.200-228; the actor's are the config's), and the two colocations OpenRLHF
  // offers (--train.colocate_actor_ref, --train.colocate_critic_reward: one placement group, a
  // process of each on every GPU).
  std::uint64_t reference_gpus = 8, critic_gpus = 8, reward_gpus = 8;
  bool colocate_actor_ref = false, colocate_critic_reward = false;
  // OpenRLHF's --ref.offload and --reward.offload: the model's ZeRO-3 eval engine with its
  // parameters offloaded to the host (deepspeed_utils.py get_eval_ds_config offload_param cpu).
  bool reference_offload = false, reward_offload = false;
  RlRollout rollout;
};

// TRL's rollout defaults (huggingface/trl f2cd577 grpo_config.py): transformers' generate
// (use_vllm false); with vLLM: colocated, tp 1, utilization 0.3, no sleep, 4,096 batched tokens
// (vllm_generation.py l.363), max_num_seqs derived, max_model_len the model's.
RlRollout trl_rollout_defaults();

// OpenRLHF's rollout defaults (OpenRLHF/OpenRLHF 3c3be62 cli/train_ppo_ray.py): vLLM colocated
// with every model (--train.colocate_all; mode "separate" for its separate pools), tp 1,
// utilization 0.95, no sleep; max_num_seqs and max_num_batched_tokens vLLM's own (OpenRLHF passes
// none).
RlRollout openrlhf_rollout_defaults();

// One line of a phase: what one process holds on the GPU.
struct RlLine {
  // "trainer" or "vllm" (TRL's colocate mode: one process holds both); OpenRLHF: "actor",
  // "critic", "reference", "reward" or "vllm", a process each
  std::string process;
  std::string what;  // e.g. "actor parameters (fp32 FSDP shard)"
  Bytes bytes = 0;
  std::string basis;  // "exact", "code" or "estimate"
  std::string source;
};

struct RlPhase {
  std::string id;  // weight_sync, generate, old_log_prob, ref_log_prob, update
  // The GPUs this phase is on (RlPool::name) when the processes do not all share them; "": all.
  std::string pool;
  std::string label;
  std::vector<RlLine> lines;
  Bytes total_bytes = 0;
};

// One setting changed that makes the step fit (and vLLM start).
struct RlFix {
  std::string change;  // e.g. "rl.rollout.gpu_memory_utilization=0.42"
  Bytes peak_bytes = 0;
  std::string phase;
  std::uint64_t gpus = 0;  // OpenRLHF's separate pools: the run's GPUs with the change; else 0
};

// The rollout's tensor parallelism tried at the same utilization (the advisor's question for an
// RL run): each divisor of the GPU count that divides the heads, its peak and its KV cache.
struct RlRolloutOption {
  std::uint64_t tp = 0;
  std::uint64_t num_engines =
      0;  // OpenRLHF's separate pools: vLLM's GPUs kept, split by tp; else 0
  bool fits = false, starts = false;
  Bytes peak_bytes = 0;
  std::string peak_phase;
  std::uint64_t kv_tokens = 0;
  double concurrency = 0;
};

// OpenRLHF's separate pools: the GPUs one set of processes holds (vllm, actor, actor+reference,
// reference, critic, critic+reward, reward), its count, and its peak over the phases it works in.
struct RlPool {
  std::string name;
  std::uint64_t gpus = 0;
  Bytes peak_bytes = 0;
  std::string peak_phase;
  bool fits = false;
};

struct RlAnswer {
  std::string framework, algorithm, engine, mode;  // as the request resolved them
  std::vector<RlPhase> phases;
  std::size_t peak_phase = 0;
  Bytes peak_bytes = 0, capacity = 0;
  // OpenRLHF's separate pools, each phase's RlPhase::pool one of them; empty when every process
  // shares the GPUs. The step's peak is the largest pool's; it fits when every pool fits.
  std::vector<RlPool> pools;
  bool fits = false;
  // vLLM's KV cache (V1 gpu_worker.py determine_available_memory and kv_cache_utils.py):
  // requested = utilization x the GPU's total, less weights, the profiled
  // activation peak; blocks of block_size tokens, each layer's page 2 x block x kv heads per GPU
  // x head dim x 2 B (MLA: block x (latent + rope) x 2 B).
  Bytes vllm_requested = 0, vllm_weights = 0, vllm_profile_peak = 0, kv_cache_bytes = 0;
  Bytes kv_bytes_per_token = 0;  // every layer's, on one GPU
  // SGLang (verl's rollout.name sglang): the request map and the KV pool's free list; its KV pool
  // is kv_tokens + 1 rows of kv_bytes_per_token, vllm_requested all it holds awake, and
  // vllm_profile_peak generation's activations outside mem_fraction_static.
  Bytes sglang_maps = 0;
  // verl with LoRA: vLLM's LoRA slots (enable_lora, max_loras 1, max_lora_rank the adapters'
  // rank rounded up to vLLM's allowed ranks), inside its budget, before the KV cache.
  Bytes vllm_lora_slots = 0;
  std::uint64_t vllm_ep = 1;  // verl's rollout.expert_parallel_size (vLLM's experts split)
  std::uint64_t vllm_max_lora_rank = 0;
  bool context_known = true;  // SGLang: the model gives its context length (max_positions)
  std::uint64_t kv_concurrency_seq = 0;  // SGLang: the sequence its concurrency counts (seq)
  std::uint64_t kv_blocks = 0, kv_tokens = 0, max_model_len = 0;
  // vLLM's hybrid KV cache manager (sliding-window beside full layers): its groups and their
  // layers (0: one group of every layer), and whether the cache holds one max_model_len request.
  std::uint64_t kv_groups = 0, kv_group_size = 0;
  bool kv_holds_one = false;
  // Sequences the cache holds at once: of max_model_len (vLLM), of config.seq (SGLang, whose
  // max_model_len is the model's context length).
  double kv_concurrency = 0;
  bool vllm_starts = false;  // free memory at vLLM's start >= requested (vLLM raises otherwise)
  bool vllm_here = false;    // vLLM runs on these GPUs (false: transformers' generate, a server)
  std::uint64_t max_num_seqs = 0;          // as resolved (TRL derives it)
  std::uint64_t steps_per_generation = 1;  // TRL, as resolved (verl: 1)
  Bytes free_at_start = 0;
  // The actor keys framework verl filled (the config's framework_defaults), each with its source.
  std::vector<FrameworkDefault> framework_defaults;
  // When it does not fit: each single change that does, the cheapest first (sleep between
  // generations, a smaller vLLM budget, then offloads, then smaller log-probability batches).
  std::vector<RlFix> fixes;
  // Ranked: those that fit and start first, then the most sequences of max_model_len the KV
  // cache holds at once (generation's throughput), then the smaller tp (less communication).
  std::vector<RlRolloutOption> rollout_options;
  std::vector<std::string> notes;
};

Result<RlAnswer> rl_step(const ModelSpec& m, const TrainConfig& actor, const GpuSpec& gpu,
                         const RlSpec& rl);

// The run's GPUs when its processes have pools of their own (the sum of RlAnswer::pools'); 0
// when every process shares the GPUs.
std::uint64_t rl_gpus(const RlAnswer& a);

}  // namespace actmem

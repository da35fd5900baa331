// Megatron-LM launch arguments read as a training config (the request's "megatron_args", the CLI's
// --megatron-args FILE): the layout, batch, precision, attention backend and recompute policy
// become config keys; model-defining arguments are checked against the model; arguments that
// change memory in ways the engine does not model are refused by name; unknown ones are reported.
// Argument names and meanings: Megatron-LM main at d98e8a64 (2026-08-22), megatron/training/
// arguments.py and the dataclasses it builds its groups from (transformer_config.py,
// model_parallel_config.py, distributed_data_parallel_config.py).
#include <algorithm>
#include <cstdlib>
#include <map>

#include "actmem/json_io.hpp"
#include "read/json_read.hpp"

namespace actmem {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxArgsBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxArgsTokens = 1u << 16;

Error bad(const std::string& msg) {
  return make_error("invalid_value", "megatron_args", "megatron_args: " + msg);
}

// A token for a message: printable ASCII as is, anything else escaped; at most 60 characters.
std::string shown(const std::string& t) {
  std::string s = detail::short_dump(json(t.size() > 60 ? t.substr(0, 57) + "..." : t));
  return s;
}

// Splits shell-style text: whitespace separates, a backslash at the end of a line continues it,
// '#' starting a token comments out the rest of its line, single or double quotes group (no
// escapes inside). A shell variable ($TP, ${TP}) is refused: the file must hold the values.
Result<std::vector<std::string>> tokens(const std::string& text) {
  if (text.size() > kMaxArgsBytes)
    return bad("the text has " + std::to_string(text.size()) + " bytes; at most " +
               std::to_string(kMaxArgsBytes));
  if (text.find('\0') != std::string::npos) return bad("holds a NUL byte");
  std::vector<std::string> out;
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (i < n) {
    if (space(text[i])) {
      ++i;
      continue;
    }
    if (text[i] == '\\' && (i + 1 == n || space(text[i + 1]))) {
      ++i;  // a line continuation
      continue;
    }
    if (text[i] == '#') {
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    std::string t;
    while (i < n && !space(text[i])) {
      const char c = text[i];
      if (c == '\'' || c == '"') {
        const std::size_t close = text.find(c, i + 1);
        if (close == std::string::npos)
          return bad("a quote (" + std::string(1, c) + ") is not closed");
        t += text.substr(i + 1, close - i - 1);
        i = close + 1;
        continue;
      }
      if (c == '$')
        return bad("a shell variable (" + shown(text.substr(i, 20)) + "): write its value");
      t += c;
      ++i;
    }
    if (out.size() == kMaxArgsTokens)
      return bad("more than " + std::to_string(kMaxArgsTokens) + " arguments");
    out.push_back(t);
  }
  return out;
}

// Arguments that change memory in ways the engine does not model yet: refused, never ignored.
const char* const kUnmodelled[] = {"--fp8-param-gather",
                                   "--fp8",
                                   "--fp4-format",
                                   "--cpu-offloading",
                                   "--cpu-offloading-num-layers",
                                   "--optimizer-cpu-offload",
                                   "--optimizer-offload-fraction",
                                   "--use-precision-aware-optimizer",
                                   "--main-params-dtype",
                                   "--exp-avg-dtype",
                                   "--exp-avg-sq-dtype",
                                   "--cross-entropy-loss-fusion",
                                   "--cross-entropy-fusion-impl",
                                   "--pipeline-model-parallel-layout",
                                   "--distribute-saved-activations",
                                   "--account-for-embedding-in-pipeline-split",
                                   "--account-for-loss-in-pipeline-split",
                                   "--moe-expert-capacity-factor",
                                   "--moe-pad-expert-input-to-capacity",
                                   "--use-torch-fsdp2",
                                   "--calculate-per-token-loss",
                                   "--fp16-lm-cross-entropy",
                                   "--output-logit-dtype",
                                   "--use-custom-fsdp"};

// Arguments taking a value that do not change what a GPU holds during a step (learning rate,
// logging, data, checkpoints) or that define the model the request already gives (checked where
// the engine knows the value, below). Flags of the same kind are in kFlags only.
const char* const kHarmless[] = {"--lr",
                                 "--min-lr",
                                 "--lr-decay-style",
                                 "--lr-decay-iters",
                                 "--lr-decay-samples",
                                 "--lr-warmup-iters",
                                 "--lr-warmup-samples",
                                 "--lr-warmup-fraction",
                                 "--lr-warmup-init",
                                 "--weight-decay",
                                 "--start-weight-decay",
                                 "--end-weight-decay",
                                 "--weight-decay-incr-style",
                                 "--clip-grad",
                                 "--adam-beta1",
                                 "--adam-beta2",
                                 "--adam-eps",
                                 "--init-method-std",
                                 "--train-iters",
                                 "--train-samples",
                                 "--log-interval",
                                 "--save",
                                 "--load",
                                 "--save-interval",
                                 "--eval-interval",
                                 "--eval-iters",
                                 "--data-path",
                                 "--split",
                                 "--train-data-path",
                                 "--valid-data-path",
                                 "--test-data-path",
                                 "--data-cache-path",
                                 "--tokenizer-type",
                                 "--tokenizer-model",
                                 "--vocab-file",
                                 "--merge-file",
                                 "--seed",
                                 "--distributed-backend",
                                 "--distributed-timeout-minutes",
                                 "--position-embedding-type",
                                 "--rotary-base",
                                 "--rotary-percent",
                                 "--rotary-seq-len-interpolation-factor",
                                 "--normalization",
                                 "--norm-epsilon",
                                 "--transformer-impl",
                                 "--ddp-bucket-size",
                                 "--ddp-num-buckets",
                                 "--manual-gc-interval",
                                 "--tensorboard-dir",
                                 "--tensorboard-log-interval",
                                 "--wandb-project",
                                 "--wandb-exp-name",
                                 "--wandb-save-dir",
                                 "--timing-log-level",
                                 "--exit-interval",
                                 "--exit-duration-in-mins",
                                 "--ckpt-format",
                                 "--dist-ckpt-format",
                                 "--num-workers",
                                 "--dataloader-type",
                                 "--make-vocab-size-divisible-by",
                                 "--optimizer",
                                 "--loss-scale",
                                 "--initial-loss-scale",
                                 "--min-loss-scale",
                                 "--loss-scale-window",
                                 "--hysteresis",
                                 "--profile-step-start",
                                 "--profile-step-end",
                                 "--profile-ranks",
                                 "--moe-router-load-balancing-type",
                                 "--moe-aux-loss-coeff",
                                 "--moe-z-loss-coeff",
                                 "--moe-token-dispatcher-type",
                                 "--moe-router-dtype",
                                 "--moe-router-score-function",
                                 "--moe-router-topk-scaling-factor",
                                 "--moe-router-bias-update-rate",
                                 "--rerun-mode",
                                 "--max-position-embeddings",
                                 "--vocab-size",
                                 "--padded-vocab-size",
                                 "--nproc_per_node",
                                 "--nnodes",
                                 "--node_rank",
                                 "--master_addr",
                                 "--master_port",
                                 "--nproc-per-node",
                                 "--node-rank",
                                 "--master-addr",
                                 "--master-port",
                                 "--rdzv-backend",
                                 "--rdzv-endpoint",
                                 "--rdzv-id",
                                 "--moe-layer-freq",
                                 "--hybrid-override-pattern",
                                 "--moe-shared-expert-intermediate-size",
                                 "--kv-lora-rank",
                                 "--q-lora-rank",
                                 "--qk-head-dim",
                                 "--qk-pos-emb-head-dim",
                                 "--v-head-dim",
                                 "--num-experts-per-tok",
                                 "--decoder-num-layers",
                                 "--encoder-num-layers",
                                 "--rotary-scaling-factor",
                                 "--mamba-state-dim",
                                 "--mamba-head-dim",
                                 "--mamba-num-groups"};

// Arguments that take no value (store_true / store_false): those neither read (kRead) nor
// refused (kUnmodelled) change nothing actmem counts (fusions that keep the same tensors,
// logging, checkpoint switches).
const char* const kFlags[] = {"--sequence-parallel",
                              "--use-distributed-optimizer",
                              "--use-megatron-fsdp",
                              "--bf16",
                              "--fp16",
                              "--accumulate-allreduce-grads-in-fp32",
                              "--recompute-activations",
                              "--swiglu",
                              "--untie-embeddings-and-output-weights",
                              "--disable-bias-linear",
                              "--add-qkv-bias",
                              "--group-query-attention",
                              "--qk-layernorm",
                              "--use-mcore-models",
                              "--overlap-grad-reduce",
                              "--overlap-param-gather",
                              "--overlap-param-gather-with-optimizer-step",
                              "--no-overlap-p2p-communication",
                              "--manual-gc",
                              "--log-throughput",
                              "--log-timers-to-tensorboard",
                              "--log-validation-ppl-to-tensorboard",
                              "--log-memory-to-tensorboard",
                              "--log-params-norm",
                              "--log-num-zeros-in-grad",
                              "--exit-signal-handler",
                              "--use-dist-ckpt",
                              "--auto-detect-ckpt-format",
                              "--no-load-optim",
                              "--no-load-rng",
                              "--no-save-optim",
                              "--no-save-rng",
                              "--finetune",
                              "--mock-data",
                              "--no-masked-softmax-fusion",
                              "--no-bias-gelu-fusion",
                              "--no-bias-swiglu-fusion",
                              "--no-bias-dropout-fusion",
                              "--no-rope-fusion",
                              "--no-gradient-accumulation-fusion",
                              "--attention-softmax-in-fp32",
                              "--apply-layernorm-1p",
                              "--no-persist-layer-norm",
                              "--use-flash-attn",
                              "--eod-mask-loss",
                              "--reset-position-ids",
                              "--reset-attention-mask",
                              "--use-cpu-initialization",
                              "--profile",
                              "--deterministic-mode",
                              "--check-for-nan-in-loss-and-grad",
                              "--no-check-for-nan-in-loss-and-grad",
                              "--moe-grouped-gemm",
                              "--moe-router-pre-softmax",
                              "--moe-router-enable-expert-bias",
                              "--moe-permute-fusion",
                              "--bf16-main-grads",
                              "--legacy-tokenizer",
                              "--tokenizer-hf-include-special-tokens",
                              "--fp8-param-gather",
                              "--cpu-offloading",
                              "--optimizer-cpu-offload",
                              "--use-precision-aware-optimizer",
                              "--cross-entropy-loss-fusion",
                              "--tp-comm-overlap",
                              "--distribute-saved-activations",
                              "--account-for-embedding-in-pipeline-split",
                              "--account-for-loss-in-pipeline-split",
                              "--moe-pad-expert-input-to-capacity",
                              "--use-torch-fsdp2",
                              "--multi-latent-attention",
                              "--calculate-per-token-loss",
                              "--fp16-lm-cross-entropy",
                              "--standalone",
                              "--use-custom-fsdp"};

bool in(const char* const* list, std::size_t n, const std::string& a) {
  return std::any_of(list, list + n, [&](const char* k) { return a == k; });
}
template <std::size_t N>
bool in(const char* const (&list)[N], const std::string& a) {
  return in(list, N, a);
}

// The arguments read into the config or checked against the model.
const char* const kRead[] = {"--tensor-model-parallel-size",
                             "--pipeline-model-parallel-size",
                             "--context-parallel-size",
                             "--expert-model-parallel-size",
                             "--expert-tensor-parallel-size",
                             "--num-virtual-stages-per-pipeline-rank",
                             "--num-layers-per-virtual-pipeline-stage",
                             "--micro-batch-size",
                             "--global-batch-size",
                             "--seq-length",
                             "--sequence-parallel",
                             "--decoder-first-pipeline-num-layers",
                             "--decoder-last-pipeline-num-layers",
                             "--use-megatron-fsdp",
                             "--data-parallel-sharding-strategy",
                             "--use-distributed-optimizer",
                             "--num-distributed-optimizer-instances",
                             "--tp-comm-overlap",
                             "--fp8-format",
                             "--fp8-recipe",
                             "--fp8-amax-history-len",
                             "--bf16",
                             "--fp16",
                             "--accumulate-allreduce-grads-in-fp32",
                             "--attention-backend",
                             "--attention-dropout",
                             "--hidden-dropout",
                             "--recompute-granularity",
                             "--recompute-method",
                             "--recompute-num-layers",
                             "--recompute-modules",
                             "--recompute-activations",
                             "--optimizer",
                             "--num-layers",
                             "--hidden-size",
                             "--num-attention-heads",
                             "--num-query-groups",
                             "--kv-channels",
                             "--ffn-hidden-size",
                             "--num-experts",
                             "--moe-router-topk",
                             "--moe-ffn-hidden-size",
                             "--sgd-momentum",
                             "--mtp-num-layers"};

// Skipped without a warning: a harmless argument, or a flag neither read nor refused.
bool harmless(const std::string& a) {
  return in(kHarmless, a) || (in(kFlags, a) && !in(kRead, a) && !in(kUnmodelled, a));
}

bool known(const std::string& a) {
  return in(kRead, a) || harmless(a) || in(kUnmodelled, a);
}

// A non-negative decimal integer of at most 15 digits (no sign, no exponent).
bool integer(const std::string& v, std::uint64_t* out) {
  if (v.empty() || v.size() > 15 ||
      !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  *out = std::stoull(v);
  return true;
}

// The arguments as given: each once with its value ("" for a flag), in the order first given.
struct Args {
  std::map<std::string, std::string> values;
  std::vector<std::string> order;
  bool has(const char* a) const { return values.count(a) > 0; }
  std::string& operator[](const std::string& a) { return values[a]; }
  // The value of `a`, a positive integer.
  std::optional<Error> uint_of(const std::string& a, std::uint64_t* x) {
    if (!integer(values[a], x) || *x == 0)
      return bad(a + " " + shown(values[a]) + ": must be a positive integer");
    return std::nullopt;
  }
};

// Each argument once, with its value ("" for a flag): Megatron's argparse keeps the last of a
// repeated argument, so two different values are a conflict here, never last-one-wins.
Result<Args> parse_args(const std::vector<std::string>& t) {
  Args parsed;
  std::map<std::string, std::string>& args = parsed.values;
  std::vector<std::string>& order = parsed.order;
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::string a = t[i], v;
    if (a.rfind("--", 0) != 0) {
      // The launcher and script before the arguments (torchrun, pretrain_gpt.py) are skipped;
      // a value without its argument is not.
      if (i == 0 || t[i - 1].rfind("--", 0) != 0 || in(kFlags, t[i - 1]) ||
          t[i - 1].find('=') != std::string::npos)
        if (a.find('/') != std::string::npos || (a.size() > 3 && a.substr(a.size() - 3) == ".py") ||
            a == "torchrun" || a == "python" || a == "python3" || a == "-m" ||
            a == "torch.distributed.run" || a == "torch.distributed.launch")
          continue;
      return bad(shown(a) + " is a value without an argument before it");
    }
    const std::size_t eq = a.find('=');
    if (eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if (!in(kFlags, a)) {
      if (i + 1 >= t.size() || t[i + 1].rfind("--", 0) == 0) {
        // An argument actmem reads or knows takes a value; an unknown one may be a flag.
        if (known(a)) return bad(shown(a) + " needs a value");
        if (args.count(a) == 0) order.push_back(a);
        args[a] = "";
        continue;
      }
      v = t[++i];
      // --recompute-modules takes a list (nargs='*'): the values up to the next argument.
      if (a == "--recompute-modules" || a == "--data-path")
        while (i + 1 < t.size() && t[i + 1].rfind("--", 0) != 0) v += " " + t[++i];
    }
    auto it = args.find(a);
    if (it != args.end() && it->second != v)
      return bad(shown(a) + " is given twice (" + shown(it->second) + " and " + shown(v) +
                 "); give it once");
    if (it == args.end()) order.push_back(a);
    args[a] = v;
  }
  return parsed;
}

// The first layer kind of the model that `pred` holds for (nullptr: none).
template <class Pred>
const LayerKind* first_kind(const ModelSpec& m, Pred pred) {
  for (const LayerKind& k : m.kinds)
    if (pred(k)) return &k;
  return nullptr;
}

// Model-defining arguments: the request's model must be the one they describe.
std::optional<Error> check_model_args(Args& args, const ModelSpec& m) {
  const LayerKind* attn = first_kind(m, [](const LayerKind& k) { return k.has_attention(); });
  const LayerKind* dense = first_kind(
      m, [](const LayerKind& k) { return k.has_ffn && !k.is_moe() && k.ffn_hidden > 0; });
  const LayerKind* moe = first_kind(m, [](const LayerKind& k) { return k.is_moe(); });
  struct Check {
    const char* arg;
    bool known;
    std::uint64_t model;
    const char* key;
  };
  const Check checks[] = {
      {"--num-layers", true, m.layers, "num_hidden_layers"},
      {"--hidden-size", true, m.hidden, "hidden_size"},
      {"--num-attention-heads", attn != nullptr, attn ? attn->heads : 0, "num_attention_heads"},
      {"--num-query-groups", attn != nullptr, attn ? attn->kv_heads : 0, "num_key_value_heads"},
      {"--kv-channels", attn != nullptr && !attn->is_mla(), attn ? attn->head_dim : 0, "head_dim"},
      // Without dense layers, --ffn-hidden-size is the experts' width unless
      // --moe-ffn-hidden-size gives it (Megatron-LM: moe_ffn_hidden_size defaults to it).
      {"--ffn-hidden-size",
       dense != nullptr || (moe != nullptr && !args.has("--moe-ffn-hidden-size")),
       dense ? dense->ffn_hidden : (moe ? moe->moe.expert_ffn : 0),
       dense ? "intermediate_size" : "moe_intermediate_size"},
      {"--num-experts", moe != nullptr, moe ? moe->moe.experts : 0, "num_local_experts"},
      {"--moe-router-topk", moe != nullptr, moe ? moe->moe.top_k : 0, "num_experts_per_tok"},
      {"--moe-ffn-hidden-size", moe != nullptr, moe ? moe->moe.expert_ffn : 0,
       "moe_intermediate_size"}};
  for (const Check& k : checks) {
    if (!args.has(k.arg)) continue;
    // An MoE-only model's --ffn-hidden-size next to --moe-ffn-hidden-size sizes no layer.
    if (std::string(k.arg) == "--ffn-hidden-size" && dense == nullptr && moe != nullptr &&
        args.has("--moe-ffn-hidden-size"))
      continue;
    std::uint64_t x = 0;
    ACTMEM_TRY(args.uint_of(k.arg, &x));
    if (!k.known)
      return bad(std::string(k.arg) + " " + args[k.arg] + ": the model has no such layer");
    if (x != k.model)
      return bad(std::string(k.arg) + " " + args[k.arg] +
                 " describes another model: this one has " + k.key + "=" + std::to_string(k.model));
  }
  return std::nullopt;
}

// The layout: sizes and sequence parallelism, with what Megatron-LM runs without an argument.
std::optional<Error> read_layout(Args& args, const ModelSpec& m, json& c) {
  const std::pair<const char*, const char*> sizes[] = {
      {"--tensor-model-parallel-size", "tp"},
      {"--pipeline-model-parallel-size", "pp"},
      {"--context-parallel-size", "cp"},
      {"--expert-model-parallel-size", "ep"},
      {"--num-virtual-stages-per-pipeline-rank", "vpp"},
      {"--micro-batch-size", "micro_batch"},
      {"--seq-length", "seq"}};
  for (const auto& [a, key] : sizes) {
    if (!args.has(a)) continue;
    std::uint64_t x = 0;
    ACTMEM_TRY(args.uint_of(a, &x));
    c[key] = x;
  }
  // What Megatron-LM runs without an argument (sizes 1, no sequence parallelism, one chunk per
  // rank): written out, so a config key that says otherwise is a conflict, not an override.
  for (const char* key : {"tp", "pp", "cp", "vpp"})
    if (!c.contains(key)) c[key] = 1;
  if (m.any_moe() && !c.contains("ep")) c["ep"] = 1;
  if (!args.has("--sequence-parallel")) c["sp"] = false;
  const std::uint64_t tp = c.value("tp", std::uint64_t{1}), pp = c.value("pp", std::uint64_t{1});
  if (args.has("--expert-tensor-parallel-size")) {
    std::uint64_t x = 0;
    ACTMEM_TRY(args.uint_of("--expert-tensor-parallel-size", &x));
    if (x != tp)
      return bad("--expert-tensor-parallel-size " + args["--expert-tensor-parallel-size"] +
                 ": experts split over other ranks than the dense layers is not modelled; "
                 "allowed: the tensor-parallel size (" +
                 std::to_string(tp) + ")");
  }
  if (args.has("--num-layers-per-virtual-pipeline-stage")) {
    std::uint64_t x = 0;
    ACTMEM_TRY(args.uint_of("--num-layers-per-virtual-pipeline-stage", &x));
    if (m.layers % (pp * x) != 0)
      return bad("--num-layers-per-virtual-pipeline-stage " + std::to_string(x) + ": " +
                 std::to_string(m.layers) + " layers are not pp=" + std::to_string(pp) +
                 " ranks of chunks of that many");
    const std::uint64_t v = m.layers / (pp * x);
    if (args.has("--num-virtual-stages-per-pipeline-rank") && c["vpp"] != v)
      return bad(
          "--num-layers-per-virtual-pipeline-stage and "
          "--num-virtual-stages-per-pipeline-rank disagree");
    c["vpp"] = v;
  }
  if (args.has("--sequence-parallel")) c["sp"] = true;
  return std::nullopt;
}

// Uneven stages: the first and last given, the rest split evenly (Megatron-LM
// transformer_block.py, get_num_layers_to_build).
std::optional<Error> read_uneven_stages(Args& args, const ModelSpec& m, json& c) {
  const bool f = args.has("--decoder-first-pipeline-num-layers"),
             l = args.has("--decoder-last-pipeline-num-layers");
  if (!f && !l) return std::nullopt;
  const std::uint64_t pp = c.value("pp", std::uint64_t{1});
  std::uint64_t first = 0, last = 0;
  if (f) ACTMEM_TRY(args.uint_of("--decoder-first-pipeline-num-layers", &first));
  if (l) ACTMEM_TRY(args.uint_of("--decoder-last-pipeline-num-layers", &last));
  const std::uint64_t ends = (f ? 1 : 0) + (l ? 1 : 0);
  if (pp < ends + (ends == 2 ? 0 : 1) || first + last > m.layers)
    return bad("--decoder-first/last-pipeline-num-layers need more pipeline stages (pp=" +
               std::to_string(pp) + ") or fewer layers");
  const std::uint64_t rest = m.layers - first - last, middle = pp - ends;
  if (middle == 0 ? rest != 0 : rest % middle != 0)
    return bad("--decoder-first/last-pipeline-num-layers leave " + std::to_string(rest) +
               " layers for " + std::to_string(middle) + " other stages: not an even split");
  if (middle > 0 && rest / middle == 0)
    return bad("--decoder-first/last-pipeline-num-layers leave no layer for the " +
               std::to_string(middle) + " other stages of " + std::to_string(m.layers));
  std::vector<std::uint64_t> split(pp, middle ? rest / middle : 0);
  if (f) split.front() = first;
  if (l) split.back() = last;
  c["layer_split"] = split;
  return std::nullopt;
}

// ZeRO: the distributed optimizer shards the optimizer states (ZeRO-1); Megatron-FSDP's
// strategies no_shard, optim, optim_grads, optim_grads_params (the default) are ZeRO 0-3.
std::optional<Error> read_zero(Args& args, json& c) {
  if (args.has("--use-megatron-fsdp")) {
    const std::string s = args.has("--data-parallel-sharding-strategy")
                              ? args["--data-parallel-sharding-strategy"]
                              : "optim_grads_params";
    const char* const names[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
    const auto* hit = std::find(names, names + 4, s);
    if (hit == names + 4)
      return bad("--data-parallel-sharding-strategy " + shown(s) +
                 ": allowed: no_shard, optim, optim_grads, optim_grads_params");
    c["zero"] = hit - names;
  } else if (args.has("--data-parallel-sharding-strategy")) {
    return bad("--data-parallel-sharding-strategy is read with --use-megatron-fsdp");
  } else if (args.has("--use-distributed-optimizer")) {
    c["zero"] = 1;
    // Partial distributed optimizer: copies of the sharded optimizer across the data-parallel
    // domain, each sharding over dp / instances ranks (arguments.py).
    if (args.has("--num-distributed-optimizer-instances")) {
      std::uint64_t n = 0;
      ACTMEM_TRY(args.uint_of("--num-distributed-optimizer-instances", &n));
      c["dp_replicate"] = n;
    }
  } else {
    c["zero"] = 0;
  }
  return std::nullopt;
}

// TransformerEngine fp8: --fp8-format hybrid or e4m3 with the delayed recipe (its default).
std::optional<Error> read_fp8(Args& args, json& c) {
  if (args.has("--fp8-format")) {
    const std::string f = args["--fp8-format"];
    if (f != "hybrid" && f != "e4m3")
      return bad("--fp8-format " + shown(f) + ": allowed: hybrid, e4m3");
    const std::string r = args.has("--fp8-recipe") ? args["--fp8-recipe"] : "delayed";
    if (r != "delayed")
      return bad("--fp8-recipe " + shown(r) +
                 ": only TransformerEngine's delayed scaling is modelled (allowed: delayed)");
    c["float8"] = "delayed";
    if (args.has("--fp8-amax-history-len")) {
      std::uint64_t n = 0;
      ACTMEM_TRY(args.uint_of("--fp8-amax-history-len", &n));
      c["fp8_amax_history"] = n;
    }
  } else if (args.has("--fp8-recipe") || args.has("--fp8-amax-history-len")) {
    return bad("--fp8-recipe and --fp8-amax-history-len are read with --fp8-format");
  }
  return std::nullopt;
}

// The optimizer-sharding arguments that need, or exclude, each other.
std::optional<Error> check_optimizer_sharding(Args& args) {
  if (args.has("--num-distributed-optimizer-instances") && !args.has("--use-distributed-optimizer"))
    return bad("--num-distributed-optimizer-instances is read with --use-distributed-optimizer");
  if (args.has("--use-megatron-fsdp") && args.has("--use-distributed-optimizer"))
    return bad(
        "--use-megatron-fsdp and --use-distributed-optimizer: Megatron-FSDP's sharding "
        "strategy decides what is sharded; give one");
  return std::nullopt;
}

// Precision: --bf16, --fp16 or neither (fp32); parameters in the same dtype with fp32 master
// weights; gradients in the parameters' dtype unless reduced in fp32.
std::optional<Error> read_precision(Args& args, json& c) {
  if (args.has("--bf16") && args.has("--fp16")) return bad("--bf16 and --fp16: give one");
  const char* dtype = args.has("--bf16") ? "bf16" : args.has("--fp16") ? "fp16" : "fp32";
  c["dtype"] = dtype;
  c["param_dtype"] = dtype;
  c["grad_dtype"] = args.has("--accumulate-allreduce-grads-in-fp32") ? "fp32" : dtype;
  return std::nullopt;
}

// The optimizer: Megatron-LM's adam or sgd.
std::optional<Error> read_optimizer(Args& args, json& c) {
  if (!args.has("--optimizer")) return std::nullopt;
  const std::string o = args["--optimizer"];
  if (o == "adam")
    c["optimizer"] = "adamw";  // Megatron's adam is AdamW (decoupled weight decay)
  else if (o == "sgd")         // momentum 0.9 unless --sgd-momentum 0: then no momentum buffer
    c["optimizer"] =
        args.has("--sgd-momentum") && std::strtod(args["--sgd-momentum"].c_str(), nullptr) == 0
            ? "sgd"
            : "sgd_momentum";
  else
    return bad("--optimizer " + shown(o) + ": allowed: adam, sgd");
  return std::nullopt;
}

// The attention backend: flash and fused (cuDNN) keep the output and log-sum-exp; unfused and
// local the scores and probabilities. Without the argument Megatron-LM picks auto, a fused
// kernel on GPUs that have one.
std::optional<Error> read_attention_backend(Args& args, json& c,
                                            std::vector<std::string>* warnings) {
  if (args.has("--attention-backend")) {
    const std::string b = args["--attention-backend"];
    if (b == "flash" || b == "fused" || b == "auto")
      c["attention"] = "flash";
    else if (b == "unfused" || b == "local")
      c["attention"] = "eager";
    else
      return bad("--attention-backend " + shown(b) +
                 ": allowed: flash, fused, unfused, local, auto");
  } else if (args.has("--use-flash-attn")) {
    c["attention"] = "flash";
  } else {
    c["attention"] = "flash";
    warnings->push_back(
        "megatron_args: no --attention-backend: Megatron-LM's default (auto) runs a fused "
        "attention kernel where one exists, read as flash");
  }
  return std::nullopt;
}

// The dropout probabilities, with Megatron-LM's defaults.
std::optional<Error> read_dropout(Args& args, json& c) {
  for (const auto& [a, key] :
       {std::pair<const char*, const char*>{"--attention-dropout", "attention_dropout"},
        {"--hidden-dropout", "hidden_dropout"}}) {
    // Megatron-LM's default is 0.1 for both (transformer_config.py), whatever the model's
    // Hugging Face config says.
    if (!args.has(a)) {
      c[key] = 0.1;
      continue;
    }
    char* end = nullptr;
    const std::string& v = args[a];
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !(d >= 0 && d < 1))
      return bad(std::string(a) + " " + shown(v) + ": must be a number in [0, 1)");
    c[key] = d;
  }
  return std::nullopt;
}

// Recompute (transformer_config.py): selective recomputes the modules listed (core_attn by
// default); full with uniform K recomputes units of K layers, with block N the first N layers
// of each chunk; full without a method recomputes every layer.
std::optional<Error> read_recompute(Args& args, const ModelSpec& m, json& c) {
  const bool selective =
      args.has("--recompute-activations") ||
      (args.has("--recompute-granularity") && args["--recompute-granularity"] == "selective");
  if (args.has("--recompute-granularity") && args["--recompute-granularity"] != "selective" &&
      args["--recompute-granularity"] != "full")
    return bad("--recompute-granularity " + shown(args["--recompute-granularity"]) +
               ": allowed: full, selective");
  if (args.has("--recompute-modules")) {
    if (!selective)
      return bad("--recompute-modules is read with --recompute-granularity selective");
    if (args["--recompute-modules"] != "core_attn")
      return bad("--recompute-modules " + shown(args["--recompute-modules"]) +
                 ": only core_attn (the attention core, Korthikanti et al. 2022) is modelled");
  }
  if (selective) {
    if (args.has("--recompute-method"))
      return bad("--recompute-method is read with full recompute");
    c["recompute"] = "selective";
  } else if (args.has("--recompute-granularity")) {
    std::uint64_t k = 1;
    if (args.has("--recompute-num-layers")) ACTMEM_TRY(args.uint_of("--recompute-num-layers", &k));
    const std::string method = args.has("--recompute-method") ? args["--recompute-method"] : "";
    if (method == "" || (method == "uniform" && k == 1)) {
      c["recompute"] = "full";
    } else if (method == "uniform") {
      c["recompute"] = "every:" + std::to_string(k);
    } else if (method == "block") {
      // The first k layers of each chunk, each from its own input; the longest chunk's pattern
      // serves every chunk (a pattern's first n letters apply to a chunk of n layers).
      const std::uint64_t pp = c.value("pp", std::uint64_t{1}),
                          v = c.value("vpp", std::uint64_t{1});
      std::uint64_t longest = m.layers / std::max<std::uint64_t>(1, pp * v);
      if (c.contains("layer_split"))
        for (const auto& x : c["layer_split"]) longest = std::max(longest, x.get<std::uint64_t>());
      if (k >= longest) {
        c["recompute"] = "full";
      } else {
        c["recompute"] = "layers:" + std::string(k, 'C') + std::string(longest - k, 'K');
      }
    } else {
      return bad("--recompute-method " + shown(method) + ": allowed: uniform, block");
    }
  } else if (args.has("--recompute-method") || args.has("--recompute-num-layers")) {
    return bad(
        "--recompute-method and --recompute-num-layers are read with "
        "--recompute-granularity full");
  } else {
    c["recompute"] = "none";
  }
  return std::nullopt;
}

// Multi-token prediction: Megatron-LM trains the depths --mtp-num-layers gives.
std::optional<Error> read_mtp(Args& args, const ModelSpec& m, json& c) {
  if (!args.has("--mtp-num-layers")) return std::nullopt;
  std::uint64_t x = 0;
  ACTMEM_TRY(args.uint_of("--mtp-num-layers", &x));
  if (x != m.mtp_layers)
    return bad("--mtp-num-layers " + std::to_string(x) + ": this model has " +
               std::to_string(m.mtp_layers) + " multi-token-prediction depths");
  c["mtp"] = true;
  return std::nullopt;
}

// What is neither read nor harmless: refused when actmem knows it changes memory, else reported.
std::optional<Error> check_unread(const Args& args, std::vector<std::string>* warnings) {
  for (const std::string& a : args.order) {
    if (in(kRead, a) || harmless(a)) continue;
    if (in(kUnmodelled, a))
      return bad(a +
                 " changes what the GPUs hold in a way actmem does not model yet; remove it "
                 "to estimate the run without it");
    warnings->push_back("megatron_args: " + shown(a) +
                        " is not read by actmem; check that it does not change memory");
  }
  return std::nullopt;
}

}  // namespace

Result<MegatronArgs> read_megatron_args(const std::string& text, const ModelSpec& m) {
  auto tk = tokens(text);
  if (!tk.ok()) return tk.error();
  auto parsed = parse_args(tk.value());
  if (!parsed.ok()) return parsed.error();
  Args& args = parsed.value();
  MegatronArgs out;
  json& c = out.config;
  ACTMEM_TRY(check_model_args(args, m));
  ACTMEM_TRY(read_layout(args, m, c));
  ACTMEM_TRY(read_uneven_stages(args, m, c));
  ACTMEM_TRY(read_zero(args, c));
  ACTMEM_TRY(read_fp8(args, c));
  // TransformerEngine userbuffers for TP communication overlap (device overhead lines).
  if (args.has("--tp-comm-overlap")) c["async_tp"] = true;
  ACTMEM_TRY(check_optimizer_sharding(args));
  ACTMEM_TRY(read_precision(args, c));
  ACTMEM_TRY(read_optimizer(args, c));
  ACTMEM_TRY(read_attention_backend(args, c, &out.warnings));
  ACTMEM_TRY(read_dropout(args, c));
  ACTMEM_TRY(read_recompute(args, m, c));
  ACTMEM_TRY(read_mtp(args, m, c));
  if (args.has("--global-batch-size"))
    ACTMEM_TRY(args.uint_of("--global-batch-size", &out.global_batch));
  ACTMEM_TRY(check_unread(args, &out.warnings));
  return out;
}

}  // namespace actmem

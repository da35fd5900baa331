// Maps `actmem` flags onto request keys; file arguments are read here (the engine does no I/O).
#include "args.hpp"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "actmem/json_io.hpp"

namespace actmem::cli {

using nlohmann::json;

const char* const kUsage =
    "usage: actmem <command> [options]\n"
    "commands:\n"
    "  estimate   activation, static and total memory per GPU (default)\n"
    "  explain    every total as a formula with the numbers substituted\n"
    "  requests F the page's JSON requests, one per line (F or - for stdin): evaluate()'s answers\n"
    "  timeline   the simulated step per pipeline stage: live bytes per event, peaks, recompute "
    "overhead\n"
    "  fit        largest micro-batch and sequence length whose simulated peak fits the GPU / "
    "budget\n"
    "  plan       cheapest recompute policy that fits, and the memory/recompute Pareto front\n"
    "  sweep      peak bytes over a micro-batch x sequence grid\n"
    "  compare F  a torch.cuda.memory._snapshot() pickle of a real step against the prediction\n"
    "             for the same flags (--stats F: the run's torch.cuda.memory_stats() as JSON)\n"

    "  advise     layouts (tp, sp, pp, vpp, cp, dp, ep, ZeRO, micro-batch, schedule, recompute)\n"
    "             that fit the GPU, ranked: --num-gpus N|MIN:MAX --global-batch B [--limit K]\n"
    "  data       sequence lengths batched as the run batches them: the worst micro-batch, how\n"
    "             many micro-batches and steps pass the GPU, the longest row that fits:\n"
    "             --lengths FILE (JSONL: an integer, {\"length\": n}, {\"input_ids\": [...]} or\n"
    "             {\"prompt\": p, \"response\": r} per line; or a JSON array) --batching "
    "padded|padding_free|token_budget\n"
    "             --pad-to-multiple-of N --max-tokens N --step-sequences N\n"
    "             --iteration-sequences N (token_budget: verl's dynamic batch size); --seq\n"
    "             cuts longer sequences\n"
    "  rl         an RL step (GRPO or PPO, verl's FSDP trainer beside a vLLM rollout on every\n"
    "             GPU; framework=trl, framework=openrlhf with rollout.mode=colocate|separate)\n"
    "             phase by phase: --rl KEY=VALUE (algorithm=ppo, reference=true,\n"
    "             param_offload=true, rollout.tp=2, rollout.gpu_memory_utilization=0.5,\n"
    "             rollout.max_num_seqs=256, rollout.cudagraph_bytes=N, ...; docs/schema.md,\n"
    "             The rl answer)\n"
    "  presets    list model, GPU and worked-example presets\n"
    "model:   --preset ID | --model FILE (our JSON or a Hugging Face config.json)\n"
    "config:  --config FILE, then flags override it:\n"
    "  --micro-batch N --seq N --grad-accum N --dtype fp32|bf16|fp16|fp8\n"
    "  --param-dtype D --grad-dtype D --no-master-weights --optimizer "
    "adamw|sgd|sgd_momentum|adam8bit|adafactor\n"
    "  --tp N --sp --pp N --vpp N --cp N --dp N --zero 0..3 --ep N\n"
    "  --attention eager|flash|sdpa_math|sdpa_cudnn --dropout P --attention-dropout P\n"
    "  --hidden-dropout P\n"
    "  --profile megatron|textbook|pytorch|hf --recompute none|selective|full|every:K --offload\n"
    "  --gpu ID | --gpu-memory SIZE (e.g. 80GiB) | --budget SIZE\n"
    "  --schedule gpipe|1f1b|interleaved|zb-h1|zb-v|dualpipe|dualpipev --micro-batches M\n"
    "  --layer-split 7,8,...,7 --fragmentation PCT\n"
    "  --custom-keep id,id (with --recompute custom) --moe-imbalance R (busiest EP rank's routed\n"
    "  tokens over the mean, dropless MoE, 1..ep) --mtp (train with the model's MTP depths)\n"
    "  --optimizer-dtype fp32|bf16|fp16 (AdamW/SGD states; bf16 when torch.optim runs on bf16\n"
    "  parameters without master weights)\n"
    "  --optimizer-impl auto|foreach|fused|for-loop (AdamW's step: its transient)\n"
    "  --compile (torch.compile: what inductor's partitioner saves; --profile pytorch: each\n"
    "  block, the blocks measured; --profile hf: the whole model, Trainer's torch_compile;\n"
    "  docs/validation.md 6.2) --activation-memory-budget 1\n"
    "framework: --framework plain|megatron-lm|torchtitan|deepspeed|hf-trainer|verl (documented\n"
    "  defaults for the keys you leave out; the answer lists them)\n"
    "  --shard-group dp|dp-cp (ZeRO/FSDP shard ranks)\n"
    "  --dp-replicate R (hybrid sharding: R replicas, each sharding over dp/R ranks)\n"
    "  --reshard-after-forward true|false --accumulate-unsharded true|false (FSDP, zero 3)\n"
    "  --fsdp-version 1|2 (verl's strategy fsdp or fsdp2; torchtitan: 2)\n"
    "  --loss eager|chunked:K|compiled|fused (PyTorch's loss as run: kept tensors, buffers)\n"
    "  --loss logprob|logprob_torch[+entropy[:eager|chunked|checkpoint]] (verl's RL actor:\n"
    "  log-probabilities, entropy, PPO's clipped loss) --response-len R (its response tokens)\n"
    "  --optimizer-offload true|false (ZeRO-Offload, zero 2/3: optimizer on the host)\n"
    "  --lora-rank R --lora-targets q_proj,v_proj,... --lora-dropout P --lora-dtype fp32|bf16\n"
    "  --qlora (LoRA as peft runs it; QLoRA's NF4 base weights)\n"
    "  --float8 none|tensorwise|rowwise|mxfp8 (torchao's float8 linears: what they save)\n"
    "  --float8 delayed --fp8-amax-history L (TransformerEngine's fp8 under the megatron\n"
    "  profile: fp8 linear inputs, cached fp8 weights and transposes)\n"
    "  --float8-all-gather true|false (tensorwise, zero 3: FSDP gathers e4m3 weights)\n"
    "  --ddp-bucket-view true|false (PyTorch DDP's gradient_as_bucket_view; false keeps a\n"
    "  gradient copy in its buckets)\n"
    "  --async-tp true|false (Megatron-LM --tp-comm-overlap / torchtitan async TP buffers)\n"
    "device:  --alloc-conf TEXT (PYTORCH_CUDA_ALLOC_CONF, e.g. expandable_segments:True)\n"
    "  --cuda-context-bytes N --nccl-comm-bytes N (fixed costs per GPU / per communicator)\n"
    "  --gpus-per-node N (default 8: which NCCL groups stay inside a node)\n"
    "  --device-stages worst|all (replay the most loaded pipeline stage, or every one)\n"
    "  --csv (timeline events), --sweep-micro-batches 1,2,4 --sweep-seqs 1024,2048 (sweep)\n"
    "run:     --megatron-args FILE (a Megatron-LM launch's arguments, read as the config)\n"
    "  --torchtitan-toml FILE (a torchtitan job config, 9dec370 layout, read as the config)\n"
    "  --emit megatron|torchtitan|sac (estimate, plan, advise): the configuration\n"
    "  as Megatron-LM arguments, a torchtitan TOML or a PyTorch selective-checkpointing policy\n"
    "output:  --json (machine-readable; the schema is docs/schema.md)\n"
    "exit codes: 0 ok, 2 bad input\n";

namespace {

bool read_file(const std::string& path, std::string* out) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  // At most one byte past the bound is kept: parse_json_text then refuses the text by its size
  // (a 3 GB file took 6 GB and 13 s when read whole first). Read in 64 KiB pieces: a buffer of
  // the bound made every read zero 16 MiB (fuzz runs: ~100 ms per input under ASan).
  std::string text;
  char piece[1 << 16];
  while (text.size() <= kMaxJsonTextBytes && f) {
    f.read(piece, sizeof piece);
    text.append(piece, static_cast<std::size_t>(f.gcount()));
  }
  if (text.size() > kMaxJsonTextBytes + 1) text.resize(kMaxJsonTextBytes + 1);
  *out = std::move(text);
  return true;
}

constexpr auto kReplace = json::error_handler_t::replace;

// Integers stay JSON numbers so the engine's own validation names the config field; anything
// else is passed as a string and rejected there with the same field-named message.
json number_or_string(const std::string& v) {
  json j = json::parse(v, nullptr, false);
  // true/false stay JSON booleans for the switches that take them (--reshard-after-forward).
  if (!j.is_discarded() && (j.is_number() || j.is_boolean())) return j;
  return v;
}

}  // namespace

std::string shown(const std::string& s) {
  return json(s.size() > 80 ? s.substr(0, 77) + "..." : s).dump(-1, ' ', true, kReplace);
}
std::string shown_value(const json& v) {
  const std::string d = v.dump(-1, ' ', true, kReplace);
  return d.size() > 80 ? d.substr(0, 77) + "..." : d;
}

namespace {

// Flag -> config key, for flags taking a value.
const std::pair<const char*, const char*> kValued[] = {
    {"--micro-batch", "micro_batch"},
    {"--seq", "seq"},
    {"--grad-accum", "grad_accum"},
    {"--dtype", "dtype"},
    {"--param-dtype", "param_dtype"},
    {"--grad-dtype", "grad_dtype"},
    {"--optimizer", "optimizer"},
    {"--tp", "tp"},
    {"--pp", "pp"},
    {"--vpp", "vpp"},
    {"--cp", "cp"},
    {"--dp", "dp"},
    {"--zero", "zero"},
    {"--ep", "ep"},
    {"--attention", "attention"},
    {"--dropout", "dropout"},
    {"--attention-dropout", "attention_dropout"},
    {"--hidden-dropout", "hidden_dropout"},
    {"--profile", "profile"},
    {"--recompute", "recompute"},
    {"--gpu", "gpu"},
    {"--schedule", "schedule"},
    {"--micro-batches", "micro_batches"},
    {"--fragmentation", "fragmentation_pct"},
    {"--moe-imbalance", "moe_imbalance"},
    {"--optimizer-dtype", "optimizer_dtype"},
    {"--optimizer-impl", "optimizer_impl"},
    {"--activation-memory-budget", "activation_memory_budget"},
    {"--alloc-conf", "alloc_conf"},
    {"--cuda-context-bytes", "cuda_context_bytes"},
    {"--nccl-comm-bytes", "nccl_comm_bytes"},
    {"--gpus-per-node", "gpus_per_node"},
    {"--device-stages", "device_stages"},
    {"--framework", "framework"},
    {"--shard-group", "shard_group"},
    {"--dp-replicate", "dp_replicate"},
    {"--float8", "float8"},
    {"--ddp-bucket-view", "ddp_bucket_view"},
    {"--async-tp", "async_tp"},
    {"--float8-all-gather", "float8_all_gather"},
    {"--fp8-amax-history", "fp8_amax_history"},
    {"--reshard-after-forward", "reshard_after_forward"},
    {"--fsdp-version", "fsdp_version"},
    {"--accumulate-unsharded", "accumulate_unsharded"},
    {"--loss", "loss"},
    {"--response-len", "response_len"},
    {"--optimizer-offload", "optimizer_offload"},
    {"--lora-rank", "lora_rank"},
    {"--lora-dropout", "lora_dropout"},
    {"--lora-dtype", "lora_dtype"}};

// The boolean flags: each sets an output option or a config key, and takes no value (`--sp=false`
// would otherwise read as true).
struct Boolean {
  const char* flag;
  bool Options::*option;  // an output option, or
  const char* key;        // a config key set to `value`
  bool value;
};
const Boolean kBoolean[] = {{"--json", &Options::json, nullptr, true},
                            {"--csv", &Options::csv, nullptr, true},
                            {"--help", &Options::help, nullptr, true},
                            {"-h", &Options::help, nullptr, true},
                            {"--sp", nullptr, "sp", true},
                            {"--offload", nullptr, "offload", true},
                            {"--mtp", nullptr, "mtp", true},
                            {"--no-master-weights", nullptr, "master_weights", false},
                            {"--qlora", nullptr, "qlora", true},
                            {"--compile", nullptr, "compile", true}};

// Flags override files, aliases included: a flag's key replaces the file's other spellings of the
// same setting, which would otherwise conflict with it (or, for dropout, win over it).
const std::pair<const char*, const char*> kAliases[] = {{"micro_batches", "grad_accum"},
                                                        {"grad_accum", "micro_batches"},
                                                        {"dropout", "attention_dropout"},
                                                        {"dropout", "hidden_dropout"},
                                                        {"gpu_memory", "gpu_memory_bytes"}};

// The command line read argument by argument: each kind of flag has its own function, tried in
// the order they always were, so the first error a command line meets is the same.
class ArgParser {
 public:
  ArgParser(const std::vector<std::string>& argv, Options* o) : argv_(argv), o_(*o) {}

  std::string parse() {
    if (std::string err = read_command(); !err.empty() || o_.help) return err;
    for (; i_ < argv_.size(); ++i_)
      if (std::string err = read_flag(); !err.empty()) return err;
    return finish();
  }

 private:
  std::string read_command();
  std::string read_flag();
  bool boolean(std::string* err);
  bool valued(std::string* err);
  bool advise(std::string* err);
  bool data(std::string* err);
  bool rl(std::string* err);
  bool request_key(std::string* err);
  bool model_or_config(std::string* err);
  bool list(std::string* err);
  bool budget(std::string* err);
  std::string finish();

  // The current flag's value: after '=' ("--seq=4096"), else the next argument unless that is
  // itself an option ("--seq --tp 2" is a missing value for --seq, not a bad option "2"); "-5"
  // stays a value for the engine to refuse. False (and missing_ says why) without one.
  bool value(std::string* v) {
    if (inline_value_) {
      *v = argv_[i_].substr(eq_ + 1);
      return true;
    }
    if (i_ + 1 >= argv_.size()) return false;
    if (argv_[i_ + 1].rfind("--", 0) == 0) {
      missing_ = ", got the option " + json(argv_[i_ + 1]).dump(-1, ' ', true, kReplace);
      return false;
    }
    *v = argv_[++i_];
    return true;
  }
  // A file's text into a request key, once.
  bool file_key(const char* flag, const char* key, const char* needs, std::string* err);

  const std::vector<std::string>& argv_;
  Options& o_;
  std::size_t i_ = 0;
  json cfg_file_ = json::object();
  std::map<std::string, std::string> cfg_from_;  // config key -> the --config file that gave it
  json cfg_flags_ = json::object();
  // The boolean flag just read, if the previous argument was one: a word after it ("--offload
  // true") is a value given to a flag that takes none, not an unknown option.
  const char* after_boolean_ = nullptr;
  const char* prev_boolean_ = nullptr;
  // The current argument: the flag before any '=', and whether a value followed it.
  std::string a_;
  std::size_t eq_ = std::string::npos;
  bool inline_value_ = false;
  std::string missing_;
};

std::string ArgParser::read_command() {
  if (!argv_.empty() && argv_[0].rfind("--", 0) != 0)
    o_.command = argv_[i_++];
  else
    o_.command = "estimate";
  if (o_.command == "help") {
    o_.help = true;
    return "";
  }
  if (o_.command == "compare") {
    // compare SNAPSHOT: the file comes first, then the usual model and config flags.
    if (i_ >= argv_.size() || argv_[i_].rfind("--", 0) == 0)
      return "compare: needs a snapshot file (torch.cuda.memory._dump_snapshot's pickle), then "
             "the model and config flags of the run";
    o_.snapshot_path = argv_[i_++];
  }
  if (o_.command != "estimate" && o_.command != "explain" && o_.command != "presets" &&
      o_.command != "timeline" && o_.command != "fit" && o_.command != "plan" &&
      o_.command != "sweep" && o_.command != "compare" && o_.command != "advise" &&
      o_.command != "data" && o_.command != "rl")
    return "command: " + shown(o_.command) +
           " is not allowed; allowed: estimate, explain, timeline, fit, plan, sweep, compare, "
           "advise, data, rl, presets";
  return "";
}

std::string ArgParser::read_flag() {
  prev_boolean_ = after_boolean_;
  after_boolean_ = nullptr;
  // "--seq=4096" is "--seq 4096" (the value may hold further '=' or be empty).
  eq_ = argv_[i_].rfind("--", 0) == 0 ? argv_[i_].find('=') : std::string::npos;
  a_ = argv_[i_].substr(0, eq_);
  inline_value_ = eq_ != std::string::npos;
  missing_.clear();
  std::string err;
  if (boolean(&err) || valued(&err) || advise(&err) || data(&err) || rl(&err) ||
      request_key(&err) || model_or_config(&err) || list(&err) || budget(&err))
    return err;
  if (prev_boolean_ && !argv_[i_].empty() && argv_[i_][0] != '-')
    return std::string(prev_boolean_) + ": takes no value, got " + shown(argv_[i_]) + "; give " +
           prev_boolean_ + " alone";
  return shown(a_) +
         ": unknown option; allowed: --preset --model --config --micro-batch --seq "
         "--grad-accum "
         "--micro-batches --dtype --param-dtype --grad-dtype --no-master-weights --optimizer "
         "--tp --sp --pp --vpp --cp "
         "--dp --zero --ep --attention --dropout --attention-dropout --hidden-dropout "
         "--profile --recompute --offload "
         "--schedule --gpu --gpu-memory --budget --json --csv --megatron-args "
         "--torchtitan-toml "
         "--emit "
         "(advise: --num-gpus --global-batch --limit; data: --lengths --batching "
         "--pad-to-multiple-of --max-tokens --step-sequences --iteration-sequences; rl: --rl "
         "KEY=VALUE)";
}

bool ArgParser::boolean(std::string* err) {
  const Boolean* b = nullptr;
  for (const Boolean& x : kBoolean)
    if (a_ == x.flag) b = &x;
  if (!b) return false;
  if (inline_value_)
    *err = a_ + ": takes no value, got " + shown(argv_[i_].substr(eq_)) + "; give " + a_ + " alone";
  else if (b->option)
    o_.*(b->option) = b->value;
  else
    cfg_flags_[b->key] = b->value;
  after_boolean_ = b->flag;
  return true;
}

bool ArgParser::valued(std::string* err) {
  for (const auto& [flag, key] : kValued) {
    if (a_ != flag) continue;
    std::string v;
    if (!value(&v)) {
      *err = std::string(flag) + ": needs a value" + missing_;
      return true;
    }
    const json given = number_or_string(v);
    if (cfg_flags_.contains(key) && cfg_flags_[key] != given) {
      *err = std::string(flag) + ": given twice (" + shown_value(cfg_flags_[key]) + " and " +
             shown_value(given) + "); give it once";
      return true;
    }
    cfg_flags_[key] = given;
    return true;
  }
  return false;
}

// advise's search: the GPU count (or MIN:MAX), the global batch, the layouts listed.
bool ArgParser::advise(std::string* err) {
  if (a_ != "--num-gpus" && a_ != "--global-batch" && a_ != "--limit") return false;
  if (o_.command != "advise") {
    *err = a_ + ": read only by the advise command";
    return true;
  }
  const char* key = a_ == "--num-gpus"       ? "num_gpus"
                    : a_ == "--global-batch" ? "global_batch"
                                             : "limit";
  std::string v;
  if (!value(&v))
    *err = a_ + ": needs a value" + missing_;
  else if (o_.request.contains("advise") && o_.request["advise"].contains(key))
    *err = a_ + ": given twice; give it once";
  else
    o_.request["advise"][key] = number_or_string(v);  // a range stays text ("8:64")
  return true;
}

// rl's settings, one KEY=VALUE per flag ("rollout.tp=2" sets rl.rollout.tp).
bool ArgParser::rl(std::string* err) {
  if (a_ != "--rl") return false;
  std::string v;
  if (o_.command != "rl") {
    *err = "--rl: read only by the rl command";
    return true;
  }
  if (!value(&v)) {
    *err = "--rl: needs KEY=VALUE" + missing_;
    return true;
  }
  const std::size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0) {
    *err = "--rl: " + shown(v) + " is not KEY=VALUE (e.g. rollout.tp=2)";
    return true;
  }
  std::string key = v.substr(0, eq);
  json* at = &o_.request["rl"];
  for (std::size_t dot; (dot = key.find('.')) != std::string::npos; key = key.substr(dot + 1)) {
    json& next = (*at)[key.substr(0, dot)];
    if (!next.is_null() && !next.is_object()) {
      *err = "--rl: " + shown(v) + " nests under a key given a value";
      return true;
    }
    at = &next;
  }
  if (at->contains(key)) {
    *err = "--rl: " + shown(v.substr(0, eq)) + " given twice; give it once";
    return true;
  }
  (*at)[key] = number_or_string(v.substr(eq + 1));
  return true;
}

// data's lengths file (its text, read here: the engine does no I/O) and how they are batched.
bool ArgParser::data(std::string* err) {
  static const std::pair<const char*, const char*> kData[] = {
      {"--lengths", "lengths"},
      {"--batching", "batching"},
      {"--pad-to-multiple-of", "pad_to_multiple_of"},
      {"--max-tokens", "max_tokens"},
      {"--step-sequences", "step_sequences"},
      {"--iteration-sequences", "iteration_sequences"}};
  const char* key = nullptr;
  for (const auto& [flag, k] : kData)
    if (a_ == flag) key = k;
  if (!key) return false;
  std::string v;
  if (o_.command != "data")
    *err = a_ + ": read only by the data command";
  else if (!value(&v))
    *err = a_ + ": needs a value" + missing_;
  else if (o_.request.contains("data") && o_.request["data"].contains(key))
    *err = a_ + ": given twice; give it once";
  else if (std::string(key) != "lengths")
    o_.request["data"][key] = number_or_string(v);
  else if (std::string text; !read_file(v, &text))
    *err = "--lengths: cannot read " + shown(v);
  else if (text.size() > kMaxJsonTextBytes)
    *err = "--lengths: " + shown(v) + " is larger than the " + std::to_string(kMaxJsonTextBytes) +
           " bytes read (docs/reliability.md)";
  else
    o_.request["data"]["lengths"] = std::move(text);
  return true;
}

bool ArgParser::file_key(const char* flag, const char* key, const char* needs, std::string* err) {
  std::string v, text;
  if (!value(&v))
    *err = std::string(flag) + ": needs " + needs + missing_;
  else if (o_.request.contains(key))
    *err = std::string(flag) + ": given twice; give it once";
  else if (!read_file(v, &text))
    *err = std::string(flag) + ": cannot read " + shown(v);
  else
    o_.request[key] = text;
  return true;
}

// The request keys a flag gives directly: emit, a launch's configuration, compare's stats.
bool ArgParser::request_key(std::string* err) {
  std::string v;
  if (a_ == "--emit") {
    if (!value(&v))
      *err = "--emit: needs megatron, torchtitan or sac" + missing_;
    else if (o_.request.contains("emit"))
      *err = "--emit: given twice; give it once";
    else
      o_.request["emit"] = v;
    return true;
  }
  if (a_ == "--megatron-args")
    return file_key("--megatron-args", "megatron_args", "a file of Megatron-LM arguments", err);
  if (a_ == "--torchtitan-toml")
    return file_key("--torchtitan-toml", "torchtitan_toml", "a torchtitan job config TOML file",
                    err);
  if (a_ != "--stats") return false;
  if (o_.command != "compare")
    *err = "--stats: read only by the compare command";
  else if (!value(&v))
    *err = "--stats: needs a file of torch.cuda.memory_stats() as JSON" + missing_;
  else if (!o_.stats_path.empty())
    *err = "--stats: given twice; give it once";
  else
    o_.stats_path = v;
  return true;
}

// The model (--preset or --model, once) and config files (several merge; a key two files give
// differently is a conflict, not last-one-wins).
bool ArgParser::model_or_config(std::string* err) {
  if (a_ != "--preset" && a_ != "--model" && a_ != "--config") return false;
  std::string v, text;
  if (a_ == "--preset") {
    if (!value(&v))
      *err = "--preset: needs a model preset id (see `actmem presets`)" + missing_;
    else if (o_.request.contains("model") || o_.request.contains("preset"))
      *err = "--preset: give one model (--model or --preset, once)";
    else
      o_.request["preset"] = v;
    return true;
  }
  if (!value(&v)) {
    *err = a_ + ": needs a file" + missing_;
    return true;
  }
  if (a_ == "--model" && (o_.request.contains("model") || o_.request.contains("preset"))) {
    *err = "--model: give one model (--model or --preset, once)";
    return true;
  }
  if (!read_file(v, &text)) {
    *err = a_ + ": cannot read " + shown(v);
    return true;
  }
  auto j = parse_json_text(text, a_ == "--model" ? "model" : "config");
  if (!j.ok())
    *err = j.error().message;
  else if (a_ == "--model")
    o_.request["model"] = j.value();
  else if (!j.value().is_object())
    *err = "config: must be a JSON object";
  else
    for (auto it = j.value().begin(); it != j.value().end() && err->empty(); ++it) {
      auto prev = cfg_file_.find(it.key());
      if (prev != cfg_file_.end() && *prev != it.value())
        *err = "--config: " + shown(it.key()) + " is " + shown_value(*prev) + " in " +
               shown(cfg_from_[it.key()]) + " and " + shown_value(it.value()) + " in " + shown(v) +
               "; give it once (a flag overrides every file)";
      cfg_file_[it.key()] = it.value();
      cfg_from_[it.key()] = v;
    }
  return true;
}

// Comma-separated lists: config keys (layer_split, custom_keep, lora_targets) or sweep's axes.
bool ArgParser::list(std::string* err) {
  if (a_ != "--layer-split" && a_ != "--custom-keep" && a_ != "--sweep-micro-batches" &&
      a_ != "--sweep-seqs" && a_ != "--lora-targets")
    return false;
  std::string v;
  if (!value(&v)) {
    *err = a_ + ": needs a comma-separated list" + missing_;
    return true;
  }
  const bool names = a_ == "--custom-keep" || a_ == "--lora-targets";
  json items = json::array();
  for (std::size_t start = 0; start <= v.size();) {
    const std::size_t comma = v.find(',', start);
    const std::string item =
        v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    items.push_back(names ? json(item) : number_or_string(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const char* key = a_ == "--layer-split"    ? "layer_split"
                    : a_ == "--custom-keep"  ? "custom_keep"
                    : a_ == "--lora-targets" ? "lora_targets"
                                             : nullptr;
  const char* axis = a_ == "--sweep-seqs" ? "seqs" : "micro_batches";
  const bool given = key ? cfg_flags_.contains(key)
                         : o_.request.contains("sweep") && o_.request["sweep"].contains(axis);
  if (given)
    *err = a_ + ": given twice; give it once";
  else if (key)
    cfg_flags_[key] = items;
  else
    o_.request["sweep"][axis] = items;
  return true;
}

// The budget as a size: the engine reads it (config.gpu_memory, size.hpp: exact, no double) and
// names the field in its message, the same one the page shows. The flag replaces a config file's
// budget in either form.
bool ArgParser::budget(std::string* err) {
  if (a_ != "--gpu-memory" && a_ != "--budget") return false;
  std::string v;
  if (!value(&v))
    *err = a_ + ": needs a size such as 80GiB" + missing_;
  else if (cfg_flags_.contains("gpu_memory"))
    *err = a_ +
           ": the budget is given twice (--gpu-memory and --budget are one setting); give it once";
  else
    cfg_flags_["gpu_memory"] = v;
  return true;
}

// Flags over files, then the options one command reads refused on the others (they would change
// nothing there).
std::string ArgParser::finish() {
  for (const auto& [flag_key, file_key] : kAliases)
    if (cfg_flags_.contains(flag_key)) cfg_file_.erase(file_key);
  for (auto it = cfg_flags_.begin(); it != cfg_flags_.end(); ++it) cfg_file_[it.key()] = it.value();
  // presets lists; a model or config option there would be silently ignored, so it is refused.
  if (o_.command == "presets" && (!cfg_file_.empty() || o_.request.contains("preset") ||
                                  o_.request.contains("model") || o_.request.contains("sweep")))
    return "presets: takes no model or config options (only --json); got " +
           std::string(!cfg_file_.empty() ? "config key " + shown(cfg_file_.begin().key())
                                          : "a model or sweep option");
  if (o_.csv && o_.command != "timeline")
    return "--csv: read only by timeline (its events as CSV), not by " + o_.command;
  if (o_.csv && o_.json) return "--csv: give --csv or --json, not both";
  if (o_.command != "sweep" && o_.command != "presets" && o_.request.contains("sweep"))
    return std::string(o_.request["sweep"].contains("seqs") ? "--sweep-seqs"
                                                            : "--sweep-micro-batches") +
           ": read only by sweep, not by " + o_.command;
  if (!cfg_file_.empty()) o_.request["config"] = cfg_file_;
  if (o_.command != "estimate") o_.request["command"] = o_.command;
  return "";
}

}  // namespace

std::string parse_args(const std::vector<std::string>& argv, Options* o) {
  return ArgParser(argv, o).parse();
}

}  // namespace actmem::cli

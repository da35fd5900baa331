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
    "framework: --framework plain|megatron-lm|torchtitan|deepspeed|hf-trainer (documented\n"
    "  defaults for the keys you leave out; the answer lists them)\n"
    "  --shard-group dp|dp-cp (ZeRO/FSDP shard ranks)\n"
    "  --dp-replicate R (hybrid sharding: R replicas, each sharding over dp/R ranks)\n"
    "  --reshard-after-forward true|false --accumulate-unsharded true|false (FSDP, zero 3)\n"
    "  --loss eager|chunked:K|compiled|fused (PyTorch's loss as run: kept tensors, buffers)\n"
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

std::string parse_args(const std::vector<std::string>& argv, Options* o) {
  json cfg_file = json::object();
  std::map<std::string, std::string> cfg_from;  // config key -> the --config file that gave it
  json cfg_flags = json::object();
  std::size_t i = 0;
  if (!argv.empty() && argv[0].rfind("--", 0) != 0)
    o->command = argv[i++];
  else
    o->command = "estimate";
  if (o->command == "help") {
    o->help = true;
    return "";
  }
  if (o->command == "compare") {
    // compare SNAPSHOT: the file comes first, then the usual model and config flags.
    if (i >= argv.size() || argv[i].rfind("--", 0) == 0)
      return "compare: needs a snapshot file (torch.cuda.memory._dump_snapshot's pickle), then "
             "the model and config flags of the run";
    o->snapshot_path = argv[i++];
  }
  if (o->command != "estimate" && o->command != "explain" && o->command != "presets" &&
      o->command != "timeline" && o->command != "fit" && o->command != "plan" &&
      o->command != "sweep" && o->command != "compare" && o->command != "advise")
    return "command: " + shown(o->command) +
           " is not allowed; allowed: estimate, explain, timeline, fit, plan, sweep, compare, "
           "advise, presets";
  // Flag -> config key, for flags taking a value.
  static const std::pair<const char*, const char*> kValued[] = {
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
      {"--accumulate-unsharded", "accumulate_unsharded"},
      {"--loss", "loss"},
      {"--optimizer-offload", "optimizer_offload"},
      {"--lora-rank", "lora_rank"},
      {"--lora-dropout", "lora_dropout"},
      {"--lora-dtype", "lora_dtype"}};
  // The boolean flag just read, if the previous argument was one: a word after it ("--offload
  // true") is a value given to a flag that takes none, not an unknown option.
  const char* after_boolean = nullptr;
  for (; i < argv.size(); ++i) {
    const char* prev_boolean = after_boolean;
    after_boolean = nullptr;
    // "--seq=4096" is "--seq 4096" (the value may hold further '=' or be empty).
    const std::size_t eq = argv[i].rfind("--", 0) == 0 ? argv[i].find('=') : std::string::npos;
    const std::string a = argv[i].substr(0, eq);
    const bool inline_value = eq != std::string::npos;
    // A flag's value is the next argument unless that is itself an option ("--seq --tp 2" is a
    // missing value for --seq, not a bad option "2"); "-5" stays a value for the engine to refuse.
    std::string missing;
    auto value = [&](std::string* v) -> bool {
      if (inline_value) {
        *v = argv[i].substr(eq + 1);
        return true;
      }
      if (i + 1 >= argv.size()) return false;
      if (argv[i + 1].rfind("--", 0) == 0) {
        missing = ", got the option " + json(argv[i + 1]).dump(-1, ' ', true, kReplace);
        return false;
      }
      *v = argv[++i];
      return true;
    };
    std::string v;
    // The boolean flags, one table: each sets an option or a config key, and takes no value
    // (`--sp=false` would otherwise read as true).
    struct Boolean {
      const char* flag;
      bool* option;     // an output option, or
      const char* key;  // a config key set to `value`
      bool value;
    };
    const Boolean kBoolean[] = {{"--json", &o->json, nullptr, true},
                                {"--csv", &o->csv, nullptr, true},
                                {"--help", &o->help, nullptr, true},
                                {"-h", &o->help, nullptr, true},
                                {"--sp", nullptr, "sp", true},
                                {"--offload", nullptr, "offload", true},
                                {"--mtp", nullptr, "mtp", true},
                                {"--no-master-weights", nullptr, "master_weights", false},
                                {"--qlora", nullptr, "qlora", true}};
    const Boolean* boolean = nullptr;
    for (const Boolean& b : kBoolean)
      if (a == b.flag) boolean = &b;
    if (boolean) {
      if (inline_value)
        return a + ": takes no value, got " + shown(argv[i].substr(eq)) + "; give " + a + " alone";
      if (boolean->option)
        *boolean->option = boolean->value;
      else
        cfg_flags[boolean->key] = boolean->value;
      after_boolean = boolean->flag;
      continue;
    }
    bool matched = false;
    for (const auto& [flag, key] : kValued) {
      if (a != flag) continue;
      matched = true;
      if (!value(&v)) return std::string(flag) + ": needs a value" + missing;
      const json given = number_or_string(v);
      if (cfg_flags.contains(key) && cfg_flags[key] != given)
        return std::string(flag) + ": given twice (" + shown_value(cfg_flags[key]) + " and " +
               shown_value(given) + "); give it once";
      cfg_flags[key] = given;
    }
    if (matched) continue;
    // advise's search: the GPU count (or MIN:MAX), the global batch, the layouts listed.
    if (a == "--num-gpus" || a == "--global-batch" || a == "--limit") {
      if (o->command != "advise") return a + ": read only by the advise command";
      const char* key = a == "--num-gpus"       ? "num_gpus"
                        : a == "--global-batch" ? "global_batch"
                                                : "limit";
      if (!value(&v)) return a + ": needs a value" + missing;
      if (o->request.contains("advise") && o->request["advise"].contains(key))
        return a + ": given twice; give it once";
      // A range stays text for the engine to read ("8:64"); a count is a number.
      o->request["advise"][key] = number_or_string(v);
      continue;
    }
    if (a == "--emit") {
      if (!value(&v)) return "--emit: needs megatron, torchtitan or sac" + missing;
      if (o->request.contains("emit")) return "--emit: given twice; give it once";
      o->request["emit"] = v;
      continue;
    }
    if (a == "--megatron-args") {
      if (!value(&v)) return "--megatron-args: needs a file of Megatron-LM arguments" + missing;
      if (o->request.contains("megatron_args")) return "--megatron-args: given twice; give it once";
      std::string text;
      if (!read_file(v, &text)) return "--megatron-args: cannot read " + shown(v);
      o->request["megatron_args"] = text;
      continue;
    }
    if (a == "--torchtitan-toml") {
      if (!value(&v)) return "--torchtitan-toml: needs a torchtitan job config TOML file" + missing;
      if (o->request.contains("torchtitan_toml"))
        return "--torchtitan-toml: given twice; give it once";
      std::string text;
      if (!read_file(v, &text)) return "--torchtitan-toml: cannot read " + shown(v);
      o->request["torchtitan_toml"] = text;
      continue;
    }
    if (a == "--stats") {
      if (o->command != "compare") return "--stats: read only by the compare command";
      if (!value(&v)) return "--stats: needs a file of torch.cuda.memory_stats() as JSON" + missing;
      if (!o->stats_path.empty()) return "--stats: given twice; give it once";
      o->stats_path = v;
      continue;
    }
    if (a == "--preset") {
      if (!value(&v)) return "--preset: needs a model preset id (see `actmem presets`)" + missing;
      if (o->request.contains("model") || o->request.contains("preset"))
        return "--preset: give one model (--model or --preset, once)";
      o->request["preset"] = v;
    } else if (a == "--model") {
      if (!value(&v)) return "--model: needs a file" + missing;
      if (o->request.contains("model") || o->request.contains("preset"))
        return "--model: give one model (--model or --preset, once)";
      std::string text;
      if (!read_file(v, &text)) return "--model: cannot read " + shown(v);
      auto j = parse_json_text(text, "model");
      if (!j.ok()) return j.error().message;
      o->request["model"] = j.value();
    } else if (a == "--config") {
      if (!value(&v)) return "--config: needs a file" + missing;
      std::string text;
      if (!read_file(v, &text)) return "--config: cannot read " + shown(v);
      auto j = parse_json_text(text, "config");
      if (!j.ok()) return j.error().message;
      if (!j.value().is_object()) return "config: must be a JSON object";
      // Several files merge; a key two files give differently is a conflict, not last-one-wins.
      for (auto it = j.value().begin(); it != j.value().end(); ++it) {
        auto prev = cfg_file.find(it.key());
        if (prev != cfg_file.end() && *prev != it.value())
          return "--config: " + shown(it.key()) + " is " + shown_value(*prev) + " in " +
                 shown(cfg_from[it.key()]) + " and " + shown_value(it.value()) + " in " + shown(v) +
                 "; give it once (a flag overrides every file)";
        cfg_file[it.key()] = it.value();
        cfg_from[it.key()] = v;
      }
    } else if (a == "--layer-split" || a == "--custom-keep" || a == "--sweep-micro-batches" ||
               a == "--sweep-seqs" || a == "--lora-targets") {
      if (!value(&v)) return a + ": needs a comma-separated list" + missing;
      json list = json::array();
      std::size_t start = 0;
      while (start <= v.size()) {
        const std::size_t comma = v.find(',', start);
        const std::string item =
            v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        list.push_back(a == "--custom-keep" || a == "--lora-targets" ? json(item)
                                                                     : number_or_string(item));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      const char* key = a == "--layer-split"    ? "layer_split"
                        : a == "--custom-keep"  ? "custom_keep"
                        : a == "--lora-targets" ? "lora_targets"
                                                : nullptr;
      const bool given =
          key ? cfg_flags.contains(key)
              : o->request.contains("sweep") &&
                    o->request["sweep"].contains(a == "--sweep-seqs" ? "seqs" : "micro_batches");
      if (given) return a + ": given twice; give it once";
      if (key)
        cfg_flags[key] = list;
      else
        o->request["sweep"][a == "--sweep-seqs" ? "seqs" : "micro_batches"] = list;
    } else if (a == "--gpu-memory" || a == "--budget") {
      if (!value(&v)) return a + ": needs a size such as 80GiB" + missing;
      // The engine reads the size (config.gpu_memory, size.hpp: exact, no double) and names the
      // field in its message, the same one the page shows. The flag replaces a config file's
      // budget in either form.
      if (cfg_flags.contains("gpu_memory"))
        return a +
               ": the budget is given twice (--gpu-memory and --budget are one setting); give "
               "it once";
      cfg_flags["gpu_memory"] = v;
    } else if (prev_boolean && !argv[i].empty() && argv[i][0] != '-') {
      return std::string(prev_boolean) + ": takes no value, got " + shown(argv[i]) + "; give " +
             prev_boolean + " alone";
    } else {
      return shown(a) +
             ": unknown option; allowed: --preset --model --config --micro-batch --seq "
             "--grad-accum "
             "--micro-batches --dtype --param-dtype --grad-dtype --no-master-weights --optimizer "
             "--tp --sp --pp --vpp --cp "
             "--dp --zero --ep --attention --dropout --attention-dropout --hidden-dropout "
             "--profile --recompute --offload "
             "--schedule --gpu --gpu-memory --budget --json --csv --megatron-args "
             "--torchtitan-toml "
             "--emit "
             "(advise: --num-gpus --global-batch --limit)";
    }
  }
  // Flags override files, aliases included: a flag's key replaces the file's other spellings of
  // the same setting, which would otherwise conflict with it (or, for dropout, win over it).
  static const std::pair<const char*, const char*> kAliases[] = {
      {"micro_batches", "grad_accum"},
      {"grad_accum", "micro_batches"},
      {"dropout", "attention_dropout"},
      {"dropout", "hidden_dropout"},
      {"gpu_memory", "gpu_memory_bytes"}};
  for (const auto& [flag_key, file_key] : kAliases)
    if (cfg_flags.contains(flag_key)) cfg_file.erase(file_key);
  for (auto it = cfg_flags.begin(); it != cfg_flags.end(); ++it) cfg_file[it.key()] = it.value();
  // presets lists; a model or config option there would be silently ignored, so it is refused.
  if (o->command == "presets" && (!cfg_file.empty() || o->request.contains("preset") ||
                                  o->request.contains("model") || o->request.contains("sweep")))
    return "presets: takes no model or config options (only --json); got " +
           std::string(!cfg_file.empty() ? "config key " + shown(cfg_file.begin().key())
                                         : "a model or sweep option");
  // Flags one command reads, refused on the others (they would change nothing there).
  if (o->csv && o->command != "timeline")
    return "--csv: read only by timeline (its events as CSV), not by " + o->command;
  if (o->csv && o->json) return "--csv: give --csv or --json, not both";
  if (o->command != "sweep" && o->command != "presets" && o->request.contains("sweep"))
    return std::string(o->request["sweep"].contains("seqs") ? "--sweep-seqs"
                                                            : "--sweep-micro-batches") +
           ": read only by sweep, not by " + o->command;
  if (!cfg_file.empty()) o->request["config"] = cfg_file;
  if (o->command != "estimate") o->request["command"] = o->command;
  return "";
}

}  // namespace actmem::cli

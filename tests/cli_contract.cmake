# CLI contract: exit 0 with JSON keys on good input, exit 2 with one field-named line on bad input.
function(expect_exit code)
  execute_process(COMMAND ${ACTMEM} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL ${code})
    message(FATAL_ERROR "actmem ${ARGN}: exit ${rc}, expected ${code}\n${out}\n${err}")
  endif()
  set(LAST_OUT "${out}" PARENT_SCOPE)
  set(LAST_ERR "${err}" PARENT_SCOPE)
endfunction()

expect_exit(0 estimate --preset llama-3.1-70b --seq 8192 --tp 8 --sp --pp 4 --recompute selective --gpu h100-80gb --json)
foreach(key "\"profile\"" "\"per_layer\"" "\"activation_bytes\"" "\"tensors\"" "\"activations\"" "\"static\"" "\"params_bytes\""
            "\"grads_bytes\"" "\"optimizer_bytes\"" "\"total_bytes\"" "\"fits\"")
  string(FIND "${LAST_OUT}" "${key}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "--json output lacks ${key}")
  endif()
endforeach()
expect_exit(0 estimate --preset gpt2)
expect_exit(0 explain --preset gpt2 --profile textbook)
expect_exit(0 presets)
expect_exit(0 estimate --model ${SRC}/presets/models/mistral-7b.json --config ${SRC}/tests/data/config-8k.json)

foreach(bad "--preset;nope" "--preset;gpt2;--tp;5" "--preset;gpt2;--tp;x" "--preset;gpt2;--seq;-1" "--preset;gpt2;--frobnicate"
            "--model;/nonexistent.json" "--preset;gpt2;--recompute;sometimes" "--preset;gpt2;--gpu-memory;lots"
            "--model;${SRC}/tests/data/bad-config.json")
  expect_exit(2 estimate ${bad})
  string(STRIP "${LAST_ERR}" line)
  string(FIND "${line}" "\n" nl)
  if(NOT nl EQUAL -1 OR NOT line MATCHES "^actmem: error: ")
    message(FATAL_ERROR "bad input '${bad}' should print one 'actmem: error:' line, got: ${LAST_ERR}")
  endif()
endforeach()

# Hostile input through the CLI's own paths (issue 12): each exits 2 with one line, never a crash,
# a hang or a silent exit 0.
function(expect_one_line_error what)
  string(STRIP "${LAST_ERR}" line)
  string(FIND "${line}" "\n" nl)
  if(NOT nl EQUAL -1 OR NOT line MATCHES "^actmem: error: ")
    message(FATAL_ERROR "${what}: should print one 'actmem: error:' line, got: ${LAST_ERR}")
  endif()
endfunction()
# A layer split whose sum wraps around 2^64 to the model's 32 layers.
expect_exit(2 estimate --preset llama-3.1-8b --pp 2 --layer-split 18446744073709551615,33)
expect_one_line_error("layer split sum wrap")
# 100,000 nested objects as a model and as a config file (the CLI used to overflow its stack).
string(REPEAT "{\"a\":" 100000 open)
string(REPEAT "}" 100000 close)
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/deep.json" "${open}1${close}")
expect_exit(2 estimate --model "${CMAKE_CURRENT_BINARY_DIR}/deep.json")
expect_one_line_error("deep --model")
expect_exit(2 estimate --preset gpt2 --config "${CMAKE_CURRENT_BINARY_DIR}/deep.json")
expect_one_line_error("deep --config")
# requests: a directory, and a stream with no newline (stops at the line bound, 16 MiB read).
expect_exit(2 requests "${CMAKE_CURRENT_BINARY_DIR}")
expect_one_line_error("requests DIRECTORY")
if(EXISTS /dev/zero)
  expect_exit(2 requests /dev/zero)
  expect_one_line_error("requests /dev/zero")
endif()
# Options the presets listing would ignore.
expect_exit(2 presets --seq abc)
expect_one_line_error("presets --seq abc")
# Sizes: two dots and a sign are not sizes.
expect_exit(2 estimate --preset gpt2 --gpu-memory 1..5GiB)
expect_one_line_error("--gpu-memory 1..5GiB")

# Each case: exit 2, one line, and the message names what it must (issue 12).
function(expect_error_naming needle)
  expect_exit(2 ${ARGN})
  expect_one_line_error("${ARGN}")
  string(FIND "${LAST_ERR}" "${needle}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "actmem ${ARGN}: the message should name '${needle}', got: ${LAST_ERR}")
  endif()
endfunction()
set(T "${CMAKE_CURRENT_BINARY_DIR}")
# A flag's missing value is blamed on the flag, not on the option after it.
expect_error_naming("--seq: needs a value, got the option \"--tp\"" estimate --preset gpt2 --seq --tp 2)
# A flag given twice with two values; two models.
expect_error_naming("--seq: given twice (1024 and 2048)" estimate --preset gpt2 --seq 1024 --seq 2048)
expect_error_naming("--model: give one model" estimate --preset gpt2 --model ${SRC}/presets/models/mistral-7b.json)
# The optimizer step's implementation: read only with AdamW, one of its names.
expect_error_naming("config.optimizer_impl: 'fusd' is not allowed; allowed: auto, foreach, fused, for-loop" estimate --preset gpt2 --optimizer-impl fusd)
expect_error_naming("config.optimizer_impl: 'fused' is read only with optimizer adamw; optimizer is sgd" estimate --preset gpt2 --optimizer sgd --optimizer-impl fused)
# torch.compile is measured for torchtitan's block under the pytorch profile only.
expect_error_naming("config.compile: the compiled block is measured for torchtitan's model (profile pytorch) and transformers' models compiled whole (profile hf); profile is megatron" estimate --preset llama-3.1-8b --compile)
# Two config files merge; the same key with two values is a conflict naming both files.
file(WRITE "${T}/ga3.json" "{\"grad_accum\": 3}")
file(WRITE "${T}/ga4.json" "{\"grad_accum\": 4}")
file(WRITE "${T}/mb5.json" "{\"micro_batches\": 5}")
file(WRITE "${T}/seq512.json" "{\"seq\": 512}")
expect_error_naming("\"grad_accum\" is 3 in" estimate --preset gpt2 --config "${T}/ga3.json" --config "${T}/ga4.json")
# ... and aliases of one setting conflict (grad_accum 3 with micro_batches 5 gave 5 silently).
expect_error_naming("config.micro_batches: 5 conflicts with config.grad_accum: 3" estimate --preset gpt2 --config "${T}/ga3.json" --config "${T}/mb5.json")
expect_exit(0 estimate --preset gpt2 --config "${T}/ga3.json" --config "${T}/seq512.json" --json)
string(FIND "${LAST_OUT}" "\"grad_accum\": 3" pos_ga)
string(FIND "${LAST_OUT}" "\"seq\": 512" pos_seq)
if(pos_ga EQUAL -1 OR pos_seq EQUAL -1)
  message(FATAL_ERROR "two --config files should merge (grad_accum 3 and seq 512): ${LAST_OUT}")
endif()
# A flag overrides a file's alias of the same setting instead of conflicting with it.
expect_exit(0 estimate --preset gpt2 --config "${T}/ga3.json" --micro-batches 7 --json)
string(FIND "${LAST_OUT}" "\"grad_accum\": 7" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "--micro-batches 7 should override the file's grad_accum 3: ${LAST_OUT}")
endif()
# A fixed buffer too large for the sums it joins is blamed on itself, not on config.seq.
file(WRITE "${T}/ws.json" "{\"cublas_workspace_bytes\": 18446744073709551615}")
expect_error_naming("config.cublas_workspace_bytes: 18446744073709551615 is more than" estimate --preset gpt2 --config "${T}/ws.json")
# Keys of the other naming are refused, never ignored.
file(WRITE "${T}/n_layer.json" "{\"n_layer\": 2, \"hidden_size\": 256, \"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"intermediate_size\": 512, \"vocab_size\": 1000, \"max_position_embeddings\": 128}")
expect_error_naming("model.n_layer: a GPT-2 key name" estimate --model "${T}/n_layer.json" --seq 64)
file(WRITE "${T}/gpt2_hidden.json" "{\"model_type\": \"gpt2\", \"n_embd\": 256, \"n_head\": 4, \"n_layer\": 2, \"vocab_size\": 1000, \"hidden_size\": 512}")
expect_error_naming("model.hidden_size: 512 conflicts with model.n_embd: 256; give one" estimate --model "${T}/gpt2_hidden.json" --seq 64)
file(WRITE "${T}/gpt2_inner.json" "{\"model_type\": \"gpt2\", \"n_embd\": 256, \"n_head\": 4, \"n_layer\": 2, \"vocab_size\": 1000, \"intermediate_size\": 512}")
expect_error_naming("model.intermediate_size: not read for model_type gpt2; this model reads n_inner" estimate --model "${T}/gpt2_inner.json" --seq 64)
# A mixture-of-experts model_type without its expert count is not a dense model.
file(WRITE "${T}/mixtral.json" "{\"model_type\": \"mixtral\", \"hidden_size\": 256, \"num_attention_heads\": 4, \"num_key_value_heads\": 4, \"num_hidden_layers\": 2, \"intermediate_size\": 512, \"vocab_size\": 1000}")
expect_error_naming("model.num_local_experts: required for model_type mixtral" estimate --model "${T}/mixtral.json" --seq 64)
# Names from a user's file reach the terminal escaped: no raw escape codes or extra lines.
string(ASCII 27 ESC)
file(WRITE "${T}/evil_name.json" "{\"metadata\": {\"name\": \"\\u001b[31mFITS\\nfake\"}, \"hidden_size\": 256, \"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"intermediate_size\": 512, \"vocab_size\": 1000, \"max_position_embeddings\": 128}")
expect_exit(0 estimate --model "${T}/evil_name.json" --seq 64)
string(FIND "${LAST_OUT}" "${ESC}" esc_pos)
string(FIND "${LAST_OUT}" "\\x1b[31mFITS\\x0afake" shown_pos)
if(NOT esc_pos EQUAL -1 OR shown_pos EQUAL -1)
  message(FATAL_ERROR "metadata.name should print escaped, got: ${LAST_OUT}")
endif()
# "--flag=value" is "--flag value"; a boolean flag with a value is refused, not read as true.
expect_exit(0 estimate --preset=gpt2 --seq=512 --json)
string(FIND "${LAST_OUT}" "\"seq\": 512" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "--seq=512 should set seq 512: ${LAST_OUT}")
endif()
expect_error_naming("--sp: takes no value, got \"=false\"" estimate --preset gpt2 --sp=false)
# ... and a word after a bare flag is that flag's value, not an unknown option "true".
expect_error_naming("--offload: takes no value, got \"true\"; give --offload alone" estimate --preset gpt2 --offload true)
expect_error_naming("--sp: takes no value, got \"1\"; give --sp alone" estimate --preset gpt2 --tp 2 --sp 1)
# Flags one command reads are refused on another, not ignored (hostile run, round 2).
expect_error_naming("--csv: read only by timeline" estimate --preset gpt2 --csv)
expect_error_naming("--csv: give --csv or --json, not both" timeline --preset gpt2 --csv --json)
expect_error_naming("--sweep-seqs: read only by sweep, not by estimate" estimate --preset gpt2 --sweep-seqs 1024)
expect_error_naming("config.custom_keep: is read only with recompute" estimate --preset gpt2 --custom-keep attn.qkv_in)
expect_error_naming("config.schedule: interleaved needs vpp > 1" estimate --preset llama-3.1-8b --pp 2 --schedule interleaved)
# A key given twice in a file, and a NUL byte inside one, are errors (nlohmann kept the last key
# and stopped reading at the NUL).
file(WRITE "${T}/dup.json" "{\"seq\": 2048, \"seq\": 4}")
expect_error_naming("config.seq: given twice in one object" estimate --preset gpt2 --config "${T}/dup.json")
# requests: whitespace-only lines are skipped like empty ones; one answer per request line.
file(WRITE "${T}/reqs.jsonl" "{\"command\": \"presets\"}\r\n  \t\r\n\n{\"command\": \"presets\"}\n   ")
expect_exit(0 requests "${T}/reqs.jsonl")
string(REGEX MATCHALL "\n" answers "${LAST_OUT}")
list(LENGTH answers n_answers)
if(NOT n_answers EQUAL 2 OR NOT LAST_OUT MATCHES "^{\"examples\"")
  message(FATAL_ERROR "requests should answer the 2 request lines and skip blank ones: ${LAST_OUT}")
endif()
# A GPU on timeline, explain and sweep tables: the verdict is printed, not dropped (round 2).
expect_exit(0 timeline --preset gpt2 --gpu rtx-4090)
string(FIND "${LAST_OUT}" "fits, headroom" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "timeline --gpu should print the verdict: ${LAST_OUT}")
endif()
expect_exit(0 sweep --preset llama-3.1-8b --gpu h100-80gb)
string(FIND "${LAST_OUT}" "* marks a cell over it" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "sweep --gpu should mark cells over the budget: ${LAST_OUT}")
endif()
expect_error_naming("config.attention_dropout: 0 conflicts with config.dropout" estimate --preset gpt2 --dropout 0.1 --attention-dropout 0)
expect_error_naming("config.seq: sweep takes its sequences" sweep --preset gpt2 --seq 512)
expect_error_naming("config.recompute: plan chooses the recompute policy" plan --preset gpt2 --gpu h100-80gb --recompute full)

# Issue 38: 10^9 routed experts exit 2 with one line naming the field (they aborted with
# bad_alloc); zb-v without --vpp runs with vpp 2 (the schedule's two chunks per rank).
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/experts.json"
     "{\"model_type\":\"mixtral\",\"hidden_size\":64,\"num_attention_heads\":4,\"num_key_value_heads\":4,\"num_hidden_layers\":2,\"intermediate_size\":128,\"vocab_size\":100,\"num_local_experts\":1000000000,\"num_experts_per_tok\":2}")
expect_exit(2 estimate --model "${CMAKE_CURRENT_BINARY_DIR}/experts.json" --gpu h100-80gb)
expect_one_line_error("10^9 experts")
if(NOT LAST_ERR MATCHES "^actmem: error: model.num_local_experts: ")
  message(FATAL_ERROR "10^9 experts: the error should name model.num_local_experts, got: ${LAST_ERR}")
endif()
expect_exit(0 estimate --preset llama-3.1-8b --seq 1024 --pp 2 --schedule zb-v --micro-batches 4 --json)
if(NOT LAST_OUT MATCHES "\"vpp\": 2")
  message(FATAL_ERROR "zb-v without --vpp should run with vpp 2")
endif()

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

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

// libFuzzer target: the `actmem` command line as a user drives it, arguments plus one file
// (fuzz_input.hpp's layout), through run_cli, the code the binary runs. Every input must end in
// exit 0 with clean output, or exit 2 with one escaped "actmem: error:" line; never a crash, a
// hang, a sanitizer report or another exit code.
#include <cstdlib>
#include <sstream>

#include "../engine/cli/run.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = actmem::fuzz::split_argv(data, size, 64);
  if (in.skip) return 0;
  std::istringstream stdin_stream;
  std::ostringstream out, err;
  const int rc = actmem::cli::run_cli(in.argv, stdin_stream, out, err);
  if (rc == 0) {
    if (!err.str().empty() || !actmem::fuzz::no_controls(out.str())) std::abort();
  } else if (rc == 2) {
    if (err.str().rfind("actmem: error: ", 0) != 0 || !actmem::fuzz::one_clean_line(err.str()))
      std::abort();
  } else {
    std::abort();
  }
  return 0;
}

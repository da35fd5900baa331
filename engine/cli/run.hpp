// The `actmem` command line as a function of its arguments and streams, so the fuzzer drives the
// same code as the binary (main.cpp only forwards argv and the standard streams).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace actmem::cli {

// Runs one command: answers on `out`, one "actmem: error: ..." line on `err`. `in` is what
// `requests -` reads. Returns the exit code: 0 ok, 2 bad input.
int run_cli(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
            std::ostream& err);

}  // namespace actmem::cli

// actmem: the command-line client of the engine; the commands live in run.cpp (run_cli).
#include <iostream>
#include <string>
#include <vector>

#include "run.hpp"

int main(int argc, char** argv) {
  return actmem::cli::run_cli(std::vector<std::string>(argv + 1, argv + argc), std::cin, std::cout,
                              std::cerr);
}

// Catch2 entry point for the actmem test suite (native and WebAssembly builds).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

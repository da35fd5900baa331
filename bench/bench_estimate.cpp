// Benchmark: one full estimate of the 405B preset (inventory, stages, static memory, explanations).
#include <benchmark/benchmark.h>

#include "actmem/estimate.hpp"
#include "actmem/json_io.hpp"

namespace {

actmem::TrainConfig config_405b() {
  actmem::TrainConfig c;
  c.micro_batch = 1;
  c.seq = 8192;
  c.par.tp = 8;
  c.par.sp = true;
  c.par.pp = 16;
  c.par.vpp = 2;
  c.par.dp = 8;
  c.par.zero = 1;
  c.attention = actmem::Attention::kFlash;
  c.recompute.kind = actmem::RecomputeKind::kSelective;
  return c;
}

void BM_Estimate405B(benchmark::State& state) {
  auto m = actmem::model_preset("llama-3.1-405b", nullptr);
  auto gpu = actmem::gpu_preset("h100-80gb");
  const actmem::TrainConfig c = config_405b();
  for (auto _ : state) {
    auto e = actmem::estimate(m.value(), c, &gpu.value());
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_Estimate405B);

void BM_EvaluateJson405B(benchmark::State& state) {
  const std::string req =
      R"({"preset":"llama-3.1-405b","config":{"micro_batch":1,"seq":8192,"tp":8,"sp":true,"pp":16,"vpp":2,)"
      R"("dp":8,"zero":1,"attention":"flash","recompute":"selective","gpu":"h100-80gb"}})";
  for (auto _ : state) benchmark::DoNotOptimize(actmem::evaluate(req));
}
BENCHMARK(BM_EvaluateJson405B);

}  // namespace

BENCHMARK_MAIN();

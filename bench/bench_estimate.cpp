// Benchmarks: the 405B preset (pp=16, vpp=2, 64 micro-batches): one estimate (with its simulated
// peak), the JSON entry point, the recompute planner, and the timeline with every event recorded.
#include <benchmark/benchmark.h>

#include "actmem/estimate.hpp"
#include "actmem/json_io.hpp"
#include "actmem/planner.hpp"
#include "actmem/timeline.hpp"

namespace {

actmem::TrainConfig config_405b() {
  actmem::TrainConfig c;
  c.micro_batch = 1;
  c.seq = 8192;
  c.par.tp = 8;
  c.par.sp = true;
  c.par.pp = 16;
  c.par.vpp = 2;
  c.grad_accum = 64;
  // Llama 3's split of 126 layers over 16 stages: one fewer on the first and the last.
  c.layer_split.assign(16, 8);
  c.layer_split.front() = c.layer_split.back() = 7;
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

// A single-stage estimate: the same work without 16 pipeline schedules to simulate.
void BM_Estimate8B(benchmark::State& state) {
  auto m = actmem::model_preset("llama-3.1-8b", nullptr);
  actmem::TrainConfig c;
  c.seq = 8192;
  c.attention = actmem::Attention::kFlash;
  c.recompute.kind = actmem::RecomputeKind::kSelective;
  for (auto _ : state) {
    auto e = actmem::estimate(m.value(), c, nullptr);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_Estimate8B);

void BM_EvaluateJson405B(benchmark::State& state) {
  const std::string req =
      R"({"preset":"llama-3.1-405b","config":{"micro_batch":1,"seq":8192,"tp":8,"sp":true,"pp":16,"vpp":2,)"
      R"("dp":8,"zero":1,"attention":"flash","recompute":"selective","gpu":"h100-80gb","micro_batches":64,)"
      R"("layer_split":[7,8,8,8,8,8,8,8,8,8,8,8,8,8,8,7]}})";
  for (auto _ : state) benchmark::DoNotOptimize(actmem::evaluate(req));
}
BENCHMARK(BM_EvaluateJson405B);

void BM_Plan405B(benchmark::State& state) {
  auto m = actmem::model_preset("llama-3.1-405b", nullptr);
  const actmem::TrainConfig c = config_405b();
  const actmem::Bytes budget = 80ull << 30;
  for (auto _ : state) {
    auto p = actmem::plan(m.value(), c, budget);
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_Plan405B)->Unit(benchmark::kMillisecond);

void BM_Timeline405BEvents(benchmark::State& state) {
  auto m = actmem::model_preset("llama-3.1-405b", nullptr);
  auto e = actmem::estimate(m.value(), config_405b(), nullptr);
  for (auto _ : state) {
    auto t = actmem::simulate(e.value(), true);
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_Timeline405BEvents)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

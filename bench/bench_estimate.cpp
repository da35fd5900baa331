// Benchmarks: the 405B preset (pp=16, vpp=2, 64 micro-batches): one estimate (with its simulated
// peak), the JSON entry point, the recompute planner, and the timeline with every event recorded.
// Each estimate benchmark also times, in the same run, a closed-form reference (Korthikanti et al.
// 2022's per-layer formula times the layers of each stage, what the fastest public estimators
// compute) and reports the ratio, so the figure means something on a noisy machine.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>

#include "actmem/api/api.hpp"
#include "actmem/device/device.hpp"
#include "actmem/json_io.hpp"
#include "actmem/plan/advisor.hpp"
#include "actmem/plan/planner.hpp"
#include "actmem/report/estimate.hpp"
#include "actmem/report/timeline.hpp"
#include "actmem/setup/setup.hpp"
#include "actmem/step/evaluation.hpp"

namespace {
// Every heap allocation of the process is counted, so a benchmark can report how many one call
// makes (evaluate's goal: none once its scratch has grown).
std::atomic<std::uint64_t> g_allocs{0};
}  // namespace

void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

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

// The closed-form reference: per layer s·b·h·(34 + 5·a·s/h) / t bytes (Korthikanti et al. 2022,
// Sec. 4.2.2, with SP; selective drops the 5as/h term), times the layers of each stage and the
// micro-batches the first stage holds, plus 16 bytes per parameter / (t·p): one number per stage.
double closed_form(const actmem::ModelSpec& m, const actmem::TrainConfig& c) {
  const double s = static_cast<double>(c.seq), b = static_cast<double>(c.micro_batch);
  const double h = static_cast<double>(m.hidden), t = static_cast<double>(c.par.tp);
  const double a = static_cast<double>(m.kinds[0].heads);
  const bool selective = c.recompute.kind == actmem::RecomputeKind::kSelective;
  const double per_layer = s * b * h * (34.0 + (selective ? 0.0 : 5.0 * a * s / h)) / t;
  double worst = 0;
  const double p = static_cast<double>(c.par.pp);
  for (std::uint64_t r = 0; r < c.par.pp; ++r) {
    const double layers =
        static_cast<double>(c.layer_split.empty() ? m.layers / c.par.pp : c.layer_split[r]);
    const double in_flight = p - static_cast<double>(r);
    const double stage = per_layer * layers * in_flight + 16.0 * 1.6e9 * layers / t;
    worst = stage > worst ? stage : worst;
  }
  return worst;
}

// Runs the closed form as many times as the benchmark ran and records the time ratio.
template <class Clock>
void ratio_vs_closed_form(benchmark::State& state, const actmem::ModelSpec& m,
                          const actmem::TrainConfig& c, typename Clock::duration engine) {
  const auto t0 = Clock::now();
  double acc = 0;
  for (benchmark::IterationCount i = 0; i < state.iterations(); ++i) {
    actmem::TrainConfig ci = c;
    ci.micro_batch = 1 + (static_cast<std::uint64_t>(i) & 1);  // defeat hoisting
    acc += closed_form(m, ci);
  }
  benchmark::DoNotOptimize(acc);
  const auto ref = Clock::now() - t0;
  state.counters["x_closed_form"] =
      std::chrono::duration<double>(engine).count() / std::chrono::duration<double>(ref).count();
}

// The peak path every search runs (no explanations): estimate's simulated peak.
void BM_EstimatePeak405B(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  auto m = actmem::model_preset("llama-3.1-405b", nullptr);
  actmem::TrainConfig c = config_405b();
  c.grad_accum = static_cast<std::uint64_t>(state.range(0));
  const auto t0 = Clock::now();
  for (auto _ : state) {
    auto e = actmem::estimate(m.value(), c, nullptr, false);
    benchmark::DoNotOptimize(e);
  }
  ratio_vs_closed_form<Clock>(state, m.value(), c, Clock::now() - t0);
}
BENCHMARK(BM_EstimatePeak405B)->Arg(64)->Arg(4096);

void BM_EstimatePeakGpt2(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  auto m = actmem::model_preset("gpt2", nullptr);
  actmem::TrainConfig c;
  c.seq = 1024;
  const auto t0 = Clock::now();
  for (auto _ : state) {
    auto e = actmem::estimate(m.value(), c, nullptr, false);
    benchmark::DoNotOptimize(e);
  }
  ratio_vs_closed_form<Clock>(state, m.value(), c, Clock::now() - t0);
}
BENCHMARK(BM_EstimatePeakGpt2);

// Building the setup alone (validation, inventories, ranks, static memory, transients).
void BM_Setup405B(benchmark::State& state) {
  auto m = actmem::model_preset("llama-3.1-405b", nullptr);
  const actmem::TrainConfig c = config_405b();
  for (auto _ : state) {
    auto s = actmem::make_setup(m.value(), c);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_Setup405B);

// The numeric walk alone on a built setup (what plan's candidates cost), with the heap
// allocations one call makes once the scratch has grown, and the closed-form ratio.
void run_evaluate(benchmark::State& state, const char* preset, const actmem::TrainConfig& c) {
  using Clock = std::chrono::steady_clock;
  auto m = actmem::model_preset(preset, nullptr);
  auto s = actmem::make_setup(m.value(), c);
  actmem::Evaluation ev;
  (void)actmem::evaluate(s.value(), c.recompute, &ev);  // grows the scratch once
  const std::uint64_t a0 = g_allocs.load();
  const auto t0 = Clock::now();
  for (auto _ : state) {
    auto err = actmem::evaluate(s.value(), c.recompute, &ev);
    benchmark::DoNotOptimize(err);
    benchmark::DoNotOptimize(ev.stages.data());
  }
  const auto t1 = Clock::now();
  state.counters["allocs_per_call"] =
      static_cast<double>(g_allocs.load() - a0) / static_cast<double>(state.iterations());
  ratio_vs_closed_form<Clock>(state, m.value(), c, t1 - t0);
}

void BM_Evaluate405B(benchmark::State& state) {
  actmem::TrainConfig c = config_405b();
  c.grad_accum = static_cast<std::uint64_t>(state.range(0));
  run_evaluate(state, "llama-3.1-405b", c);
}
BENCHMARK(BM_Evaluate405B)->Arg(64)->Arg(4096);

// Times the numeric evaluate of `s` as many times as the benchmark ran and records the ratio of
// the benchmark's `elapsed` to it.
void ratio_vs_evaluate(benchmark::State& state, const actmem::Setup& s,
                       std::chrono::steady_clock::duration elapsed) {
  using Clock = std::chrono::steady_clock;
  actmem::Evaluation ev;
  const auto t0 = Clock::now();
  for (std::int64_t i = 0; i < state.iterations(); ++i) {
    auto err = actmem::evaluate(s, s.config.recompute, &ev);
    benchmark::DoNotOptimize(err);
  }
  state.counters["x_evaluate"] = std::chrono::duration<double>(elapsed).count() /
                                 std::chrono::duration<double>(Clock::now() - t0).count();
}

// The device figure (issue 14): the step tensor by tensor through the allocator model, every
// stage (what estimate does) or the most loaded one (what fit and plan do), with its cost over the
// numeric evaluate of the same setup timed in the same run.
void run_device(benchmark::State& state, const char* preset, const actmem::TrainConfig& c,
                bool all_stages) {
  using Clock = std::chrono::steady_clock;
  auto m = actmem::model_preset(preset, nullptr);
  auto s = actmem::make_setup(m.value(), c);
  const auto t0 = Clock::now();
  for (auto _ : state) {
    auto d = actmem::device_memory(s.value(), nullptr, nullptr, all_stages);
    benchmark::DoNotOptimize(d);
  }
  ratio_vs_evaluate(state, s.value(), Clock::now() - t0);
}
void BM_Device405B(benchmark::State& state) {
  actmem::TrainConfig c = config_405b();
  c.grad_accum = static_cast<std::uint64_t>(state.range(0));
  run_device(state, "llama-3.1-405b", c, state.range(1) != 0);
}
BENCHMARK(BM_Device405B)
    ->Args({64, 1})
    ->Args({64, 0})
    ->Args({4096, 0})
    ->Unit(benchmark::kMillisecond);
// Long steps whose steady state cycles (the period proof, device/replay.cpp): llama-3.1-8b on one
// stage (ZeRO-1 over 8, full recompute) and llama-3.1-70b over 4 1F1B stages (tp 8 + SP,
// selective), m micro-batches; the most loaded stage.
void BM_DeviceLongStep(benchmark::State& state) {
  actmem::TrainConfig c;
  c.seq = 4096;
  c.attention = actmem::Attention::kFlash;
  c.grad_accum = static_cast<std::uint64_t>(state.range(1));
  c.par.dp = 8;
  c.par.zero = 1;
  const bool big = state.range(0) == 70;
  c.recompute.kind = big ? actmem::RecomputeKind::kSelective : actmem::RecomputeKind::kFull;
  if (big) c.par.tp = 8, c.par.sp = true, c.par.pp = 4;
  run_device(state, big ? "llama-3.1-70b" : "llama-3.1-8b", c, false);
}
BENCHMARK(BM_DeviceLongStep)
    ->Args({8, 64})
    ->Args({8, 4096})
    ->Args({70, 64})
    ->Args({70, 1024})
    ->Unit(benchmark::kMicrosecond);
void BM_DeviceGpt2(benchmark::State& state) {
  actmem::TrainConfig c;
  c.seq = 1024;
  run_device(state, "gpt2", c, true);
}
BENCHMARK(BM_DeviceGpt2)->Unit(benchmark::kMicrosecond);

void BM_EvaluateGpt2(benchmark::State& state) {
  actmem::TrainConfig c;
  c.seq = 1024;
  run_evaluate(state, "gpt2", c);
}
BENCHMARK(BM_EvaluateGpt2);

// A GPU given as a budget (as --gpu-memory gives it): the verdict compares with it as is.
actmem::GpuSpec budget_gpu(actmem::Bytes bytes) {
  actmem::GpuSpec g;
  g.id = g.name = "custom";
  g.memory_bytes = bytes;
  return g;
}

// fit's search (its device probes: replays within the capacity, each ending at its first failed
// request, or at one of a shortened run's where it is the whole step's: device/replay.cpp), at 64
// and 4,096 micro-batches, with its time over one evaluate of the same setup timed in the run.
void BM_Fit405B(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  auto m = actmem::model_preset("llama-3.1-405b", nullptr);
  actmem::TrainConfig c = config_405b();
  c.grad_accum = static_cast<std::uint64_t>(state.range(0));
  const auto t0 = Clock::now();
  for (auto _ : state) {
    auto f = actmem::fit(m.value(), c, budget_gpu(80ull << 30));
    benchmark::DoNotOptimize(f);
  }
  const auto elapsed = Clock::now() - t0;
  ratio_vs_evaluate(state, actmem::make_setup(m.value(), c).value(), elapsed);
}
BENCHMARK(BM_Fit405B)->Arg(64)->Arg(4096)->Unit(benchmark::kMillisecond);

void BM_EvaluateJsonGpt2(benchmark::State& state) {
  const std::string req = R"({"preset":"gpt2","config":{"seq":1024}})";
  for (auto _ : state) benchmark::DoNotOptimize(actmem::evaluate(req));
}
BENCHMARK(BM_EvaluateJsonGpt2);

void BM_EvaluateJsonGpt2Summary(benchmark::State& state) {
  const std::string req = R"({"preset":"gpt2","config":{"seq":1024},"summary":true})";
  for (auto _ : state) benchmark::DoNotOptimize(actmem::evaluate(req));
}
BENCHMARK(BM_EvaluateJsonGpt2Summary);

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
  const actmem::GpuSpec budget = budget_gpu(80ull << 30);
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

// The layout advisor: llama-3.1-405b, seq 8192, flash attention, over 1,024 H100s with a global
// batch of 2,048 (the page's goal: under 1 s). Arg: layouts listed and replayed on the device; 1
// shows the search itself (setups and step evaluations) with one replay.
void BM_Advise405B(benchmark::State& state) {
  auto m = actmem::model_preset("llama-3.1-405b", nullptr);
  auto gpu = actmem::gpu_preset("h100-80gb");
  actmem::TrainConfig c;
  c.seq = 8192;
  c.attention = actmem::Attention::kFlash;
  actmem::AdviseRequest r;
  r.gpus_min = r.gpus_max = 1024;
  r.global_batch = 2048;
  r.limit = static_cast<std::uint64_t>(state.range(0));
  for (auto _ : state) {
    auto a = actmem::advise(m.value(), c, gpu.value(), r);
    benchmark::DoNotOptimize(a);
  }
}
BENCHMARK(BM_Advise405B)->Arg(1)->Arg(5)->Unit(benchmark::kMillisecond);

}  // namespace

// The data command over a JSONL text of 100,000 lengths (issue 37's goal: under 100 ms native),
// padded (arg 0) and verl's token budget (arg 1), through the JSON entry point as the CLI sends it;
// `x_fit` is its time over one fit request for the same config timed in the same run (the data
// answer searches the longest row that fits as fit searches the sequence).
void BM_Data100k(benchmark::State& state) {
  std::string text;
  std::uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 100000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64: lengths 64..16383, a long tail
    const std::uint64_t len = x % 8 == 0 ? 4096 + x % 12288 : 64 + (x >> 8) % 4032;
    text += std::to_string(len) + "\n";
  }
  const nlohmann::json config = {
      {"micro_batch", 4}, {"attention", "flash"}, {"recompute", "full"}, {"dp", 8},
      {"zero", 3},        {"micro_batches", 4},   {"gpu", "h100-80gb"}};
  nlohmann::json data = {{"lengths", text}};
  if (state.range(0) == 1)
    data = {{"lengths", text},
            {"batching", "token_budget"},
            {"max_tokens", 16384},
            {"step_sequences", 1000}};
  const nlohmann::json req = {
      {"command", "data"}, {"preset", "qwen2.5-7b"}, {"config", config}, {"data", data}};
  const nlohmann::json fit = {{"command", "fit"}, {"preset", "qwen2.5-7b"}, {"config", config}};
  double data_s = 0, fit_s = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = actmem::evaluate_json(req);
    auto t1 = std::chrono::steady_clock::now();
    auto f = actmem::evaluate_json(fit);
    auto t2 = std::chrono::steady_clock::now();
    if (!r.value("ok", false) || !f.value("ok", false)) state.SkipWithError("request failed");
    benchmark::DoNotOptimize(r);
    data_s += std::chrono::duration<double>(t1 - t0).count();
    fit_s += std::chrono::duration<double>(t2 - t1).count();
  }
  state.counters["data_ms"] = 1e3 * data_s / static_cast<double>(state.iterations());
  state.counters["x_fit"] = data_s / fit_s;
}
BENCHMARK(BM_Data100k)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();

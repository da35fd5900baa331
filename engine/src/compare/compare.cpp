// compare (compare.hpp): the snapshot's segments and trace read from the pickle, the recorded step
// replayed through the allocator model from the state it started in (rebuilt backwards from the
// final state, as tests/reference/snapshot_trace.py does), its peaks and the live blocks at the
// allocated peak matched to the estimate's named records by size.
#include "actmem/compare/compare.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "actmem/compare/pickle.hpp"
#include "actmem/inventory/params.hpp"
#include "actmem/report/estimate.hpp"

namespace actmem {

namespace {

constexpr const char* kField = "snapshot";
constexpr std::size_t kLargest = 16;

using Id = Pickle::Id;
using Kind = Pickle::Kind;

struct Block {
  Bytes addr = 0, size = 0, requested = 0;
  bool allocated = false;
};
struct Segment {
  Bytes addr = 0, size = 0;
  bool small = false, expandable = false;
  CachingAllocator::Stream stream = 0;
  std::vector<Block> blocks;
};
struct Event {
  enum Action { kAlloc, kFree, kSegAlloc, kSegFree, kMap, kUnmap, kOom, kOther } action = kOther;
  Bytes addr = 0, size = 0;
  CachingAllocator::Stream stream = 0;
  Id frames = Pickle::kNone;
};

Error bad(const std::string& what) {
  return make_error("invalid_value", kField, "snapshot: " + what);
}

// A non-negative int at `key` of dict `d`, within kMaxBytes; false if absent or not one.
bool read_bytes(const Pickle& p, Id d, const char* key, Bytes* out) {
  const Id v = p.get(d, key);
  if (!p.is(v, Kind::kInt)) return false;
  const std::int64_t x = p.at(v).i;
  if (x < 0) return false;
  *out = static_cast<Bytes>(x);
  return true;
}

// "name (file.py:123)" of the innermost frame outside PyTorch itself, else the innermost.
std::string frame_text(const Pickle& p, Id frames) {
  if (!p.is(frames, Kind::kList) || p.at(frames).items.empty())
    return "(no Python frame: autograd or C++)";
  auto text = [&](Id f) {
    std::string file = p.str(p.get(f, "filename"));
    const std::size_t slash = file.find_last_of('/');
    if (slash != std::string::npos) file = file.substr(slash + 1);
    const Id line = p.get(f, "line");
    std::string s = p.str(p.get(f, "name")) + " (" + file + ":" +
                    (p.is(line, Kind::kInt) ? std::to_string(p.at(line).i) : "?") + ")";
    if (s.size() > 120) s = s.substr(0, 117) + "...";
    return s;
  };
  // PyTorch's own frames (torch/nn, autograd, ...) say less than the model code that called them.
  static const char* const kTorch[] = {
      "torch/nn/",           "torch/autograd/",   "torch/utils/", "torch/optim/",
      "torch/cuda/",         "torch/_",           "torch/amp/",   "torch/distributed/",
      "torch/functional.py", "torch/overrides.py"};
  for (Id f : p.at(frames).items) {
    const std::string& file = p.str(p.get(f, "filename"));
    bool torch = file.empty();
    for (const char* t : kTorch) torch = torch || file.find(t) != std::string::npos;
    if (!torch) return text(f);
  }
  return text(p.at(frames).items.front());
}

struct Snapshot {
  std::vector<Segment> segments;
  std::vector<Event> events;
  bool has_trace = false;
  AllocatorConfig settings;
  std::string settings_text;
  // The snapshot's streams (each entry's `stream`, the cudaStream_t as an integer; 0 the default
  // stream) numbered for the allocator model: 0 stays 0, the others in order of appearance.
  std::map<std::int64_t, CachingAllocator::Stream> streams{{0, 0}};
  // False when the entry names a stream that is not an integer (absent: the default stream).
  bool stream_of(const Pickle& p, Id d, CachingAllocator::Stream* out) {
    const Id v = p.get(d, "stream");
    if (v != Pickle::kNone && !p.is(v, Kind::kInt)) return false;
    const auto at =
        streams.try_emplace(p.int_or(v, 0), static_cast<CachingAllocator::Stream>(streams.size()));
    *out = at.first->second;
    return true;
  }
};

Result<Snapshot> read(const Pickle& p) {
  Snapshot s;
  Id root = p.root();
  Id segs = root;
  if (p.is(root, Kind::kDict)) segs = p.get(root, "segments");
  if (!p.is(segs, Kind::kList))
    return bad("no 'segments' list: not a torch.cuda.memory._snapshot() file");
  std::size_t n = 0;
  for (Id sid : p.at(segs).items) {
    const std::string where = "segment " + std::to_string(n++);
    if (!p.is(sid, Kind::kDict)) return bad(where + " is not a dict");
    Segment g;
    if (!read_bytes(p, sid, "address", &g.addr) || !read_bytes(p, sid, "total_size", &g.size) ||
        g.size == 0 || g.size > kMaxBytes || g.addr > kMaxBytes - g.size)
      return bad(where + ": no valid address and total_size");
    g.small = p.str(p.get(sid, "segment_type")) == "small";
    g.expandable = p.int_or(p.get(sid, "is_expandable"), 0) != 0;
    if (!s.stream_of(p, sid, &g.stream)) return bad(where + ": a stream that is not an integer");
    const Id blocks = p.get(sid, "blocks");
    if (!p.is(blocks, Kind::kList)) return bad(where + ": no 'blocks' list");
    Bytes at = g.addr, sum = 0;
    for (Id bid : p.at(blocks).items) {
      Block b;
      if (!p.is(bid, Kind::kDict) || !read_bytes(p, bid, "size", &b.size) || b.size == 0)
        return bad(where + ": a block without a valid size");
      read_bytes(p, bid, "requested_size", &b.requested);
      if (!read_bytes(p, bid, "address", &b.addr)) b.addr = at;  // older snapshots omit it
      const std::string& state = p.str(p.get(bid, "state"));
      b.allocated = state == "active_allocated" || state == "active_pending_free";
      if (b.size > g.size - std::min(sum, g.size)) return bad(where + ": its blocks exceed it");
      sum += b.size;
      at = b.addr + b.size;
      g.blocks.push_back(b);
    }
    s.segments.push_back(std::move(g));
  }
  std::sort(s.segments.begin(), s.segments.end(),
            [](const Segment& a, const Segment& b) { return a.addr < b.addr; });
  if (!p.is(root, Kind::kDict)) return s;
  // The device with the longest trace.
  const Id traces = p.get(root, "device_traces");
  Id trace = Pickle::kNone;
  if (p.is(traces, Kind::kList))
    for (Id t : p.at(traces).items)
      if (p.is(t, Kind::kList) &&
          (trace == Pickle::kNone || p.at(t).items.size() > p.at(trace).items.size()))
        trace = t;
  if (trace != Pickle::kNone && !p.at(trace).items.empty()) {
    s.has_trace = true;
    for (Id eid : p.at(trace).items) {
      Event e;
      const std::string& a = p.str(p.get(eid, "action"));
      e.action = a == "alloc"            ? Event::kAlloc
                 : a == "free_completed" ? Event::kFree
                 : a == "segment_alloc"  ? Event::kSegAlloc
                 : a == "segment_free"   ? Event::kSegFree
                 : a == "segment_map"    ? Event::kMap
                 : a == "segment_unmap"  ? Event::kUnmap
                 : a == "oom"            ? Event::kOom
                                         : Event::kOther;
      if (e.action == Event::kOther) continue;  // free_requested, snapshot, annotations
      if (e.action != Event::kOom &&
          (!read_bytes(p, eid, "addr", &e.addr) || !read_bytes(p, eid, "size", &e.size) ||
           e.size > kMaxBytes / 4))
        return bad("trace entry " + std::to_string(s.events.size()) + " (" + a +
                   "): no valid addr and size");
      e.frames = p.get(eid, "frames");
      if (!s.stream_of(p, eid, &e.stream))
        return bad("trace entry " + std::to_string(s.events.size()) + " (" + a +
                   "): a stream that is not an integer");
      s.events.push_back(e);
    }
  }
  const Id set = p.get(root, "allocator_settings");
  if (p.is(set, Kind::kDict)) {
    s.settings.expandable_segments = p.int_or(p.get(set, "expandable_segments"), 0) != 0;
    const std::int64_t split = p.int_or(p.get(set, "max_split_size"), -1);
    if (split > 0) s.settings.max_split_size = static_cast<Bytes>(split);
    s.settings_text = p.str(p.get(set, "PYTORCH_CUDA_ALLOC_CONF"));
  }
  return s;
}

// A predicted tensor by name and bytes (for matching live blocks).
struct Candidate {
  std::string name;
  Bytes bytes = 0;
};

std::vector<Candidate> candidates(const Estimate& e) {
  std::vector<Candidate> out;
  const bool stack = e.kinds.size() > 1;
  for (std::size_t ki = 0; ki < e.kinds.size(); ++ki) {
    const std::string prefix = stack ? e.model.kinds[ki].name + ": " : "";
    const LayerInventory& inv = e.kinds[ki].inventory;
    for (const TensorRecord& t : inv.tensors) out.push_back({prefix + std::string(t.id), t.bytes});
    for (const GradPhase& ph : inv.backward_grads)
      for (const TensorRecord& t : ph.buffers)
        out.push_back({prefix + "gradient buffer " + std::string(t.id), t.bytes});
  }
  for (const TensorRecord& t : e.io().input_layer) out.push_back({std::string(t.id), t.bytes});
  for (const TensorRecord& t : e.io().output_layer) out.push_back({std::string(t.id), t.bytes});
  const TrainConfig& c = e.config;
  // The setup's own records (LoRA's frozen weights and adapters, the critic's score head).
  const ParamRecords& pr = e.param_records;
  std::vector<ParamRecord> ps = pr.embed;
  for (const auto& lp : pr.kinds) ps.insert(ps.end(), lp.begin(), lp.end());
  ps.insert(ps.end(), pr.head.begin(), pr.head.end());
  Checked ck;
  for (const ParamRecord& q : ps) {
    const Bytes n = ck.mul(q.rows, q.cols, "compare");
    const std::string id(q.id);
    out.push_back({"parameter " + id, q.frozen && q.nf4_bytes > 0
                                          ? q.nf4_bytes
                                          : ck.mul(n, dtype_bytes(weight_dtype(q, c)), "compare")});
    if (q.frozen) continue;  // no gradient, optimizer state or master copy
    out.push_back({"gradient " + id, ck.mul(n, dtype_bytes(grad_dtype_of(q, c)), "compare")});
    ParamRecord one = q;
    one.copies = 1;
    const Bytes opt = optimizer_state_bytes(c.optimizer, optimizer_state_dtype(q, c), one, ck);
    out.push_back({"optimizer state " + id, c.optimizer == Optimizer::kAdamW ? opt / 2 : opt});
    if (keeps_master(q, c)) out.push_back({"master weight " + id, ck.mul(n, 4, "compare")});
  }
  out.push_back({"loss.fp32_logits_buffer", e.loss_fwd_ws});
  out.push_back({"loss.logits", e.loss_logits});
  out.push_back({"cublas.workspace", e.workspace});
  out.erase(std::remove_if(out.begin(), out.end(), [](const Candidate& x) { return x.bytes == 0; }),
            out.end());
  return out;
}

double pct(Bytes predicted, Bytes measured) {
  if (measured == 0) return 0;
  return 100.0 * (static_cast<double>(predicted) - static_cast<double>(measured)) /
         static_cast<double>(measured);
}

// The live blocks of the trace at one moment: address -> (block bytes, requested, frames).
struct Live {
  Bytes bytes = 0, requested = 0;
  Id frames = Pickle::kNone;
  bool before = false;  // live when the trace began: where it was made is not recorded
};

// One snapshot checked against the prediction: the recorded step's start rebuilt, replayed
// through the allocator model (or, where the model cannot start there, measured from the trace's
// rounded requests), the live blocks at its peak matched with the inventory's records.
class SnapshotCheck {
 public:
  SnapshotCheck(const Estimate& e, const Pickle& p, const Snapshot& s, Comparison* out)
      : e_(e), p_(p), s_(s), out_(*out), rounding_(s.settings), alloc_(s.settings) {}

  std::optional<Error> measure() {
    rebuild_start();
    if (replayable_) seed_allocator();
    if (replayable_) return replay();
    if (s_.has_trace)
      measure_requests();
    else
      measure_segments();
    return std::nullopt;
  }
  void explain_peak();

 private:
  void rebuild_start();
  void seed_allocator();
  std::optional<Error> replay();
  void measure_requests();
  void measure_segments();

  const Estimate& e_;
  const Pickle& p_;
  const Snapshot& s_;
  Comparison& out_;
  CachingAllocator rounding_;  // sizes as the allocator rounds them
  CachingAllocator alloc_;     // the replay
  std::map<Bytes, Live> live_;
  std::set<Bytes> new_segments_;
  bool replayable_ = false;
  std::unordered_map<Bytes, CachingAllocator::Handle> handle_;
  Bytes start_allocated_ = 0;
  Bytes peak_ = 0;
  std::uint64_t peak_event_ = 0;
};

// The state when recording began, rebuilt backwards: blocks live at the end and not allocated in
// the trace, and blocks freed in the trace and not allocated in it.
void SnapshotCheck::rebuild_start() {
  for (const Segment& g : s_.segments)
    for (const Block& b : g.blocks)
      if (b.allocated) live_[b.addr] = Live{b.size, b.requested, Pickle::kNone, true};
  replayable_ = s_.has_trace;
  for (const Segment& g : s_.segments) replayable_ = replayable_ && !g.expandable;
  for (auto it = s_.events.rbegin(); it != s_.events.rend(); ++it) {
    switch (it->action) {
      case Event::kAlloc:
        live_.erase(it->addr);
        break;
      case Event::kFree:
        live_[it->addr] = Live{0, it->size, Pickle::kNone, true};
        break;
      case Event::kSegAlloc:
        new_segments_.insert(it->addr);
        break;
      default:
        replayable_ = false;  // segments freed, mapped or an OOM: the model cannot start there
        break;
    }
  }
}

// The replay's allocator seeded with the segments and blocks live when recording began.
void SnapshotCheck::seed_allocator() {
  for (const Segment& g : s_.segments) {
    if (new_segments_.count(g.addr)) continue;
    alloc_.add_segment(g.addr, g.size, g.small, g.stream);
    const Bytes end = g.addr + g.size;
    auto it = live_.lower_bound(g.addr);
    while (it != live_.end() && it->first < end) {
      auto next = std::next(it);
      Bytes size = it->second.bytes;
      if (size == 0) {
        // Freed in the trace: its size as the allocator held it. A large-pool block is never
        // 1 MiB or smaller, so a gap that small after it belongs to it (should_split).
        size = rounding_.round_size(it->second.requested);
        const Bytes stop = next != live_.end() && next->first < end ? next->first : end;
        if (it->first + size > stop) {
          replayable_ = false;
          break;
        }
        const Bytes gap = stop - (it->first + size);
        if ((!g.small && gap <= kAllocSmallSize) || (g.small && gap < kAllocMinBlock)) size += gap;
        it->second.bytes = size;
      }
      const auto h = alloc_.add_live_block(it->first, size, it->second.requested);
      if (h == CachingAllocator::kNoHandle) {
        replayable_ = false;
        break;
      }
      handle_[it->first] = h;
      it = next;
    }
    if (!replayable_) break;
  }
}

// Every allocation through the allocator model, checked against its recorded address.
std::optional<Error> SnapshotCheck::replay() {
  std::uint64_t misplaced = 0;
  alloc_.recount_inactive_split();
  alloc_.reset_peaks();
  start_allocated_ = alloc_.stats().allocated;
  for (std::size_t i = 0; i < s_.events.size(); ++i) {
    const Event& ev = s_.events[i];
    if (ev.action == Event::kSegAlloc) {
      alloc_.set_next_segment_address(ev.addr);
    } else if (ev.action == Event::kAlloc) {
      const auto h = alloc_.malloc(ev.size, ev.stream);
      if (h == CachingAllocator::kNoHandle) return bad("an allocation too large to replay");
      if (alloc_.address(h) != ev.addr) ++misplaced;
      handle_[ev.addr] = h;
      if (alloc_.stats().allocated > peak_ || i == 0)
        peak_ = alloc_.stats().allocated, peak_event_ = i;
    } else if (ev.action == Event::kFree) {
      auto it = handle_.find(ev.addr);
      if (it != handle_.end()) {
        alloc_.free(it->second);
        handle_.erase(it);
      }
    }
  }
  out_.replay_exact = misplaced == 0;
  out_.measured_allocated = alloc_.stats().allocated_peak;
  out_.measured_reserved = alloc_.stats().reserved_peak;
  out_.measured_source = "trace replay";
  if (!out_.replay_exact)
    out_.notes.push_back(std::to_string(misplaced) +
                         " allocation(s) of the replay landed elsewhere than recorded: the "
                         "measured peaks are the model's replay of the recorded requests");
  return std::nullopt;
}

// No replay: allocated from the requests rounded, reserved from the segment events.
void SnapshotCheck::measure_requests() {
  for (const auto& kv : live_)
    start_allocated_ +=
        kv.second.bytes ? kv.second.bytes : rounding_.round_size(kv.second.requested);
  Bytes reserved = out_.reserved_now;
  for (auto it = s_.events.rbegin(); it != s_.events.rend(); ++it) {
    if (it->action == Event::kSegAlloc || it->action == Event::kMap)
      reserved -= std::min(reserved, it->size);
    if (it->action == Event::kSegFree || it->action == Event::kUnmap) reserved += it->size;
  }
  Bytes cur = start_allocated_, top_res = reserved;
  std::unordered_map<Bytes, Bytes> sizes;
  for (std::size_t i = 0; i < s_.events.size(); ++i) {
    const Event& ev = s_.events[i];
    if (ev.action == Event::kAlloc) {
      const Bytes b = rounding_.round_size(ev.size);
      sizes[ev.addr] = b;
      cur += b;
      if (cur > peak_ || i == 0) peak_ = cur, peak_event_ = i;
    } else if (ev.action == Event::kFree) {
      auto it = sizes.find(ev.addr);
      const Bytes b = it != sizes.end() ? it->second : rounding_.round_size(ev.size);
      cur -= std::min(cur, b);
    } else if (ev.action == Event::kSegAlloc || ev.action == Event::kMap) {
      reserved += ev.size;
    } else if (ev.action == Event::kSegFree || ev.action == Event::kUnmap) {
      reserved -= std::min(reserved, ev.size);
    }
    top_res = std::max(top_res, reserved);
  }
  out_.measured_allocated = std::max(peak_, start_allocated_);
  out_.measured_reserved = top_res;
  out_.measured_source =
      "trace (requests rounded to 512 B; the allocator model could not replay it)";
}

void SnapshotCheck::measure_segments() {
  out_.measured_allocated = out_.allocated_now;
  out_.measured_reserved = out_.reserved_now;
  out_.measured_source = "segments at snapshot time";
  out_.notes.push_back(
      "the snapshot has no trace (take it after torch.cuda.memory._record_memory_history()): "
      "these are the blocks when it was taken, not the step's peaks");
}

// The live blocks at the measured allocated peak: the trace run again up to that event, each
// block matched with a record of the same requested size, else the same size after rounding.
void SnapshotCheck::explain_peak() {
  out_.peak_event = peak_event_;
  if (peak_event_ < s_.events.size())
    out_.peak_frame = frame_text(p_, s_.events[peak_event_].frames);
  std::map<Bytes, Live> at = live_;
  for (auto& kv : at)
    if (kv.second.bytes == 0) kv.second.bytes = rounding_.round_size(kv.second.requested);
  for (std::size_t i = 0; i <= peak_event_ && i < s_.events.size(); ++i) {
    const Event& ev = s_.events[i];
    if (ev.action == Event::kAlloc)
      at[ev.addr] = Live{rounding_.round_size(ev.size), ev.size, ev.frames};
    else if (ev.action == Event::kFree)
      at.erase(ev.addr);
  }
  std::vector<Live> blocks;
  for (const auto& kv : at) blocks.push_back(kv.second);
  std::stable_sort(blocks.begin(), blocks.end(),
                   [](const Live& a, const Live& b) { return a.bytes > b.bytes; });
  // Each block's record: the same requested size, else the same size after rounding.
  // Every record of a size (several share one: a layer's b·s·f tensors), in inventory order.
  std::unordered_map<Bytes, std::vector<const Candidate*>> exact, rounded;
  const std::vector<Candidate> cands = candidates(e_);
  for (const Candidate& c : cands) {
    exact[c.bytes].push_back(&c);
    rounded[rounding_.round_size(c.bytes)].push_back(&c);
  }
  auto names = [](const std::vector<const Candidate*>& v) {
    std::string text = v.front()->name;
    std::set<std::string> others;
    for (const Candidate* c : v)
      if (c->name != v.front()->name) others.insert(c->name);
    if (!others.empty())
      text += " (or " + std::to_string(others.size()) + " other record" +
              (others.size() > 1 ? "s" : "") + " of this size)";
    return text;
  };
  for (const Live& b : blocks) {
    const std::vector<const Candidate*>* hit = nullptr;
    auto it = exact.find(b.requested);
    if (it != exact.end())
      hit = &it->second;
    else if ((it = rounded.find(b.bytes)) != rounded.end())
      hit = &it->second;
    (hit ? out_.explained_bytes : out_.unexplained_bytes) += b.bytes;
    if (out_.largest.size() < kLargest)
      out_.largest.push_back(
          SnapshotBlock{b.bytes, b.requested,
                        b.before ? "(allocated before the trace began)" : frame_text(p_, b.frames),
                        hit ? names(*hit) : "", hit ? hit->front()->bytes : 0});
  }
}

}  // namespace

Result<Comparison> compare_snapshot(const Estimate& e, std::string_view bytes,
                                    const MeasuredStats& stats) {
  if (!e.has_device) return bad("the estimate carries no device figure");
  auto parsed = Pickle::parse(bytes);
  if (!parsed.ok()) return parsed.error();
  const Pickle& p = parsed.value();
  auto snap = read(p);
  if (!snap.ok()) return snap.error();
  const Snapshot& s = snap.value();
  Comparison out;
  out.trace = s.has_trace;
  out.trace_events = s.events.size();
  out.settings = s.settings_text.empty() ? "default" : s.settings_text;
  for (const Segment& g : s.segments) {
    out.reserved_now += g.size;
    for (const Block& b : g.blocks)
      if (b.allocated) out.allocated_now += b.size;
  }
  out.predicted_allocated = e.device.allocated_peak_bytes;
  out.predicted_reserved = e.device.reserved_peak_bytes;
  out.predicted_peak_at = e.worst().peak_at;
  SnapshotCheck check(e, p, s, &out);
  if (auto err = check.measure()) return *err;
  if (stats.allocated_peak != 0 || stats.reserved_peak != 0) {
    if (stats.allocated_peak) out.measured_allocated = stats.allocated_peak;
    if (stats.reserved_peak) out.measured_reserved = stats.reserved_peak;
    out.measured_source = "memory_stats";
  }
  out.error_allocated_pct = pct(out.predicted_allocated, out.measured_allocated);
  out.error_reserved_pct = pct(out.predicted_reserved, out.measured_reserved);
  if (s.has_trace) check.explain_peak();
  if (s.settings.expandable_segments != e.config.alloc.expandable_segments)
    out.notes.push_back(
        std::string("the snapshot was taken with expandable_segments ") +
        (s.settings.expandable_segments ? "on" : "off") + " and the prediction assumes it " +
        (e.config.alloc.expandable_segments ? "on" : "off") + ": pass the same alloc_conf");
  return out;
}

}  // namespace actmem

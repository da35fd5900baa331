#!/usr/bin/env python3
# Purpose: turn a torch.cuda.memory._snapshot() pickle with its trace into the plain-text replay file
# that tests/device/test_allocator.cpp feeds to the engine's caching-allocator model: the allocator's state
# when recording began (segments, and the blocks live then), every allocation and free of the
# recorded trace in order, and the state the snapshot ends with. Needs only Python's pickle.
#
# Usage: python3 tests/reference/snapshot_trace.py SNAPSHOT.pickle[.gz] OUT.trace
#
# The state at the start is rebuilt backwards from the final one: a block live at the end and not
# allocated in the trace was live at the start; a block freed in the trace and not allocated in it
# was live at the start too. A large-pool block is never 1 MiB or smaller (requests above 1 MiB go
# there and a remainder is split off only when larger than 1 MiB: CUDACachingAllocator.cpp
# should_split), so a gap of 1 MiB or less after such a block belongs to it; in the small pool a
# remainder under 512 B does.
import gzip
import pickle
import sys

K_SMALL_SIZE = 1 << 20
K_MIN_BLOCK = 512


def round_size(n):
    return K_MIN_BLOCK if n < K_MIN_BLOCK else (n + K_MIN_BLOCK - 1) // K_MIN_BLOCK * K_MIN_BLOCK


def main(src, dst):
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rb") as f:
        snap = pickle.load(f)
    traces = [t for t in snap["device_traces"] if t]
    if len(traces) != 1:
        sys.exit("expected one device with a trace")
    trace = traces[0]
    segs = sorted(snap["segments"], key=lambda s: s["address"])
    new_segments = {e["addr"] for e in trace if e["action"] == "segment_alloc"}
    if any(e["action"] in ("segment_free", "segment_map", "segment_unmap", "oom") for e in trace):
        sys.exit("trace frees, maps or runs out of memory: not handled")

    # Blocks live at the end, by address, with their size as the allocator holds them.
    live_end = {}
    for s in segs:
        for b in s["blocks"]:
            if b["state"] == "active_allocated":
                live_end[b["address"]] = (b["size"], b["requested_size"])
    # Undo the trace: walk it backwards.
    live = dict(live_end)
    sizes = {}  # addr -> requested size of allocations made in the trace
    for e in reversed(trace):
        a = e["action"]
        if a == "alloc":
            live.pop(e["addr"], None)
        elif a == "free_completed":
            live[e["addr"]] = (None, e["size"])
    start_segments = [s for s in segs if s["address"] not in new_segments]
    lines = ["# replay of " + src.split("/")[-1] + ", written by tests/reference/snapshot_trace.py",
             "# settings " + " ".join(f"{k}={snap['allocator_settings'][k]}" for k in
                                      ("max_split_size", "expandable_segments"))]
    for s in start_segments:
        pool = s["segment_type"]
        end = s["address"] + s["total_size"]
        lines.append(f"segment {s['address']} {s['total_size']} {pool}")
        addrs = sorted(a for a in live if s["address"] <= a < end)
        for i, a in enumerate(addrs):
            size, req = live[a]
            if size is None:
                size = round_size(req)
                nxt = addrs[i + 1] if i + 1 < len(addrs) else end
                gap = nxt - (a + size)
                if gap < 0:
                    sys.exit(f"overlapping blocks at {a}")
                if (pool == "large" and gap <= K_SMALL_SIZE) or (pool == "small" and gap < K_MIN_BLOCK):
                    size += gap
            lines.append(f"block {a} {size} {req}")
    for e in trace:
        a = e["action"]
        if a == "alloc":
            lines.append(f"alloc {e['addr']} {e['size']}")
        elif a == "free_completed":
            lines.append(f"free {e['addr']}")
        elif a == "segment_alloc":
            lines.append(f"segment_alloc {e['addr']} {e['size']}")
    for s in segs:
        lines.append(f"final_segment {s['address']} {s['total_size']} {s['segment_type']}")
        addr = s["address"]
        for b in s["blocks"]:
            lines.append(f"final_block {addr} {b['size']} {b['state']}")
            addr += b["size"]
    with open(dst, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

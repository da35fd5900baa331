#!/usr/bin/env python3
# Purpose: write the small torch.cuda.memory._snapshot() files the compare tests read
# (tests/compare/test_compare.cpp), in PyTorch's own format (the dict of torch/cuda/memory.py `_snapshot`:
# segments with their blocks, device_traces, allocator_settings), each a hand-worked allocation
# sequence whose peaks are known; then, where PyTorch is installed, read each back with PyTorch's
# own viewer (torch.cuda._memory_viz: segsum, trace, trace_plot, segment_plot) so the format is
# not only ours. Needs Python's pickle; PyTorch for the read-back (the Debian 13 root of
# ../shared/toolchain.md has 2.6).
#
# Usage: python3 tests/reference/make_snapshots.py OUT_DIR
import os
import pickle
import sys

MiB = 1 << 20
SEG1 = 0x7F0000000000   # a 20 MiB large-pool segment that exists before the trace
SEG2 = 0x7F0001400000   # a 12 MiB segment the trace allocates
FRAMES = {
    "a": [{"filename": "/src/train.py", "line": 10, "name": "forward"}],
    "b": [{"filename": "/src/train.py", "line": 11, "name": "forward"}],
    "c": [{"filename": "/src/train.py", "line": 20, "name": "backward"}],
}


def entry(action, addr, size, frames=None, t=0, stream=0):
    e = {"action": action, "addr": addr, "size": size, "stream": stream, "time_us": 1000 + t,
         "compile_context": "N/A", "user_metadata": ""}
    e["frames"] = frames or []
    return e


def seg(addr, blocks, expandable=False, stream=0):
    total = sum(b[0] for b in blocks)
    out, at = [], addr
    for size, req, state in blocks:
        out.append({"address": at, "size": size, "requested_size": req, "state": state,
                    "frames": []})
        at += size
    alloc = sum(b["size"] for b in out if b["state"] == "active_allocated")
    return {"device": 0, "address": addr, "total_size": total, "allocated_size": alloc,
            "active_size": alloc, "requested_size": sum(b["requested_size"] for b in out
                                                        if b["state"] == "active_allocated"),
            "stream": stream, "segment_type": "large", "segment_pool_id": (0, 0),
            "is_expandable": expandable, "frames": [], "blocks": out}


def settings(expandable=False):
    return {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True" if expandable else "",
            "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": expandable, "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False, "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}


def tiny():
    # Before the trace: SEG1 holds a live 4 MiB block. Then (CUDACachingAllocator rules):
    #   alloc A 6 MiB  -> SEG1 + 4 MiB (best fit in the 16 MiB rest; 10 MiB stay cached)
    #   alloc B 12 MiB -> no cached block is large enough: a new 12 MiB segment (>= 10 MiB: its
    #                     own size rounded to 2 MiB)
    #   free A         -> merges with the cached 10 MiB: 16 MiB free at SEG1 + 4 MiB
    #   alloc C 5 MiB  -> SEG1 + 4 MiB again, 11 MiB cached
    # Peaks: allocated 4 + 6 + 12 = 22 MiB (after B), reserved 20 + 12 = 32 MiB.
    A, B, C = 6 * MiB, 12 * MiB, 5 * MiB
    trace = [entry("alloc", SEG1 + 4 * MiB, A, FRAMES["a"], 1),
             entry("segment_alloc", SEG2, B, FRAMES["b"], 2),
             entry("alloc", SEG2, B, FRAMES["b"], 3),
             entry("free_requested", SEG1 + 4 * MiB, A, FRAMES["c"], 4),
             entry("free_completed", SEG1 + 4 * MiB, A, FRAMES["c"], 5),
             entry("alloc", SEG1 + 4 * MiB, C, FRAMES["c"], 6)]
    segments = [seg(SEG1, [(4 * MiB, 4 * MiB, "active_allocated"), (C, C, "active_allocated"),
                           (11 * MiB, 0, "inactive")]),
                seg(SEG2, [(B, B, "active_allocated")])]
    return {"segments": segments, "device_traces": [trace], "allocator_settings": settings(),
            "external_annotations": []}


def no_trace():
    s = tiny()
    s["device_traces"] = [[]]
    return s


def expandable():
    # One expandable large-pool segment: 20 MiB mapped, then 20 MiB more for a 30 MiB request.
    base = 0x7E0000000000
    trace = [entry("segment_map", base, 20 * MiB, FRAMES["a"], 1),
             entry("alloc", base, 8 * MiB, FRAMES["a"], 2),
             entry("segment_map", base + 20 * MiB, 20 * MiB, FRAMES["b"], 3),
             entry("alloc", base + 8 * MiB, 30 * MiB, FRAMES["b"], 4),
             entry("free_requested", base, 8 * MiB, FRAMES["c"], 5),
             entry("free_completed", base, 8 * MiB, FRAMES["c"], 6)]
    segments = [seg(base, [(8 * MiB, 0, "inactive"), (30 * MiB, 30 * MiB, "active_allocated"),
                           (2 * MiB, 0, "inactive")], expandable=True)]
    return {"segments": segments, "device_traces": [trace],
            "allocator_settings": settings(True), "external_annotations": []}


def two_streams():
    # A side stream (cudaStream_t 0x55d0c0de0000, as FSDP2's all-gather copy-in stream) beside the
    # default one (0). Before the trace SEG1 (default stream) holds a live 4 MiB block, 16 MiB
    # cached. Then:
    #   alloc A 6 MiB on the side stream -> SEG1's cached 16 MiB belongs to stream 0: a new 20 MiB
    #                                       segment of the side stream at SEG2 (below 10 MiB)
    #   free A                           -> cached for the side stream
    #   alloc B 6 MiB on stream 0        -> SEG1 + 4 MiB (A's cached block is the side stream's)
    #   alloc C 6 MiB on the side stream -> SEG2 again
    # Peaks: allocated 4 + 6 + 6 = 16 MiB (after C), reserved 20 + 20 = 40 MiB. Read as one
    # stream, A would take SEG1's cached 16 MiB (no new segment) and C SEG1's remaining 10 MiB
    # (the smallest cached block that fits, against SEG2's 20).
    side, a = 0x55D0C0DE0000, 6 * MiB
    seg2 = 0x7F0001400000
    trace = [entry("segment_alloc", seg2, 20 * MiB, FRAMES["a"], 1, side),
             entry("alloc", seg2, a, FRAMES["a"], 2, side),
             entry("free_requested", seg2, a, FRAMES["a"], 3, side),
             entry("free_completed", seg2, a, FRAMES["a"], 4, side),
             entry("alloc", SEG1 + 4 * MiB, a, FRAMES["b"], 5),
             entry("alloc", seg2, a, FRAMES["c"], 6, side)]
    segments = [seg(SEG1, [(4 * MiB, 4 * MiB, "active_allocated"), (a, a, "active_allocated"),
                           (10 * MiB, 0, "inactive")]),
                seg(seg2, [(a, a, "active_allocated"), (14 * MiB, 0, "inactive")], stream=side)]
    return {"segments": segments, "device_traces": [trace], "allocator_settings": settings(),
            "external_annotations": []}


def main(out):
    files = {"tiny-trace.pickle": tiny(), "no-trace.pickle": no_trace(),
             "expandable.pickle": expandable(), "two-streams.pickle": two_streams()}
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            pickle.dump(data, f, protocol=4)
    try:
        import torch
        from torch.cuda import _memory_viz as viz
    except ImportError:
        print("PyTorch not installed: files written, not read back")
        return
    for name in list(files) + ["h200-llama-step2.pickle"]:
        path = os.path.join(out, name)
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            data = pickle.load(f)
        viz.segsum(data)
        viz.segment_plot(data)
        if any(data["device_traces"]):
            viz.trace(data)
            viz.trace_plot(data)
        print(f"{name}: read back by torch {torch.__version__} _memory_viz (segsum, segment_plot"
              + (", trace, trace_plot)" if any(data["device_traces"]) else ")"))


if __name__ == "__main__":
    main(sys.argv[1])

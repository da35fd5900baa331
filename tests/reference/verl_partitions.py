#!/usr/bin/env python3
"""verl's dynamic-batch partitions, for tests/plan/test_data.cpp.

Runs verl's own karmarkar_karp and calculate_workload (verl/utils/seqlen_balancing.py, read from
a verl checkout given on the command line, never copied here) over random length lists, many with
ties, and writes each case's lengths, k and the partitions get_seqlen_balanced_partitions returns
(each part's indices sorted) to tests/data/verl_partitions.json.

    python3 tests/reference/verl_partitions.py PATH/TO/seqlen_balancing.py > tests/data/verl_partitions.json

Only the two functions are taken out of the file (with ast): the module itself imports torch,
tensordict and verl, which this needs none of.
"""
import ast
import heapq
import json
import random
import sys
import types


def load(path):
    tree = ast.parse(open(path).read())
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef)
            and n.name in ("karmarkar_karp", "calculate_workload")]
    # The annotations name torch.Tensor; a stand-in keeps torch out.
    scope = {"heapq": heapq, "torch": types.SimpleNamespace(Tensor=object)}
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), scope)
    return scope["karmarkar_karp"], scope["calculate_workload"]


def main():
    kk, workload = load(sys.argv[1])
    rng = random.Random(20261203)
    cases = []
    for case in range(48):
        n = rng.choice([1, 2, 3, 5, 8, 16, 33, 64, 100, 200])
        k = rng.randint(1, n)
        if case % 3 == 0:
            lengths = [rng.choice([128, 256, 512]) for _ in range(n)]  # many ties
        else:
            lengths = [rng.randint(1, 32768) for _ in range(n)]
        parts = kk([workload(x) for x in lengths], k, False)
        cases.append({"lengths": lengths, "k": k, "partitions": [sorted(p) for p in parts]})
    json.dump({"source": "volcengine/verl b178a3c verl/utils/seqlen_balancing.py "
                         "karmarkar_karp(calculate_workload(lengths), k, equal_size=False)",
               "cases": cases}, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks that the include graph points down the component layers of DESIGN.md.

Every `#include "<component>/..."` of a product file (not a test, benchmark or fuzzer, not under
a testing/ folder) must name a component of a lower layer, or its own component. Components of
one layer may include each other only where listed in SIDEWAYS (sim runs over sched and the
rebalancer; the rebalancer reads the scheduler cache). Test
files may also include test helpers (*/testing/*) and anything below their own layer, plus sim's
specs for the services' test clusters. Prints every violation; exit 1 when there is one.
Usage: scripts/check-includes.py [--verbose] [--root DIR]   (DIR: the tree to check; default
this checkout). CTest runs it as `check_includes`, and `check_includes_refuses` on a tree with
one upward include.
"""
import os
import re
import sys

LAYERS = {
    "base": 0, "cpuset": 1, "topology": 2, "alloc": 3, "node": 4,
    "sched": 5, "sim": 5, "kube": 5, "serving": 5, "cri": 5, "rebalance": 5,
    "scheduler": 6, "agent": 6, "cmd": 6, "testbed": 7,
}
# DESIGN.md: the simulator runs over sched, and runs the rebalancer's planner (issue 17).
SIDEWAYS = {("sim", "sched"), ("sim", "rebalance"), ("rebalance", "sched")}
TEST_ONLY = re.compile(r"(_test|_bench|_fuzz)\.cc$|/testing/|/test_[^/]*\.h$|testbed_install\.h$|_main\.cc$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]+"')

def main() -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "--root" in sys.argv:
        root = sys.argv[sys.argv.index("--root") + 1]
    verbose = "--verbose" in sys.argv
    problems, edges = [], set()
    for comp in LAYERS:
        for dirpath, _, files in os.walk(os.path.join(root, comp)):
            for f in files:
                if not f.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                test = bool(TEST_ONLY.search(rel))
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m or m.group(1) not in LAYERS:
                            continue
                        dep = m.group(1)
                        if dep == comp:
                            continue
                        edges.add((comp, dep, test))
                        down = LAYERS[dep] < LAYERS[comp] or (comp, dep) in SIDEWAYS
                        if not down and not test:
                            problems.append(f"{rel}:{n}: {comp} (layer {LAYERS[comp]}) includes {dep} (layer {LAYERS[dep]})")
                        elif not down and test and "/testing/" not in line and dep != "sim":
                            problems.append(f"{rel}:{n}: test of {comp} includes {dep} (layer {LAYERS[dep]})")
    if verbose:
        for comp, dep, test in sorted(edges):
            print(f"{comp} -> {dep}{' (tests)' if test else ''}")
    for p in problems:
        print(p)
    print(f"check-includes: {len(problems)} upward include(s)")
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main())

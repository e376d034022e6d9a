#!/usr/bin/env python3
"""Runs ../shared/bench/gen.py at scale (1M issues) in linear time, with byte-identical output.

gen.py passes every new issue the list of all earlier ones as a fresh slice (`tops[:k]`), which
copies k references per issue: quadratic, so 1M issues did not finish in 32 minutes. This
wrapper loads gen.py unchanged except for that one expression, which becomes a read-only view of
the same prefix. `random.choice` draws the same index from a view as from a slice (it only uses
`len` and indexing), so every byte written is the one gen.py would write; the benchmark docs
show the check (`cmp` against gen.py's own 100k output).

Usage: same arguments as gen.py, e.g.
    python3 benches/gen_scale.py all --outdir ~/.cache/beads-git-bench --sizes 1000000
"""

import os
import sys

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "bench", "gen.py")
SLICE = "tops[:k] if k else None"


class Prefix:
    """The first `k` items of `items`, without copying them."""

    __slots__ = ("items", "k")

    def __init__(self, items, k):
        self.items, self.k = items, k

    def __len__(self):
        return self.k

    def __getitem__(self, i):
        if not 0 <= i < self.k:
            raise IndexError(i)
        return self.items[i]


def main():
    path = os.environ.get("BEADS_GEN_PY", GEN)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    if source.count(SLICE) != 1:
        sys.exit(f"gen_scale.py: {path} no longer contains `{SLICE}` exactly once; run gen.py itself")
    source = source.replace(SLICE, "_Prefix(tops, k) if k else None")
    namespace = {"__name__": "__main__", "__file__": path, "_Prefix": Prefix}
    exec(compile(source, path, "exec"), namespace)


if __name__ == "__main__":
    main()

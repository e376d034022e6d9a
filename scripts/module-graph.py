#!/usr/bin/env python3
"""Lists the library's module dependencies and the cycles among them.

Reads every `crate::` path in src/ (use lines and inline paths, tests excluded) and
prints, for each module, the modules it uses. Modules are named by their first two
path segments (`merge::writer`, `cache::import`, `record`), so an arrow inside one
engine (`merge::field` -> `merge::writer`) counts, as does one between layers.

    python3 scripts/module-graph.py            # the graph and any cycles
    python3 scripts/module-graph.py --check    # exit 1 on a cycle or an upward arrow

The layers and the rule for where new code goes are in docs/architecture.md; the
LAYERS table below is that document's, checked here.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# Lower number = lower layer. An arrow may point at its own layer or below, never above.
LAYERS = {
    "plumbing": 0,
    "engine": 1,
    "porcelain": 2,
}
MODULE_LAYER = {
    # plumbing: bytes, records, files, git
    "record": "plumbing", "jsonl": "plumbing", "index": "plumbing", "timestamp": "plumbing",
    "git": "plumbing", "safe_fs": "plumbing", "color": "plumbing", "conventions": "plumbing",
    "paths": "plumbing", "command": "plumbing", "fix": "plumbing",
    # engines: one job each, built on plumbing
    "merge": "engine", "cache": "engine", "diff": "engine", "issue_diff": "engine",
    "notify": "engine", "merge_log": "engine", "merge_trailers": "engine",
    "tracker": "engine", "bridge": "engine",
    # porcelain: what a command does, built on engines
    "install": "porcelain", "check": "porcelain", "history": "porcelain",
    "update_branch": "porcelain", "schema": "porcelain", "doctor": "porcelain",
}


def module_of(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = [p for p in rel.parts if p != "mod"]
    if parts == ["lib"]:
        return "lib"
    return "::".join(parts[:2])


def strip_tests(text: str) -> str:
    # Drop `#[cfg(test)] mod tests { ... }` (by brace counting from the attribute).
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def uses(text: str, me: str, known: set) -> set:
    text = re.sub(r"//[^\n]*", "", text)
    found = set()
    # `use crate::{a, b::c}` groups and plain `crate::a::b` paths.
    for m in re.finditer(r"crate::\{([^;]*)\}", text):
        for item in re.split(r",(?![^{]*\})", m.group(1)):
            segs = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", item.split("{")[0])
            if segs:
                found.add(resolve(segs, known))
    for m in re.finditer(r"crate::([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)", text):
        found.add(resolve(m.group(1).split("::"), known))
    # `super::x` inside a submodule points at a sibling.
    if "::" in me:
        parent = me.split("::")[0]
        for m in re.finditer(r"\bsuper::([A-Za-z_][A-Za-z0-9_]*)", text):
            found.add(resolve([parent, m.group(1)], known))
    found.discard(None)
    found.discard(me)
    return found


def resolve(segs, known):
    if len(segs) >= 2 and f"{segs[0]}::{segs[1]}" in known:
        return f"{segs[0]}::{segs[1]}"
    if segs and segs[0] in known:
        return segs[0]
    return None


def layer(module: str):
    return MODULE_LAYER.get(module.split("::")[0])


def main() -> int:
    files = sorted(SRC.rglob("*.rs"))
    files = [f for f in files if "bin" not in f.relative_to(SRC).parts]
    known = {module_of(f) for f in files}
    graph = {}
    for f in files:
        me = module_of(f)
        if me == "lib":
            continue
        graph.setdefault(me, set()).update(uses(strip_tests(f.read_text()), me, known))
    # Strongly connected components (Tarjan).
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    # A module's own submodules (merge -> merge::field) are its parts, not a cycle partner,
    # unless a part points back up at its parent (field -> merge), which counts.
    upward = []
    for v, ws in sorted(graph.items()):
        for w in sorted(ws):
            lv, lw = layer(v), layer(w)
            if lv is None or lw is None:
                continue
            if LAYERS[lw] > LAYERS[lv]:
                upward.append((v, w, lv, lw))
    unlayered = sorted({v.split("::")[0] for v in graph if layer(v) is None})
    check = "--check" in sys.argv
    if not check:
        for v, ws in sorted(graph.items()):
            print(f"{v} ({layer(v) or '?'}) -> {', '.join(sorted(ws)) or '-'}")
        print()
    for c in sccs:
        print("cycle: " + " <-> ".join(c))
    for v, w, lv, lw in upward:
        print(f"upward: {v} ({lv}) -> {w} ({lw})")
    for u in unlayered:
        print(f"no layer: {u} (add it to MODULE_LAYER and docs/architecture.md)")
    if not (sccs or upward or unlayered):
        print("no cycles, no upward arrows")
    return 1 if check and (sccs or upward or unlayered) else 0


if __name__ == "__main__":
    sys.exit(main())

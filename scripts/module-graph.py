#!/usr/bin/env python3
"""Lists the library's module dependencies and the cycles among them.

Every file of src/ (the binaries and tests excluded) is a node, named by its module path
(`merge::repair::resolve`, `merge_log::format`, `record`). An arrow is a path the file names:
`use` trees (groups, `self`, `super`, renames) and inline `crate::`, `super::` and child-module
paths. A path is followed through re-exports (`pub use types::Report` in `merge/mod.rs` makes
`crate::merge::Report` an arrow to `merge::types`) to the file that defines the item.

Cycles are looked for at every depth of the module tree: between top-level modules
(`merge` <-> `merge_log`: every file of a directory module counts as the module), between the
children of one directory module (`cache::error` <-> `cache::import`), and so on down to files.
A directory module's `mod.rs` naming its own parts (re-exporting or calling them) is not counted
for cycles: the module is made of them. A part naming an item its parent's `mod.rs` defines is.

    python3 scripts/module-graph.py            # the graph and any cycles
    python3 scripts/module-graph.py --check    # exit 1 on a cycle or an upward arrow

The layers and the rule for where new code goes are in docs/architecture.md; the
LAYERS table below is that document's, checked here.
"""
import os
import re
import sys
from pathlib import Path

# BEADS_GIT_SCRIPT_ROOT names another tree to read (the script's own test plants a case there).
ROOT = Path(os.environ.get("BEADS_GIT_SCRIPT_ROOT") or Path(__file__).resolve().parent.parent)
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
    "paths": "plumbing", "command": "plumbing", "fix": "plumbing", "platform": "plumbing",
    # engines: one job each, built on plumbing
    "merge": "engine", "cache": "engine", "diff": "engine", "issue_diff": "engine",
    "notify": "engine", "merge_log": "engine", "merge_trailers": "engine", "replay": "engine",
    "tracker": "engine", "bridge": "engine",
    # porcelain: what a command does, built on engines
    "install": "porcelain", "check": "porcelain", "history": "porcelain",
    "update_branch": "porcelain", "schema": "porcelain", "doctor": "porcelain",
}

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
ITEM = re.compile(
    r"^pub(?:\([^)]*\))?\s+(?:unsafe\s+|async\s+|const\s+(?=fn))*(?:struct|enum|fn|const|static|type|trait|union|mod)\s+(" + IDENT + ")",
    re.M,
)


def module_of(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = [p for p in rel.parts if p != "mod"]
    return "::".join(parts) if parts != ["lib"] else ""


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


def strip_comments_and_strings(text: str) -> str:
    """The code alone: comments dropped, string and char literals emptied (a lifetime stays)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == "r" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) and re.match(r'r#*"', text[i:i + 8]):
            hashes = re.match(r"r(#*)", text[i:]).group(1)
            end = text.find('"' + hashes, i + len(hashes) + 2)
            out.append('""')
            i = n if end < 0 else end + 1 + len(hashes)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(?:\\.[^']*|[^'\\])'", text[i:i + 12]):
            out.append("' '")
            i = text.index("'", i + 2 if text[i + 1] != "\\" else i + 3) + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand(tree: str):
    """A `use` tree (`a::{b, c::{self, D as E}}`) as (segments, alias) pairs; `*` is a segment."""
    tree = tree.strip()
    depth, at = 0, -1
    for k, ch in enumerate(tree):
        if ch == "{":
            if depth == 0 and at < 0:
                at = k
            depth += 1
        elif ch == "}":
            depth -= 1
    if at < 0:
        m = re.match(r"(.*?)(?:\s+as\s+(" + IDENT + r"))?\s*$", tree, re.S)
        segs = [s.strip() for s in m.group(1).split("::") if s.strip()]
        return [(segs, m.group(2))] if segs else []
    prefix = [s.strip() for s in tree[:at].split("::") if s.strip()]
    inner = tree[at + 1:tree.rindex("}")]
    items, depth, start = [], 0, 0
    for k, ch in enumerate(inner):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(inner[start:k])
            start = k + 1
    items.append(inner[start:])
    out = []
    for item in items:
        for segs, alias in expand(item):
            if segs == ["self"]:
                out.append((prefix, alias))
            else:
                out.append((prefix + segs, alias))
    return out


class Crate:
    def __init__(self, files):
        self.text = {}
        for f in files:
            self.text[module_of(f)] = strip_comments_and_strings(strip_tests(f.read_text()))
        self.modules = set(self.text)
        self.items = {m: set(ITEM.findall(t)) for m, t in self.text.items()}
        # (module, name) -> absolute path of what `pub use` re-exports under that name; globs apart.
        self.reexports, self.globs = {}, {}
        for m, t in self.text.items():
            for stmt in re.finditer(r"^pub(?:\([^)]*\))?\s+use\s+([^;]*);", t, re.M):
                for segs, alias in expand(stmt.group(1)):
                    target = self.absolute(m, segs)
                    if target is None:
                        continue
                    if target and target[-1] == "*":
                        self.globs.setdefault(m, []).append(target[:-1])
                    elif target:
                        self.reexports[(m, alias or target[-1])] = target

    def absolute(self, me, segs):
        """`segs` as a path from the crate root, or None for a path outside the crate."""
        if not segs:
            return None
        here = me.split("::") if me else []
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] in ("super", "self"):
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    here = here[:-1]
                segs = segs[1:]
            return here + segs
        if "::".join(here + segs[:1]) in self.modules:
            return here + segs
        return None

    def resolve(self, path, depth=0):
        """The module that defines what an absolute path names."""
        cur = []
        for k, seg in enumerate(path):
            name = "::".join(cur + [seg])
            if name in self.modules:
                cur.append(seg)
                continue
            mod = "::".join(cur)
            if depth < 20 and (mod, seg) in self.reexports:
                return self.resolve(self.reexports[(mod, seg)] + path[k + 1:], depth + 1)
            if depth < 20 and seg not in self.items.get(mod, ()):
                for glob in self.globs.get(mod, ()):
                    found = self.resolve(glob + [seg], depth + 1)
                    if found != "::".join(glob):
                        return found
                    if seg in self.items.get(found, ()):
                        return found
            return mod
        return "::".join(cur)

    def uses(self, me):
        text = self.text[me]
        paths = []
        for stmt in re.finditer(r"\buse\s+([^;]*);", text):
            paths += [segs for segs, _ in expand(stmt.group(1))]
        # Inline paths: `crate::a::b`, `super::a`, `self::a`, and a child module's `child::a`.
        # The whole path or nothing (an atomic group): a path ending in `::{` is a `use` tree's.
        whole = r"(?<![\w:])(?=((?:crate|super|self|" + IDENT + r")(?:::" + IDENT + r")+))\1(?!\s*::\s*[{*])"
        for m in re.finditer(whole, text):
            paths.append(m.group(1).split("::"))
        found = set()
        for segs in paths:
            target = self.absolute(me, segs)
            if target is None:
                continue
            module = self.resolve([s for s in target if s != "*"])
            if module and module != me:
                found.add(module)
        return found


def sccs_of(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def collapse(module, depth):
    return "::".join(module.split("::")[:depth])


def layer(module: str):
    return MODULE_LAYER.get(module.split("::")[0])


def main() -> int:
    files = sorted(f for f in SRC.rglob("*.rs") if "bin" not in f.relative_to(SRC).parts)
    # A file that is a `#[cfg(test)] mod name;` of its parent is a test, not part of the library.
    tests = set()
    for f in files:
        for name in re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", f.read_text()):
            tests |= {f.parent / f"{name}.rs", f.parent / name / "mod.rs"} if f.name in ("mod.rs", "lib.rs") else {f.with_suffix("") / f"{name}.rs"}
    files = [f for f in files if f not in tests]
    crate = Crate(files)
    graph = {m: crate.uses(m) for m in sorted(crate.modules) if m}
    deepest = max(len(m.split("::")) for m in graph)
    # A directory module's `mod.rs` naming its own parts (re-exporting them, calling them) is the
    # module being made of them, not a cycle partner; a part naming its parent's own items counts.
    parts_excluded = {v: {w for w in ws if not w.startswith(v + "::")} for v, ws in graph.items()}
    # Cycles at every depth: depth 1 sees top-level modules, the deepest sees files.
    cycles, seen = [], set()
    for depth in range(1, deepest + 1):
        collapsed = {}
        for v, ws in parts_excluded.items():
            for w in ws:
                a, b = collapse(v, depth), collapse(w, depth)
                if a != b:
                    collapsed.setdefault(a, set()).add(b)
        for comp in sccs_of(collapsed):
            if tuple(comp) in seen:
                continue
            seen.add(tuple(comp))
            members = set(comp)
            arrows = sorted(
                f"{v} -> {w}"
                for v, ws in parts_excluded.items()
                for w in ws
                if collapse(v, depth) in members and collapse(w, depth) in members and collapse(v, depth) != collapse(w, depth)
            )
            cycles.append((comp, arrows))
    upward = []
    for v, ws in sorted(graph.items()):
        for w in sorted(ws):
            lv, lw = layer(v), layer(w)
            if lv is not None and lw is not None and LAYERS[lw] > LAYERS[lv]:
                upward.append((v, w, lv, lw))
    unlayered = sorted({v.split("::")[0] for v in graph if layer(v) is None})
    check = "--check" in sys.argv
    if not check:
        for v, ws in sorted(graph.items()):
            print(f"{v} ({layer(v) or '?'}) -> {', '.join(sorted(ws)) or '-'}")
        print()
    for comp, arrows in cycles:
        shown = "; ".join(arrows[:6]) + ("; ..." if len(arrows) > 6 else "")
        print(f"cycle: {' <-> '.join(comp)}  ({shown})")
    for v, w, lv, lw in upward:
        print(f"upward: {v} ({lv}) -> {w} ({lw})")
    for u in unlayered:
        print(f"no layer: {u} (add it to MODULE_LAYER and docs/architecture.md)")
    if not (cycles or upward or unlayered):
        print(f"no cycles, no upward arrows ({len(graph)} files)")
    return 1 if check and (cycles or upward or unlayered) else 0


if __name__ == "__main__":
    sys.exit(main())

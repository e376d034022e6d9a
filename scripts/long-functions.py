#!/usr/bin/env python3
"""Lists the crate's longest functions (library and binaries; test modules excluded), longest first.

    python3 scripts/long-functions.py [MIN_LINES]        # list those of MIN_LINES or more (60)
    python3 scripts/long-functions.py --check MAX_LINES  # exit 1 if any is longer (CI: 120)

A function is measured from its `fn` line to the closing brace at the same indentation. A
`#[cfg(test)] mod name { ... }` is left out by its span (the lines to its closing brace), so the
code after a test module is still read. BEADS_GIT_SCRIPT_ROOT names another tree to read (the
script's own test plants a case there).
"""
import os
import re
import sys
from pathlib import Path

ROOT = Path(os.environ.get("BEADS_GIT_SCRIPT_ROOT") or Path(__file__).resolve().parent.parent)
FN = re.compile(r"(\s*)(pub(\([a-z]+\))? )?(const )?(async )?(unsafe )?(extern \"C\" )?fn (\w+)")


def test_spans(lines):
    """The line numbers inside `#[cfg(test)] mod ... { }` blocks (attribute to closing brace)."""
    inside = set()
    i = 0
    while i < len(lines):
        if re.match(r"\s*#\[cfg\(test\)\]", lines[i]):
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or lines[j].lstrip().startswith("#[")):
                j += 1
            m = re.match(r"(\s*)(pub(\([a-z]+\))? )?mod \w+\s*\{", lines[j]) if j < len(lines) else None
            if m:
                k = j + 1
                while k < len(lines) and lines[k] != m.group(1) + "}":
                    k += 1
                inside.update(range(i, k + 1))
                i = k
        i += 1
    return inside


def functions(path):
    lines = path.read_text().split("\n")
    skip = test_spans(lines)
    for i, line in enumerate(lines):
        m = FN.match(line)
        if i in skip or not m or line.rstrip().endswith(";"):
            continue
        for j in range(i + 1, len(lines)):
            if lines[j] == m.group(1) + "}":
                yield j - i + 1, f"{path.relative_to(ROOT)}:{i + 1}", m.group(8)
                break


def main():
    args = sys.argv[1:]
    check = args[:1] == ["--check"]
    limit = int(args[1 if check else 0]) if len(args) > (1 if check else 0) else (120 if check else 60)
    found = sorted((f for path in sorted((ROOT / "src").rglob("*.rs")) for f in functions(path)), reverse=True)
    over = [f for f in found if (f[0] > limit if check else f[0] >= limit)]
    for n, where, name in over:
        print(f"{n:5}  {name:32} {where}")
    if check:
        if over:
            print(f"{len(over)} function(s) over {limit} lines: split them (docs/architecture.md)", file=sys.stderr)
            return 1
        print(f"no function over {limit} lines ({len(found)} read)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

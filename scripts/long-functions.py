#!/usr/bin/env python3
"""Lists the library's longest functions (tests excluded), longest first.

    python3 scripts/long-functions.py [MIN_LINES]   # default 60

A function is measured from its `fn` line to the closing brace at the same indentation.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIN = int(sys.argv[1]) if len(sys.argv) > 1 else 60

found = []
for path in sorted((ROOT / "src").rglob("*.rs")):
    if "bin" in path.relative_to(ROOT / "src").parts:
        continue
    lines = path.read_text().split("\n")
    in_tests = None
    for i, line in enumerate(lines):
        if re.match(r"\s*#\[cfg\(test\)\]", line):
            in_tests = len(line) - len(line.lstrip())
        m = re.match(r"(\s*)(pub(\([a-z]+\))? )?(const )?(unsafe )?fn (\w+)", line)
        if not m or in_tests is not None:
            continue
        indent = m.group(1)
        if line.rstrip().endswith(";"):
            continue
        for j in range(i + 1, len(lines)):
            if lines[j] == indent + "}":
                found.append((j - i + 1, f"{path.relative_to(ROOT)}:{i + 1}", m.group(6)))
                break
for n, where, name in sorted(found, reverse=True):
    if n >= MIN:
        print(f"{n:5}  {name:32} {where}")

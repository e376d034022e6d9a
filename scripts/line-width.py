#!/usr/bin/env python3
"""Checks that every Rust line holds the width rustfmt.toml states (`max_width`).

    python3 scripts/line-width.py          # list the lines over the width
    python3 scripts/line-width.py --check  # the same, and exit 1 when there is one (CI)

rustfmt keeps code to `max_width`, but leaves alone what it cannot break: string literals,
comments, attributes and the inside of macros (`json!`, `proptest!`). Those are the lines this
reads, in every `.rs` file under src/, tests/ and benches/. A long string literal is continued with
a backslash at the end of the line (the next line's leading spaces are not part of the string);
a long raw string becomes `concat!` of shorter ones. BEADS_GIT_SCRIPT_ROOT names another tree to
read (the script's own test plants a case there).
"""
import os
import re
import sys
from pathlib import Path

ROOT = Path(os.environ.get("BEADS_GIT_SCRIPT_ROOT") or Path(__file__).resolve().parent.parent)


def max_width():
    config = ROOT / "rustfmt.toml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    m = re.search(r"^\s*max_width\s*=\s*(\d+)", text, re.M)
    return int(m.group(1)) if m else 100  # rustfmt's default


def main():
    check = "--check" in sys.argv[1:]
    width = max_width()
    over = []
    for top in ("src", "tests", "benches"):
        for path in sorted((ROOT / top).rglob("*.rs")):
            for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").split("\n"), 1):
                if len(line) > width:
                    over.append(f"{path.relative_to(ROOT)}:{n}: {len(line)} columns")
    for line in over:
        print(line)
    if over:
        print(f"{len(over)} line(s) over rustfmt.toml's max_width of {width}", file=sys.stderr)
        return 1 if check else 0
    print(f"no line over rustfmt.toml's max_width of {width}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

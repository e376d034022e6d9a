#!/bin/sh
# Seeds fuzz/corpus/<target>/ from the merge fixtures: every fixture file for jsonl_record and
# resolve_markers, each triple joined with 0xFF bytes for merge3. Run from anywhere.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
corpus="$root/fuzz/corpus"
mkdir -p "$corpus/jsonl_record" "$corpus/resolve_markers" "$corpus/merge3"
for case in "$root"/fixtures/merge/*/; do
  name=$(basename "$case")
  for f in "$case"*.jsonl; do
    [ -f "$f" ] || continue
    cp "$f" "$corpus/jsonl_record/$name-$(basename "$f")"
    cp "$f" "$corpus/resolve_markers/$name-$(basename "$f")"
  done
  if [ -f "$case/base.jsonl" ] && [ -f "$case/ours.jsonl" ] && [ -f "$case/theirs.jsonl" ]; then
    { cat "$case/base.jsonl"; printf '\377'; cat "$case/ours.jsonl"; printf '\377'; cat "$case/theirs.jsonl"; } >"$corpus/merge3/$name"
  fi
done

#!/usr/bin/env bash
# The newcomer test: does what the README's "Install" and "Set up a repository" sections say,
# literally. The ```sh blocks that follow a `<!-- newcomer:NAME -->` comment in README.md (and, for
# the shell completions and the cron recipe, in docs/install.md and docs/notifier.md) are
# extracted and run, in a temporary HOME, against a real repository holding a copy of
# ../shared/data/beads-real.jsonl as .beads/issues.jsonl; then the newcomer and a teammate (who
# followed the teammate's one-liner) change the same issue in their clones and merge, which only
# the driver those steps set up can do without a conflict.
#
# What it substitutes, and nothing else:
#   - in the blocks: `<URL of this repository>` becomes this checkout's path (so git clones its
#     HEAD: commit what you want tested), and `path/to/your/project` the newcomer's repository
#     (the cron block's: the teammate's clone, and its `http://localhost:8080` a loopback server);
#     `$BEADS_GIT` is set to the clone, as the README asks.
#   - around them: HOME is a new temporary directory. cargo keeps the real CARGO_HOME (its
#     registry: nothing is downloaded again) and RUSTUP_HOME; only the install root moves
#     (CARGO_INSTALL_ROOT=$HOME/.cargo, so the binaries land in ~/.cargo/bin of the temporary HOME,
#     as the README says, and that directory goes first on PATH). CARGO_TARGET_DIR is this
#     checkout's target directory (or the one already set), so `cargo install` reuses the release
#     build .ci/run made before it: the dependencies are not built again (the crate itself is:
#     a fresh clone's files are newer than that build). git runs hermetically (GIT_* cleared, no system or
#     user config), with a fixed identity and clock.
#
# Run: `bash tests/newcomer.sh` (after `cargo build --release --locked`, or it builds). Without
# ../shared/data/beads-real.jsonl it skips, or fails when CI is set.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
data="$repo/../shared/data/beads-real.jsonl"
if [ ! -f "$data" ]; then
  if [ -n "${CI:-}" ]; then
    echo "newcomer: $data is missing; CI runs with ../shared beside the clone" >&2
    exit 1
  fi
  echo "newcomer: $data not found: skipped"
  exit 0
fi

# The ```sh block after the `<!-- newcomer:NAME` comment in FILE (a path from the repository's top,
# README.md unless given).
block() {
  local code file=${2:-README.md}
  code=$(awk -v name="$1" '
    index($0, "<!-- newcomer:" name " ") == 1 { armed = 1; next }
    armed && /^```sh$/ { inside = 1; next }
    inside && /^```$/ { exit }
    inside { print }
  ' "$repo/$file")
  if [ -z "$code" ]; then
    echo "newcomer: $file has no sh block marked <!-- newcomer:$1 -->" >&2
    exit 1
  fi
  printf '%s\n' "$code"
}

# Runs block NAME of FILE (README.md unless given) in DIR, after the substitutions above; its
# commands are echoed.
run_block() {
  local name=$1 dir=$2 file=${3:-README.md} code
  code=$(block "$name" "$file")
  code=${code//'<URL of this repository>'/$repo}
  code=${code//'path/to/your/project'/$work/project}
  echo "== $file block '$name' (in ${dir#"$work"/})"
  (cd "$dir" && sh -exc "$code")
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
tools_dir="${BEADS_GIT_TOOLS:-$HOME/.cache/beads-git-tools}"
export HOME="$work/home"
mkdir -p "$HOME"
export CARGO_INSTALL_ROOT="$HOME/.cargo"
export PATH="$HOME/.cargo/bin:$PATH"
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(GIT_[A-Za-z0-9_]*\)=.*/\1/p')
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=Newcomer GIT_AUTHOR_EMAIL=newcomer@example.com GIT_COMMITTER_NAME=Newcomer
export GIT_COMMITTER_EMAIL=newcomer@example.com
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"

# The newcomer's project, published to a bare origin a teammate clones.
git init -q --bare -b main "$work/origin.git"
git init -q -b main "$work/project"
mkdir "$work/project/.beads"
cp "$data" "$work/project/.beads/issues.jsonl"
git -C "$work/project" add .beads/issues.jsonl
git -C "$work/project" commit -q -m "the tracker"
git -C "$work/project" remote add origin "$work/origin.git"
git -C "$work/project" push -q -u origin main

run_block install "$work"
for b in bd-sync bd-merge bd-hook; do
  [ -x "$HOME/.cargo/bin/$b" ] || { echo "newcomer: ~/.cargo/bin/$b was not installed" >&2; exit 1; }
done
bd-sync --version
run_block completions "$work" docs/install.md
for f in .local/share/bash-completion/completions/bd-sync .zfunc/_bd-sync .config/fish/completions/bd-sync.fish \
  .local/share/man/man1/bd-sync.1; do
  [ -s "$HOME/$f" ] || { echo "newcomer: ~/$f is missing or empty" >&2; exit 1; }
done

run_block setup "$work"
git -C "$work/project" push -q origin main

git clone -q "$work/origin.git" "$work/teammate"
export BEADS_GIT="$work/beads-git"
run_block teammate "$work/teammate"

# Each clone changes another field of the same issue (the first line): a line merge conflicts.
edit() {
  python3 - "$1/.beads/issues.jsonl" "$2" <<'EOF'
import re, sys
path, who = sys.argv[1], sys.argv[2]
with open(path, encoding="utf-8", newline="") as f:
    lines = f.read().split("\n")
first = lines[0]
if who == "title":
    new = first.replace('"title":"', '"title":"Renamed: ', 1)
else:
    new = re.sub(r'"priority":(\d)', lambda m: '"priority":' + ("4" if m.group(1) != "4" else "3"), first, count=1)
assert new != first, f"the first issue has no {who} to change"
lines[0] = new
with open(path, "w", encoding="utf-8", newline="") as f:
    f.write("\n".join(lines))
print(new[:120])
EOF
}
echo "== two clones change the same issue, then merge"
edit "$work/project" title
git -C "$work/project" commit -q -am "rename the first issue"
git -C "$work/project" push -q origin main
edit "$work/teammate" priority
git -C "$work/teammate" commit -q -am "reprioritise the first issue"
git -C "$work/teammate" pull -q --no-rebase --no-edit origin main
git -C "$work/teammate" show HEAD^1:.beads/issues.jsonl >"$work/theirs.jsonl"
priority=$(sed -n '1s/.*\("priority":[0-9]\).*/\1/p' "$work/theirs.jsonl")
merged=$(head -n 1 "$work/teammate/.beads/issues.jsonl")
id=$(printf '%s' "$merged" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
case "$merged" in
  *'"title":"Renamed: '*) ;;
  *) echo "newcomer: the merge lost the title change: $merged" >&2; exit 1 ;;
esac
case "$merged" in
  *"$priority"*) ;;
  *) echo "newcomer: the merge lost the priority change ($priority): $merged" >&2; exit 1 ;;
esac
if grep -q '^<<<<<<<' "$work/teammate/.beads/issues.jsonl"; then
  echo "newcomer: the merged file has conflict markers" >&2
  exit 1
fi
[ "$(git -C "$work/teammate" rev-list --count --merges HEAD)" = 1 ] || { echo "newcomer: no merge commit" >&2; exit 1; }
(cd "$work/teammate" && bd-sync show "$id" && bd-sync check)

# Prefixes the title of line LINE (from 1) of FILE with PREFIX, every other byte kept.
retitle() {
  python3 - "$1" "$2" "$3" <<'EOF2'
import sys
path, at, prefix = sys.argv[1], int(sys.argv[2]) - 1, sys.argv[3]
with open(path, encoding="utf-8", newline="") as f:
    lines = f.read().split("\n")
lines[at] = lines[at].replace('"title":"', '"title":"' + prefix, 1)
with open(path, "w", encoding="utf-8", newline="") as f:
    f.write("\n".join(lines))
EOF2
}

echo "== the CI gate on a fresh clone that has the committed .gitattributes and no driver"
git clone -q "$work/origin.git" "$work/ci"
grep -q 'merge=beads' "$work/ci/.gitattributes" || { echo "newcomer: the setup did not commit .gitattributes" >&2; exit 1; }
(cd "$work/ci" && bd-merge resolve --dry-run && bd-merge dedupe --dry-run && bd-sync check --ci) ||
  { echo "newcomer: the CI gate failed on a healthy repository" >&2; exit 1; }
printf '<<<<<<< HEAD\n=======\n>>>>>>> topic\n' >>"$work/ci/.beads/issues.jsonl"
if (cd "$work/ci" && bd-sync check --ci >/dev/null 2>&1); then
  echo "newcomer: the CI gate passed a file with conflict markers" >&2
  exit 1
fi

echo "== a teammate without beads-git edits another issue; the others pull it"
git clone -q "$work/origin.git" "$work/plain"
git -C "$work/teammate" push -q origin HEAD:main
git -C "$work/plain" pull -q --no-rebase --no-edit origin main
retitle "$work/plain/.beads/issues.jsonl" 2 "Plain: "
git -C "$work/plain" commit -q -am "an edit without beads-git"
git -C "$work/plain" push -q origin HEAD:main
git -C "$work/teammate" pull -q --no-rebase --no-edit origin main
sed -n 2p "$work/teammate/.beads/issues.jsonl" | grep -q '"title":"Plain: ' || { echo "newcomer: the plain teammate's edit is lost" >&2; exit 1; }

echo "== the cron recipe, under cron's environment (env -i PATH=/usr/bin:/bin)"
port_file="$work/port"
python3 - "$work/notices" "$port_file" <<'EOF2' &
import http.server, sys
log, port_file = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(log, "ab") as f:
            f.write(body + b"\n")
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(port_file, "w").write(str(s.server_address[1]))
s.timeout = 60
for _ in range(20):
    s.handle_request()
EOF2
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do [ -s "$port_file" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$port_file")"
code=$(block cron docs/notifier.md)
code=${code//'http://localhost:8080'/$url}
(cd "$work/teammate" && sh -exc "$(printf '%s\n' "$code" | grep -v '^#')")
cron_line=$(printf '%s\n' "$code" | sed -n 's/^# \* \* \* \* \* //p')
cron_line=${cron_line//'/path/to/your/project'/$work/teammate}
[ -n "$cron_line" ] || { echo "newcomer: the cron block has no crontab line" >&2; exit 1; }
echo "cron: $cron_line"
env -i PATH=/usr/bin:/bin HOME="$HOME" sh -c "$cron_line"
retitle "$work/teammate/.beads/issues.jsonl" 3 "Cron: "
env -i PATH=/usr/bin:/bin HOME="$HOME" sh -c "$cron_line"
third=$(sed -n '3s/^{"id":"\([^"]*\)".*/\1/p' "$work/teammate/.beads/issues.jsonl")
grep -q "\"work_item_id\": *\"$third\"" "$work/notices" 2>/dev/null ||
  { echo "newcomer: the cron run did not notify $third"; cat "$work/notices" 2>/dev/null; exit 1; } >&2

echo "== two clones with the real br: each edits one issue, git merges, br imports both edits"
br_bin=${BR:-$tools_dir/br-0.7.6/bin/br}
[ -x "$br_bin" ] || br_bin=$(command -v br || true)
if [ -z "$br_bin" ] || [ ! -x "$br_bin" ]; then
  if [ -n "${CI:-}" ]; then
    echo "newcomer: br (beads_rust 0.7.6) is missing; .ci/tools.sh installs it" >&2
    exit 1
  fi
  echo "newcomer: br not found: the two-clone br path skipped"
else
  git init -q --bare -b main "$work/br-origin.git"
  git clone -q "$work/br-origin.git" "$work/br-a" 2>/dev/null
  (cd "$work/br-a" && "$br_bin" init --prefix nc >/dev/null)
  br_id=$(cd "$work/br-a" && "$br_bin" q "Shared issue")
  (cd "$work/br-a" && "$br_bin" q "Another issue" >/dev/null && "$br_bin" sync --flush-only >/dev/null && bd-sync install >/dev/null)
  git -C "$work/br-a" add .beads/issues.jsonl .gitattributes
  git -C "$work/br-a" commit -q -m "the tracker, with br"
  git -C "$work/br-a" push -q origin HEAD:main
  git clone -q "$work/br-origin.git" "$work/br-b"
  (cd "$work/br-b" && bd-sync install >/dev/null && "$br_bin" sync --import-only >/dev/null)
  (cd "$work/br-a" && "$br_bin" update "$br_id" --title "Retitled in A" >/dev/null && "$br_bin" sync --flush-only >/dev/null)
  git -C "$work/br-a" commit -q -am "A retitles"
  git -C "$work/br-a" push -q origin HEAD:main
  (cd "$work/br-b" && "$br_bin" update "$br_id" --priority 0 >/dev/null && "$br_bin" sync --flush-only >/dev/null)
  git -C "$work/br-b" commit -q -am "B reprioritises"
  git -C "$work/br-b" pull -q --no-rebase --no-edit origin main
  if grep -q '^<<<<<<<' "$work/br-b/.beads/issues.jsonl"; then
    echo "newcomer: the br clones' merge left conflict markers" >&2
    exit 1
  fi
  (cd "$work/br-b" && "$br_bin" sync --import-only >/dev/null)
  shown=$(cd "$work/br-b" && "$br_bin" show "$br_id" --json)
  case "$shown" in *'"Retitled in A"'*) ;; *) echo "newcomer: br lost A's title: $shown" >&2; exit 1 ;; esac
  case "$shown" in *'"priority": 0'* | *'"priority":0'*) ;; *) echo "newcomer: br lost B's priority: $shown" >&2; exit 1 ;; esac
  (cd "$work/br-b" && "$br_bin" sync --flush-only >/dev/null)
  git -C "$work/br-b" diff --quiet -- .beads/issues.jsonl ||
    { echo "newcomer: br's flush after the merge rewrote the merged file:" >&2; git -C "$work/br-b" diff --stat >&2; exit 1; }
  (cd "$work/br-b" && bd-sync check)
fi

echo "newcomer: the README's install and set-up steps work; the driver merged $id; the CI gate, a teammate without beads-git, the cron recipe and two br clones hold"

#!/bin/sh
# beads-git demo: two branches edit the same issue, git merges them with bd-merge, and bd-hook
# tells a (local, throwaway) notify server which issues the merge changed.
# Usage: examples/demo.sh          (uses bd-* on PATH, else builds target/release)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
if command -v bd-merge >/dev/null 2>&1 && command -v bd-hook >/dev/null 2>&1; then
  bin=$(dirname "$(command -v bd-merge)")
else
  (cd "$here" && cargo build --release --quiet)
  bin=$here/target/release
fi
demo=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$demo"' EXIT
cd "$demo"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.com GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.com

git init -q -b main
git config merge.beads.name "beads JSONL merge"
git config merge.beads.driver "$bin/bd-merge %O %A %B -l %L -p %P -s %S -x %X -y %Y"
echo '.beads/issues.jsonl merge=beads' > .gitattributes
mkdir .beads
cat > .beads/issues.jsonl <<'JSONL'
{"id":"bd-1","title":"Fix the merge driver","status":"open","priority":2,"updated_at":"2025-11-01T10:00:00-08:00","labels":["merge"]}
{"id":"bd-2","title":"Write docs","status":"open","priority":3,"updated_at":"2025-11-01T10:00:00-08:00"}
JSONL
git add . && git commit -qm "two issues"

git checkout -q -b agent-a
sed -i.bak 's/"title":"Fix the merge driver"/"title":"Fix the merge driver (field-level)"/; s/"labels":\["merge"\]/"labels":["merge","urgent"]/; s/10:00:00-08:00","labels/11:00:00-08:00","labels/' .beads/issues.jsonl && rm .beads/issues.jsonl.bak
git commit -qam "agent A: retitle bd-1, label it urgent"

git checkout -q main
sed -i.bak 's/"status":"open","priority":2/"status":"in_progress","priority":0/; s/"labels":\["merge"\]/"labels":["merge","p0"]/; s/10:00:00-08:00","labels/12:00:00-08:00","labels/' .beads/issues.jsonl && rm .beads/issues.jsonl.bak
git commit -qam "agent B: start bd-1 at priority 0"

echo "== both branches edited bd-1; git merge runs bd-merge:"
git merge --no-edit agent-a
echo
echo "== the merged record keeps both agents' edits:"
grep '"bd-1"' .beads/issues.jsonl
echo

# A throwaway notify server on loopback that prints each request it receives.
port_file=$demo/port
python3 -c '
import http.server, sys, json
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        print("   server got", self.command, self.path, body.decode(), flush=True)
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_port))
s.serve_forever()
' "$port_file" &
server=$!
while [ ! -s "$port_file" ]; do sleep 0.05; done
echo "== bd-hook tells the server which issues the merge changed (vs. main before it):"
GEMBA_NOTIFY_URL=http://127.0.0.1:$(cat "$port_file") "$bin/bd-hook" --from-diff HEAD~1 --source demo
sleep 0.2

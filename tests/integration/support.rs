//! Every builder and helper the integration tests share, so each module reads as a transcript:
//! hermetic git ([`hermetic`], [`git`], [`TestRepo`]); our binaries run through `assert_cmd`
//! ([`ours`], [`bd_sync`], [`bd_merge`]); the issue-line builder ([`issue`]) and [`jsonl`] files;
//! the files and real tools tests need from outside the repository, which fail under `CI` when
//! missing ([`required`]); and a loopback HTTP server that records what it receives.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Path of one of the package's binaries (`bd-merge`, `bd-sync`, `bd-hook`), built by cargo for
/// the tests.
pub fn bin(name: &str) -> PathBuf {
    // The macro reads cargo's CARGO_BIN_EXE_* at compile time, so the test binary finds ours
    // however it is started.
    match name {
        "bd-merge" => assert_cmd::cargo::cargo_bin!("bd-merge").to_path_buf(),
        "bd-sync" => assert_cmd::cargo::cargo_bin!("bd-sync").to_path_buf(),
        "bd-hook" => assert_cmd::cargo::cargo_bin!("bd-hook").to_path_buf(),
        other => panic!("unknown binary {other}"),
    }
}

/// One of our binaries as an `assert_cmd` command in the [`hermetic`] environment.
pub fn ours(name: &str) -> assert_cmd::Command {
    assert_cmd::Command::from_std(hermetic(bin(name)))
}

/// Runs `bd-sync ARGS` in `dir`; the output whatever the exit status.
pub fn bd_sync(dir: &Path, args: &[&str]) -> Output {
    run(ours("bd-sync").current_dir(dir).args(args))
}

/// Runs `bd-sync ARGS` in `dir`, fails the test (with the command and its output) unless it
/// succeeds; returns stdout.
pub fn bd_sync_ok(dir: &Path, args: &[&str]) -> String {
    let assert = ours("bd-sync").current_dir(dir).args(args).assert().success();
    String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
}

/// Runs `bd-merge ARGS` in `dir`; the output whatever the exit status.
pub fn bd_merge(dir: &Path, args: &[&str]) -> Output {
    run(ours("bd-merge").current_dir(dir).args(args))
}

/// Runs hermetic `git ARGS` in `dir`, fails the test (with git's words) unless it succeeds;
/// returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = run(hermetic("git").current_dir(dir).args(args));
    assert!(
        out.status.success(),
        "git {args:?} in {} exited {:?}:\n{}{}",
        dir.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The records of a JSONL file's lines, each parsed (a line that does not parse fails the test).
pub fn records(bytes: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(bytes).lines().map(|l| serde_json::from_str(l).expect("line parses")).collect()
}

/// stdout then stderr of a command, as text.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// An issue line of the tests' data, built field by field in bd's key order: `id`, `title`,
/// `description`, `status`, `priority`, `issue_type`, `created_at`, `updated_at`, then any extra
/// fields as given. The defaults are the tests' common record:
/// `{"id":ID,"title":"Issue ID","status":"open","priority":2,"issue_type":"task",
/// "created_at":"2025-11-01T10:00:00-08:00","updated_at":"2025-11-01T10:00:00-08:00"}`.
#[derive(Debug, Clone)]
pub struct Issue {
    id: String,
    title: String,
    description: Option<String>,
    status: String,
    priority: u8,
    issue_type: Option<String>,
    created_at: String,
    updated_at: Option<String>,
    extra: String,
}

/// The default stamp of [`issue`]'s `created_at` and `updated_at`.
pub const T0: &str = "2025-11-01T10:00:00-08:00";

/// An [`Issue`] with the defaults; finish with [`Issue::line`].
pub fn issue(id: &str) -> Issue {
    Issue {
        id: id.to_owned(),
        title: format!("Issue {id}"),
        description: None,
        status: "open".to_owned(),
        priority: 2,
        issue_type: Some("task".to_owned()),
        created_at: T0.to_owned(),
        updated_at: Some(T0.to_owned()),
        extra: String::new(),
    }
}

impl Issue {
    pub fn title(mut self, title: &str) -> Issue {
        self.title = title.to_owned();
        self
    }

    /// A `description` (JSON-escaped) right after the title.
    pub fn description(mut self, text: &str) -> Issue {
        self.description = Some(text.to_owned());
        self
    }

    pub fn status(mut self, status: &str) -> Issue {
        self.status = status.to_owned();
        self
    }

    pub fn priority(mut self, priority: u8) -> Issue {
        self.priority = priority;
        self
    }

    pub fn issue_type(mut self, issue_type: &str) -> Issue {
        self.issue_type = Some(issue_type.to_owned());
        self
    }

    /// No `issue_type` field.
    pub fn no_type(mut self) -> Issue {
        self.issue_type = None;
        self
    }

    pub fn created(mut self, at: &str) -> Issue {
        self.created_at = at.to_owned();
        self
    }

    pub fn updated(mut self, at: &str) -> Issue {
        self.updated_at = Some(at.to_owned());
        self
    }

    /// No `updated_at` field.
    pub fn no_updated(mut self) -> Issue {
        self.updated_at = None;
        self
    }

    /// Both stamps at once.
    pub fn at(self, at: &str) -> Issue {
        self.created(at).updated(at)
    }

    /// Raw JSON members appended after the others, e.g. `"labels":["a"]`; empty for none.
    pub fn extra(mut self, fields: &str) -> Issue {
        if !fields.is_empty() {
            self.extra.push(',');
            self.extra.push_str(fields);
        }
        self
    }

    /// The line, without its newline. Only the description is escaped: the other values are JSON
    /// text as given, so a test can write escapes (`\u001b`) itself.
    pub fn line(&self) -> String {
        let mut l = format!(r#"{{"id":"{}","title":"{}""#, self.id, self.title);
        if let Some(d) = &self.description {
            l.push_str(&format!(r#","description":{}"#, serde_json::to_string(d).expect("a string serialises")));
        }
        l.push_str(&format!(r#","status":"{}","priority":{}"#, self.status, self.priority));
        if let Some(t) = &self.issue_type {
            l.push_str(&format!(r#","issue_type":"{t}""#));
        }
        l.push_str(&format!(r#","created_at":"{}""#, self.created_at));
        if let Some(u) = &self.updated_at {
            l.push_str(&format!(r#","updated_at":"{u}""#));
        }
        l.push_str(&self.extra);
        l.push('}');
        l
    }
}

impl std::fmt::Display for Issue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line())
    }
}

/// A JSONL file of `lines`, each ended by a newline.
pub fn jsonl(lines: &[String]) -> Vec<u8> {
    lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes()
}

/// Copies our three binaries into `dir` (created), as an unpacked release archive puts them.
pub fn binaries_in(dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for name in ["bd-merge", "bd-sync", "bd-hook"] {
        std::fs::copy(bin(name), dir.join(name)).expect("copy a binary");
    }
}

/// A PATH with our binaries first, then `extra` directories, then the inherited PATH: what an
/// installed hook (which calls `bd-sync`, `bd-hook`, `bd-merge` by name) and a hook manager see.
pub fn path_with_our_binaries(extra: &[&Path]) -> std::ffi::OsString {
    let ours = bin("bd-sync").parent().expect("binaries live in a directory").to_path_buf();
    let dirs = std::iter::once(ours).chain(extra.iter().map(|p| p.to_path_buf()));
    std::env::join_paths(dirs.chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).expect("PATH entries join")
}

/// A command with every `GIT_*` variable cleared and a fixed identity and clocks, so tests never
/// see the developer's or CI's git configuration.
pub fn hermetic(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(&key);
        }
    }
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "Test Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_AUTHOR_DATE", "2025-11-01T12:00:00Z")
        .env("GIT_COMMITTER_DATE", "2025-11-01T12:00:00Z")
        .env("GIT_TERMINAL_PROMPT", "0")
        // The merge's clock, fixed like git's: earlier than every stamp in the tests' data.
        .env("BD_MERGE_NOW", "2000-01-01T00:00:00Z")
        .env_remove("BD_MERGE")
        .env_remove("GEMBA_NOTIFY_URL")
        .env_remove("GEMBA_NOTIFY_AUTH")
        .env_remove("GEMBA_NOTIFY_SOURCE")
        .env_remove("GEMBA_NOTIFY_WORKSPACE")
        .env_remove("BD_HOOKS")
        .env_remove("BD_ACTOR")
        .env_remove("BEADS_ACTOR")
        .env_remove("BEADS_ISSUE")
        .env_remove("BEADS_BRIDGE")
        .stdin(Stdio::null());
    cmd
}

/// Runs a command (git or another program as a `std` command, our binaries as [`ours`]) and
/// returns its output whatever the exit status, failing the test when it could not start.
pub fn run(cmd: &mut impl Runnable) -> Output {
    cmd.run()
}

/// A command [`run`] can run.
pub trait Runnable {
    fn run(&mut self) -> Output;
}

impl Runnable for Command {
    fn run(&mut self) -> Output {
        self.output().unwrap_or_else(|e| panic!("could not run {self:?}: {e}"))
    }
}

impl Runnable for assert_cmd::Command {
    fn run(&mut self) -> Output {
        self.output().unwrap_or_else(|e| panic!("could not run {self:?}: {e}"))
    }
}

/// A git repository in a temporary directory.
pub struct TestRepo {
    pub dir: tempfile::TempDir,
}

impl TestRepo {
    /// `git init -b main` in a fresh temporary directory.
    pub fn new() -> TestRepo {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = TestRepo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs git and returns the output whatever the exit status.
    pub fn git_output(&self, args: &[&str]) -> Output {
        run(hermetic("git").current_dir(self.path()).args(args))
    }

    /// Runs git and fails the test when it fails; returns stdout.
    pub fn git(&self, args: &[&str]) -> String {
        git(self.path(), args)
    }

    pub fn write(&self, rel: &str, content: &[u8]) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("file has a parent")).expect("mkdir");
        std::fs::write(p, content).expect("write");
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path().join(rel)).expect("read")
    }

    /// Writes a file and commits it.
    pub fn commit_file(&self, rel: &str, content: &[u8], message: &str) {
        self.write(rel, content);
        self.git(&["add", rel]);
        self.git(&["commit", "-q", "-m", message]);
    }

    /// Registers bd-merge as the `beads` driver with the placeholders `bd-sync install` writes.
    pub fn register_merge_driver(&self, extra: &str) {
        let driver = format!("{} %O %A %B -l %L -p %P -s %S -x %X -y %Y{extra}", bin("bd-merge").display());
        self.git(&["config", "merge.beads.driver", &driver]);
        self.git(&["config", "merge.beads.name", "beads JSONL merge"]);
        self.write(".gitattributes", b".beads/issues.jsonl merge=beads\n");
        self.git(&["add", ".gitattributes"]);
        self.git(&["commit", "-q", "-m", "attributes"]);
    }
}

/// Unified diff of two texts for failure messages.
pub fn diff(expected: &[u8], actual: &[u8]) -> String {
    let (e, a) = (String::from_utf8_lossy(expected), String::from_utf8_lossy(actual));
    similar::TextDiff::from_lines(e.as_ref(), a.as_ref()).unified_diff().header("expected", "actual").to_string()
}

/// A file the tests need but the repository does not hold (`../shared`, a real tool): under `CI`
/// its absence fails the test, naming `what` and how to get it; elsewhere the test skips with a
/// message. Returns `found` when it is there.
pub fn required<T>(found: Option<T>, what: &str, how: &str) -> Option<T> {
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "{what} is missing and CI needs it: {how}");
        eprintln!("skipping: {what} is missing ({how})");
    }
    found
}

/// A file of the shared data directory beside the repository (`../shared/{rel}`: gen.py, the real
/// beads file). `None` (a skip) when absent, a failure naming the file under `CI`.
pub fn shared_file(rel: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("shared").join(rel);
    let found = p.exists().then(|| p.clone());
    required(found, &format!("../shared/{rel} ({})", p.display()), ".ci/run expects shared/ beside the clone")
}

/// Where `.ci/tools.sh` installs the real tools: `$BEADS_GIT_TOOLS` or `~/.cache/beads-git-tools`.
pub fn tools_dir() -> PathBuf {
    std::env::var_os("BEADS_GIT_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/beads-git-tools"))
}

/// A real tool from `$VAR`, else the copy `.ci/tools.sh` installs under [`tools_dir`]; see
/// [`required`] for when it is missing.
pub fn real_tool(var: &str, installed: &str) -> Option<PathBuf> {
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| tools_dir().join(installed));
    let found = path.is_file().then(|| path.clone());
    required(found, &path.display().to_string(), "run `bash -c 'source .ci/tools.sh && install_tools'` once; .ci/run does")
}

/// The real br (beads_rust 0.7.6): `$BR`, the copy `.ci/tools.sh` builds, or `br` on PATH; see
/// [`required`] for when it is missing.
pub fn real_br() -> Option<PathBuf> {
    let found = std::env::var_os("BR")
        .map(PathBuf::from)
        .or_else(|| Some(tools_dir().join("br-0.7.6/bin/br")).filter(|p| p.is_file()))
        .or_else(|| on_path("br"));
    required(found, "br (beads_rust 0.7.6)", "set BR=/path/to/br or run `bash -c 'source .ci/tools.sh && install_tools'`")
}

/// libfaketime's `faketime` on PATH; see [`required`] for when it is missing.
pub fn real_faketime() -> Option<PathBuf> {
    required(on_path("faketime"), "faketime", "apt-get install faketime; .ci/run installs it")
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).map(|d| d.join(program)).find(|p| p.is_file())
}

/// One request the capture server received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The `work_item_id` of a notify body.
    pub fn item(&self) -> String {
        let v: serde_json::Value = serde_json::from_str(&self.body).expect("JSON body");
        v["work_item_id"].as_str().expect("work_item_id").to_owned()
    }
}

/// How the capture server answers.
#[derive(Debug, Clone, Copy)]
pub enum Reply {
    Status(u16),
    /// Never answer (until the server is dropped).
    Hang,
}

/// A real HTTP/1.1 server on 127.0.0.1 that records every request (keep-alive supported).
pub struct CaptureServer {
    pub url: String,
    requests: std::sync::Arc<std::sync::Mutex<Vec<Request>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl CaptureServer {
    /// `reply(request, n)` decides the answer to the n-th request (0-based, over all connections).
    pub fn start(reply: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> CaptureServer {
        use std::sync::atomic::Ordering;
        use std::sync::{Arc, Mutex};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reply = Arc::new(reply);
        let (reqs, stop2) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (reqs, stop3, reply) = (reqs.clone(), stop2.clone(), reply.clone());
                        std::thread::spawn(move || serve(stream, &reqs, &stop3, &*reply));
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(2)),
                }
            }
        });
        CaptureServer { url, requests, stop }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("lock").clone()
    }

    /// Sorted work item ids received.
    pub fn items(&self) -> Vec<String> {
        let mut v: Vec<String> = self.requests().iter().map(Request::item).collect();
        v.sort();
        v
    }

    /// Waits until at least `n` requests arrived (or `timeout` passed).
    pub fn wait_for(&self, n: usize, timeout: std::time::Duration) -> Vec<Request> {
        let start = std::time::Instant::now();
        while self.requests().len() < n && start.elapsed() < timeout {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        self.requests()
    }
}

impl Drop for CaptureServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

fn serve(
    stream: std::net::TcpStream,
    requests: &std::sync::Mutex<Vec<Request>>,
    stop: &std::sync::atomic::AtomicBool,
    reply: &(dyn Fn(&Request, usize) -> Reply + Send + Sync),
) {
    use std::io::{BufRead, BufReader, Read, Write};
    stream.set_nonblocking(false).expect("blocking");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).expect("timeout");
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or("").to_owned(), parts.next().unwrap_or("").to_owned());
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_owned(), v.trim().to_owned()));
            }
        }
        let len: usize =
            headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-length")).and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request = Request { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() };
        let n = {
            let mut all = requests.lock().expect("lock");
            all.push(request.clone());
            all.len() - 1
        };
        match reply(&request, n) {
            Reply::Status(code) => {
                let extra = match code {
                    429 | 503 => "Retry-After: 0\r\n",
                    300..=399 => "Location: /elsewhere/api/workitems/notify\r\n",
                    _ => "",
                };
                let msg = format!("HTTP/1.1 {code} X\r\nContent-Length: 2\r\n{extra}Content-Type: application/json\r\n\r\n{{}}");
                if writer.write_all(msg.as_bytes()).is_err() {
                    return;
                }
            }
            Reply::Hang => {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                return;
            }
        }
    }
}

/// Rewrites `file` atomically with one record `{"id":"w","v":v}`.
pub fn rewrite_one_record(dir: &std::path::Path, file: &std::path::Path, v: usize) {
    let tmp = dir.join(".issues.tmp");
    std::fs::write(&tmp, format!("{{\"id\":\"w\",\"v\":{v}}}\n")).expect("write");
    std::fs::rename(&tmp, file).expect("rename");
}

/// Delays (write to request) of `writes` changes to the issues file while another file in the
/// directory is rewritten every `churn`; `None` for a change never notified within `give_up`
/// (then the rest are not tried). `program` is the bd-hook to run.
pub fn watch_delays_under_churn(
    program: &Path,
    writes: usize,
    churn: std::time::Duration,
    give_up: std::time::Duration,
) -> Vec<Option<std::time::Duration>> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let dir = tempfile::tempdir().expect("tmp");
    let beads = dir.path().join(".beads");
    std::fs::create_dir_all(&beads).expect("mkdir");
    let file = beads.join("issues.jsonl");
    rewrite_one_record(&beads, &file, 0);
    let mut child = hermetic(program)
        .arg("--watch")
        .arg(dir.path())
        .env("GEMBA_NOTIFY_URL", &server.url)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn watcher");
    std::thread::sleep(std::time::Duration::from_millis(400));
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let churner = {
        let (stop, wal) = (stop.clone(), beads.join("beads.db-wal"));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let _ = std::fs::write(&wal, i.to_le_bytes());
                std::thread::sleep(churn);
            }
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut delays = Vec::new();
    for i in 1..=writes {
        let start = std::time::Instant::now();
        rewrite_one_record(&beads, &file, i);
        let got = server.wait_for(i, give_up).len();
        delays.push((got >= i).then(|| start.elapsed()));
        if got < i {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = churner.join();
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    delays
}

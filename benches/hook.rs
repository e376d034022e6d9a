//! Notifier benchmark: `--from-diff` between two 100k-issue revisions (1% changed), notifying
//! 1,000 ids to a loopback server, and the watcher's delivery latency after an atomic rename
//! (p95 over 50 writes), alone and while another file in the directory is rewritten every
//! `--churn-ms` (10; a tracker's database and WAL live there).
//!
//! Also the cost of the installed hooks on `git commit` in a 10k-issue repository (no notify
//! server configured), against the same repository without them.
//!
//! `cargo bench --bench hook -- [--size 100k] [--writes 50] [--churn-ms 10] [--commit-size 10k] [--data target/bench-data] [--bd-hook
//! PATH]`
//! (`--bd-hook` measures the watcher of another build, e.g. an older one, under churn.)

mod common;
#[path = "../tests/integration/support.rs"]
mod support;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{arg, median_ms as median, median_of};
use support::{bin, hermetic, watch_delays_under_churn, CaptureServer, Reply, TestRepo};

/// A repository whose first commit holds `n` issues: `--data DIR`'s `<size>/base.jsonl` when it
/// exists (the other benchmarks' files), else gen.py's file for `seed`; returns it and the file.
fn repo_with_generated_issues(label: &str, seed: u32) -> (TestRepo, std::path::PathBuf) {
    let repo = TestRepo::new();
    let file = repo.path().join(".beads/issues.jsonl");
    let cached = std::path::PathBuf::from(arg("--data", "target/bench-data")).join(label).join("base.jsonl");
    if cached.exists() {
        std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir");
        std::fs::copy(&cached, &file).expect("copy the cached base");
    } else {
        common::gen_base(&file, common::issues_in(label), seed);
    }
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "base"]);
    (repo, file)
}

/// One HTTP/1.1 POST of `body` to `url` (`http://host:port/path`) on a connection of its own,
/// reading the reply to its end.
fn plain_post(url: &str, body: &str) {
    use std::io::Read;
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut conn = std::net::TcpStream::connect(host).expect("connect");
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(request.as_bytes()).expect("send");
    // The server keeps a connection open for the next request: closing our side ends its loop
    // after the reply, and then the connection.
    conn.shutdown(std::net::Shutdown::Write).expect("shutdown");
    let mut reply = Vec::new();
    let _ = conn.read_to_end(&mut reply);
}

fn main() {
    let size = arg("--size", "100k");
    let writes: usize = arg("--writes", "50").parse().expect("--writes is a number");

    // 1. --from-diff between two revisions.
    let (repo, base) = repo_with_generated_issues(&size, 3);
    let text = std::fs::read_to_string(&base).expect("read");
    let edited: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i % 100 == 0 { format!("{}\n", l.replacen("\"title\":\"", "\"title\":\"X ", 1)) } else { format!("{l}\n") })
        .collect();
    std::fs::write(&base, edited).expect("write");
    repo.git(&["commit", "-q", "-am", "1% changed"]);
    drop(text);
    // Beside each run, the baseline: git's own line diff of the same two revisions of the file.
    let (mut times, mut ratios, mut rss, mut git_times) = (Vec::new(), Vec::new(), 0, Vec::new());
    for _ in 0..5 {
        let m = common::measure(
            hermetic(bin("bd-hook"))
                .current_dir(repo.path())
                .args(["--dry-run", "--strict", "--from-diff", "HEAD~1"])
                .stdout(Stdio::null()),
        );
        assert_eq!(m.code, 0, "bd-hook --from-diff failed");
        let git =
            common::measure(hermetic("git").current_dir(repo.path()).args(["diff", "--no-color", "HEAD~1", "HEAD"]).stdout(Stdio::null()));
        assert_eq!(git.code, 0, "git diff failed");
        times.push(m.wall);
        git_times.push(git.wall);
        ratios.push(m.wall.as_secs_f64() / git.wall.as_secs_f64());
        rss = rss.max(m.rss_kib);
    }
    let out =
        hermetic(bin("bd-hook")).current_dir(repo.path()).args(["--dry-run", "--strict", "--from-diff", "HEAD~1"]).output().expect("run");
    let count = out.stdout.iter().filter(|&&b| b == b'\n').count();
    println!(
        "from-diff {size} (1% changed): {count} ids, median {:.0} ms, peak RSS {:.0} MB; git diff of the same revisions {:.0} ms; ratio \
            {:.2}x git diff",
        median(times),
        rss as f64 / 1024.0,
        median(git_times),
        median_of(ratios)
    );

    // 2. 1,000 ids to a loopback server.
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let ids: String = (0..1000).map(|i| format!("bd-{i}\n")).collect();
    let mut times = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let mut child = hermetic(bin("bd-hook"))
            .args(["--stdin", "--strict", "--timeout", "10"])
            .env("GEMBA_NOTIFY_URL", &server.url)
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn");
        child.stdin.take().expect("stdin").write_all(ids.as_bytes()).expect("write");
        assert!(child.wait().expect("wait").success());
        times.push(start.elapsed());
    }
    // The baseline: 1,000 requests of the same shape, one connection each, from this process.
    let mut baselines = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        for i in 0..1000 {
            plain_post(&server.url, &format!("{{\"id\":\"bd-{i}\"}}"));
        }
        baselines.push(start.elapsed());
    }
    assert_eq!(server.requests().len(), 10000);
    let one_post = median(baselines.clone()) / 1000.0;
    let ratio = median(times.clone()) / median(baselines.clone());
    println!(
        "notify 1000 ids to loopback: median {:.0} ms; 1000 plain POSTs from the bench {:.0} ms; ratio {ratio:.2}x",
        median(times),
        median(baselines)
    );

    // 3. Watcher latency after an atomic rename.
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("issues.jsonl");
    std::fs::write(&file, "{\"id\":\"w\",\"v\":0}\n").expect("write");
    let mut child = hermetic(bin("bd-hook")).arg("--watch").arg(dir.path()).env("GEMBA_NOTIFY_URL", &server.url).spawn().expect("spawn");
    std::thread::sleep(Duration::from_millis(500));
    let mut latencies = Vec::new();
    for i in 1..=writes {
        let tmp = dir.path().join(".tmp");
        std::fs::write(&tmp, format!("{{\"id\":\"w\",\"v\":{i}}}\n")).expect("write");
        let start = Instant::now();
        std::fs::rename(&tmp, &file).expect("rename");
        server.wait_for(i, Duration::from_secs(5));
        latencies.push(start.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    latencies.sort();
    let p95 = latencies[(latencies.len() * 95).div_ceil(100) - 1];
    println!(
        "watcher latency over {writes} atomic renames: median {:.0} ms, p95 {:.0} ms; ratio {:.1}x one plain POST ({one_post:.2} ms)",
        median(latencies.clone()),
        p95.as_secs_f64() * 1e3,
        median(latencies.clone()) / one_post
    );

    // 3b. The same while another file in the directory changes every --churn-ms.
    let churn: u64 = arg("--churn-ms", "10").parse().expect("--churn-ms is a number");
    let program = std::path::PathBuf::from(arg("--bd-hook", &bin("bd-hook").display().to_string()));
    let delays = watch_delays_under_churn(&program, writes, Duration::from_millis(churn), Duration::from_secs(5));
    let mut got: Vec<Duration> = delays.iter().flatten().copied().collect();
    got.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    if got.is_empty() {
        println!("watcher under churn ({churn} ms): no change notified within 5 s");
    } else {
        println!(
            "watcher under churn ({churn} ms), {} of {} changes notified within 5 s: p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms",
            got.len(),
            delays.len(),
            ms(got[got.len() / 2]),
            ms(got[(got.len() * 95).div_ceil(100) - 1]),
            ms(got[got.len() - 1])
        );
    }

    // 4. What the hooks add to a commit.
    let commit_size = arg("--commit-size", "10k");
    let mut medians = Vec::new();
    for installed in [false, true] {
        let (repo, file) = repo_with_generated_issues(&commit_size, 5);
        if installed {
            let out = hermetic(bin("bd-sync")).current_dir(repo.path()).args(["install", "--local"]).output().expect("install");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        let original = std::fs::read_to_string(&file).expect("read");
        let (mut unrelated, mut issue_edit) = (Vec::new(), Vec::new());
        for i in 0..11 {
            std::fs::write(repo.path().join("notes.txt"), format!("{i}\n")).expect("write");
            repo.git(&["add", "notes.txt"]);
            let start = Instant::now();
            repo.git(&["commit", "-q", "-m", "notes"]);
            unrelated.push(start.elapsed());
            // An issue edited by bd, then committed.
            let edited = original.replacen("\"title\":\"", &format!("\"title\":\"edit {i} "), 1);
            std::fs::write(&file, edited).expect("write");
            repo.git(&["add", ".beads/issues.jsonl"]);
            let start = Instant::now();
            repo.git(&["commit", "-q", "-m", "issue"]);
            issue_edit.push(start.elapsed());
        }
        medians.push((median(unrelated), median(issue_edit)));
    }
    println!(
        "git commit, {commit_size} issues, no notify server: without hooks {:.0} ms / {:.0} ms (unrelated file / issue edit), with hooks \
            {:.0} ms / {:.0} ms: +{:.0} ms / +{:.0} ms; ratio {:.2}x / {:.2}x",
        medians[0].0,
        medians[0].1,
        medians[1].0,
        medians[1].1,
        medians[1].0 - medians[0].0,
        medians[1].1 - medians[0].1,
        medians[1].0 / medians[0].0,
        medians[1].1 / medians[0].1
    );
}

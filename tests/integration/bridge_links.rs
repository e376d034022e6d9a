//! The commit-links index of the git–issue bridge (docs/agents.md) on real repositories: trailers and
//! mentions found, kept up to date by reading only what changed (new commits added, rebased-away
//! commits dropped), hostile messages bounded, and linear in the history's length.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use beads_git::bridge::links::{How, Index, MAX_IDS_PER_COMMIT};

use crate::support::{hermetic, TestRepo};

fn prefixes() -> BTreeSet<String> {
    ["bd".to_owned()].into_iter().collect()
}

fn commit(repo: &TestRepo, message: &str) -> String {
    let file = repo.path().join(".git/test-message");
    std::fs::write(&file, message).expect("write the message");
    repo.git(&["commit", "-q", "--allow-empty", "--cleanup=verbatim", "-F", file.to_str().expect("utf8")]);
    repo.git(&["rev-parse", "HEAD"]).trim().to_owned()
}

/// `n` empty commits on `branch` through `git fast-import`, every tenth naming `bd-<i>` by a
/// trailer and every other one mentioning `bd-hot`.
fn bulk(repo: &TestRepo, branch: &str, n: usize) {
    let mut stream = String::new();
    for i in 1..=n {
        let mut msg = format!("change {i}");
        if i % 10 == 0 {
            msg.push_str(&format!("\n\nBeads-Issue: bd-{i}"));
        }
        if i % 2 == 0 {
            msg.push_str("\n\nsee bd-hot");
        }
        msg.push('\n');
        stream.push_str(&format!(
            "commit refs/heads/{branch}\nmark :{i}\ncommitter T <t@example.com> {} +0000\ndata {}\n{msg}",
            1_700_000_000 + i,
            msg.len()
        ));
        if i > 1 {
            stream.push_str(&format!("from :{}\n", i - 1));
        }
        stream.push('\n');
    }
    let mut child =
        hermetic("git").current_dir(repo.path()).args(["fast-import", "--quiet"]).stdin(Stdio::piped()).spawn().expect("git fast-import");
    child.stdin.take().expect("stdin").write_all(stream.as_bytes()).expect("feed fast-import");
    assert!(child.wait().expect("fast-import").success());
}

#[test]
fn trailers_and_mentions_link_commits_newest_first_one_link_per_commit() {
    let repo = TestRepo::new();
    let first = commit(&repo, "Start bd-a1\n\nBeads-Issue: bd-a1");
    let second = commit(&repo, "Fix the parser (fixes bd-a1.)");
    commit(&repo, "Unrelated: pre-commit and bd-merge words, xx-1");
    let index = Index::of(repo.path()).expect("index").expect("a repository");
    let refresh = index.refresh(&prefixes()).expect("refresh");
    assert!(refresh.rebuilt && refresh.read == 3, "{refresh:?}");
    let links = index.links("bd-a1").expect("links");
    let got: Vec<(&str, How)> = links.iter().map(|l| (l.commit.as_str(), l.how)).collect();
    assert_eq!(got, [(second.as_str(), How::Mention), (first.as_str(), How::Trailer)]);
    assert_eq!(links[0].subject, "Fix the parser (fixes bd-a1.)");
    assert!(index.links("bd-nope").expect("links").is_empty());
}

#[test]
fn a_refresh_reads_only_new_commits_and_drops_rebased_ones() {
    let repo = TestRepo::new();
    commit(&repo, "base");
    repo.git(&["checkout", "-q", "-b", "topic"]);
    let old = commit(&repo, "work on bd-t1");
    let index = Index::of(repo.path()).expect("index").expect("a repository");
    index.refresh(&prefixes()).expect("refresh");
    assert_eq!(index.refresh(&prefixes()).expect("refresh").read, 0, "nothing moved: git is not asked for commits");

    repo.git(&["checkout", "-q", "main"]);
    commit(&repo, "upstream bd-u1");
    let r = index.refresh(&prefixes()).expect("refresh");
    assert_eq!((r.read, r.dropped, r.rebuilt), (1, 0, false), "only the new commit is read");

    repo.git(&["checkout", "-q", "topic"]);
    repo.git(&["rebase", "-q", "main"]);
    let new = repo.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let r = index.refresh(&prefixes()).expect("refresh");
    assert_eq!((r.read, r.dropped), (1, 1), "{r:?}");
    let links: Vec<String> = index.links("bd-t1").expect("links").into_iter().map(|l| l.commit).collect();
    assert_eq!(links, [new], "the rebased-away commit {old} is gone");
}

#[test]
fn hostile_messages_are_bounded_and_escaped() {
    let repo = TestRepo::new();
    let many: String = (0..5000).map(|i| format!("bd-{i} ")).collect();
    commit(&repo, &format!("\x1b]0;owned\x07 subject\tbd-z\n\n{many}"));
    let huge = format!("bd-big {}\n\nBeads-Issue: bd-big\nBeads-Issue: $(touch PWNED)\n", "x".repeat(1 << 20));
    commit(&repo, &huge);
    let index = Index::of(repo.path()).expect("index").expect("a repository");
    index.refresh(&prefixes()).expect("refresh");
    let text = std::fs::read_to_string(index.path()).expect("index file");
    assert!(!text.contains('\x1b') && !text.contains("PWNED"), "escaped, and only id-shaped trailers");
    assert!(text.lines().count() <= 3 + MAX_IDS_PER_COMMIT + 2, "a message naming 5,000 ids is cut to {MAX_IDS_PER_COMMIT}");
    assert!(text.len() < 64 * 1024, "a 1 MB message costs a line, not a megabyte: {}", text.len());
    let big = index.links("bd-big").expect("links");
    assert_eq!(big.len(), 1);
    assert_eq!(big[0].how, How::Trailer);
}

#[test]
fn a_linked_or_fifo_index_is_refused_not_followed() {
    let repo = TestRepo::new();
    commit(&repo, "bd-1");
    let index = Index::of(repo.path()).expect("index").expect("a repository");
    let elsewhere = tempfile::tempdir().expect("tmp");
    let victim = elsewhere.path().join("victim");
    std::fs::write(&victim, "keep me").expect("write");
    std::os::unix::fs::symlink(&victim, index.path()).expect("symlink");
    assert!(index.refresh(&prefixes()).is_err(), "a link in place of the index is refused");
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "keep me");
    std::fs::remove_file(index.path()).expect("rm");
    let fifo = std::ffi::CString::new(index.path().as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let start = Instant::now();
    assert!(index.refresh(&prefixes()).is_err(), "a FIFO in place of the index is refused");
    assert!(start.elapsed() < Duration::from_secs(5), "and never waited on");
}

#[test]
fn many_branches_pass_through_stdin_not_the_command_line() {
    let repo = TestRepo::new();
    bulk(&repo, "main", 20);
    let mut refs = String::new();
    let tip = repo.git(&["rev-parse", "main"]).trim().to_owned();
    for i in 0..3000 {
        refs.push_str(&format!("create refs/heads/b{i} {tip}~{}\n", i % 20));
    }
    let mut child =
        hermetic("git").current_dir(repo.path()).args(["update-ref", "--stdin"]).stdin(Stdio::piped()).spawn().expect("update-ref");
    child.stdin.take().expect("stdin").write_all(refs.as_bytes()).expect("feed");
    assert!(child.wait().expect("update-ref").success());
    let index = Index::of(repo.path()).expect("index").expect("a repository");
    assert_eq!(index.refresh(&prefixes()).expect("refresh").read, 20);
    assert_eq!(index.links("bd-hot").expect("links").len(), 10);
}

/// The index is built in one pass over the history and read in one pass over the file: 4x the
/// commits costs well under 8x the time (building, and answering one id).
#[test]
fn building_and_reading_the_index_is_linear_in_the_history() {
    let time = |n: usize| {
        let repo = TestRepo::new();
        bulk(&repo, "main", n);
        let index = Index::of(repo.path()).expect("index").expect("a repository");
        let start = Instant::now();
        let r = index.refresh(&prefixes()).expect("refresh");
        let built = start.elapsed();
        assert_eq!(r.read, n);
        let start = Instant::now();
        for _ in 0..5 {
            assert_eq!(index.links("bd-hot").expect("links").len(), n / 2);
        }
        (built, start.elapsed())
    };
    let (b1, r1) = time(5_000);
    let (b4, r4) = time(20_000);
    assert!(b4 < b1 * 8, "building: {b1:?} for 5k commits, {b4:?} for 20k");
    assert!(r4 < r1 * 8, "reading: {r1:?} for 5k commits, {r4:?} for 20k");
}

/// Two writers at once (two `bd-sync show` in parallel): each writes the index whole through a
/// rename, so a reader never sees half a file, and the last one's view is complete.
#[test]
fn concurrent_refreshes_leave_a_whole_index() {
    let repo = TestRepo::new();
    bulk(&repo, "main", 2_000);
    let path = repo.path().to_path_buf();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                let index = Index::of(&path).expect("index").expect("a repository");
                for _ in 0..5 {
                    index.refresh(&prefixes()).expect("refresh");
                    assert_eq!(index.links("bd-hot").expect("links").len(), 1_000, "a whole index at every read");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker");
    }
}

/// Our trailer reading against git's own (`git interpret-trailers --parse`) on messages built
/// from the pieces that decide it: subjects that look like trailers, indented examples, prose
/// beside trailers, git's own `Signed-off-by`, continuations, blank lines and a patch divider.
#[test]
fn trailers_are_read_as_git_interpret_trailers_parses_them() {
    let pieces = [
        "Beads-Issue: bd-1",
        "    Beads-Issue: bd-2",
        "Some prose here.",
        "Signed-off-by: A U Thor <a@example.com>",
        "Reviewed-by: someone",
        "  a continuation line",
        "",
        "Beads-Issue: bd-3",
        "Not A Token: bd-4",
        "beads-issue: bd-5",
        "(cherry picked from commit 0123456789abcdef0123456789abcdef01234567)",
        "---",
    ];
    let mut state: u64 = 0x1234_5678;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut checked = 0;
    for _ in 0..1000 {
        let n = 1 + (next() % 8) as usize;
        let mut message = String::from(if next() % 5 == 0 { "Beads-Issue: bd-9" } else { "Subject line" });
        for _ in 0..n {
            message.push('\n');
            message.push_str(pieces[(next() % pieces.len() as u64) as usize]);
        }
        message.push('\n');
        let file = dir.path().join("msg");
        std::fs::write(&file, &message).expect("write");
        let out = crate::support::run(crate::support::hermetic("git").args(["interpret-trailers", "--parse"]).arg(&file));
        let git: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(": "))
            .filter(|(k, _)| k.eq_ignore_ascii_case("Beads-Issue"))
            .map(|(_, v)| v.trim().to_owned())
            .filter(|v| beads_git::bridge::links::is_id(v))
            .collect();
        assert_eq!(beads_git::bridge::links::trailer_ids(&message), git, "message:\n{message}");
        checked += usize::from(!git.is_empty());
    }
    assert!(checked > 20, "enough messages with trailers ({checked})");
}

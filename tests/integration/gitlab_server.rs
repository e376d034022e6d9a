//! GitLab Self-Managed and Dedicated run a custom merge driver in their server-side merges when an
//! administrator registers it in Gitaly's git configuration. `bd-sync install --print-gitaly
//! BD_MERGE` prints that configuration (for `gitlab.rb` and `gitaly.toml`); these tests hold it to
//! what install registers in a clone, run the merge a Gitaly server runs (`git merge-tree
//! --write-tree` in a bare repository) with the printed values, and refuse a path the server
//! could not run. `check` notes a GitLab remote.

use crate::support::{bin, binaries_in, hermetic, issue, jsonl, run, TestRepo};

/// Configuration keys with their values.
type Pairs = Vec<(String, String)>;

/// The `key`/`value` pairs of the printed configuration, from the gitlab.rb lines and from the
/// gitaly.toml tables (each unescaped as Ruby and TOML read them).
fn printed_pairs(text: &str) -> (Pairs, Pairs) {
    let unquote = |s: &str| {
        let inner = s.trim().strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or_else(|| panic!("quoted: {s}"));
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            out.push(if c == '\\' { chars.next().expect("an escaped character") } else { c });
        }
        out
    };
    let mut ruby = Vec::new();
    for line in text.lines().filter(|l| l.trim_start().starts_with("{ key: ")) {
        let body = line.trim().trim_start_matches("{ key: ").trim_end_matches(" },");
        let (key, value) = body.split_once(", value: ").expect("key and value");
        ruby.push((unquote(key), unquote(value)));
    }
    let mut toml = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (n, line) in lines.iter().enumerate().filter(|(_, l)| **l == "[[git.config]]") {
        let key = lines[n + 1].strip_prefix("key = ").expect("key line");
        let value = lines[n + 2].strip_prefix("value = ").expect("value line");
        toml.push((unquote(key), unquote(value)));
        let _ = line;
    }
    (ruby, toml)
}

#[test]
fn print_gitaly_registers_what_install_registers_and_a_server_merge_runs_the_driver_with_it() {
    let outside = tempfile::tempdir().expect("tmp");
    // A path with a space, a quote, a backslash and `#{`: each form must carry it intact.
    let dir = outside.path().join(r#"opt/beads git/it's "here" \ #{x}"#);
    binaries_in(&dir);
    let program = dir.join("bd-merge");
    let out = run(hermetic(bin("bd-sync")).args(["install", "--print-gitaly"]).arg(&program));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let (ruby, toml) = printed_pairs(&printed);
    assert_eq!(ruby, toml, "the two forms register the same values:\n{printed}");
    assert_eq!(ruby.len(), 4, "{printed}");

    // The same values install registers in a clone, with the binaries at that path.
    let clone = TestRepo::new();
    clone.commit_file(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line()]), "issues");
    let out = run(hermetic(dir.join("bd-sync")).current_dir(clone.path()).args(["install", "--local"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (key, value) in &toml {
        assert_eq!(clone.git(&["config", key]).trim_end(), value, "{key}");
    }

    // Gitaly's merge: `git merge-tree --write-tree` in a bare repository, the drivers given as
    // git config, the attribute in the repository's info/attributes.
    let work = TestRepo::new();
    work.commit_file(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line(), issue("bd-2").line()]), "base");
    work.git(&["checkout", "-q", "-b", "ours"]);
    work.commit_file(".beads/issues.jsonl", &jsonl(&[issue("bd-1").title("Ours").line(), issue("bd-2").line()]), "ours");
    work.git(&["checkout", "-q", "-b", "theirs", "main"]);
    work.commit_file(".beads/issues.jsonl", &jsonl(&[issue("bd-1").priority(0).line(), issue("bd-2").line()]), "theirs");
    let bare = outside.path().join("server.git");
    work.git(&["clone", "-q", "--bare", work.path().to_str().expect("utf-8"), bare.to_str().expect("utf-8")]);
    std::fs::create_dir_all(bare.join("info")).expect("mkdir");
    std::fs::write(bare.join("info/attributes"), ".beads/issues.jsonl merge=beads\n").expect("write");
    let merge_tree = |with_driver: bool| {
        let mut git = hermetic("git");
        git.current_dir(&bare);
        if with_driver {
            for (key, value) in &toml {
                git.arg("-c").arg(format!("{key}={value}"));
            }
        }
        run(git.args(["merge-tree", "--write-tree", "ours", "theirs"]))
    };
    let without = merge_tree(false);
    assert_eq!(without.status.code(), Some(1), "without the driver the server's merge conflicts");
    let with = merge_tree(true);
    assert!(with.status.success(), "the server's merge with the printed driver: {}", String::from_utf8_lossy(&with.stdout));
    let tree = String::from_utf8_lossy(&with.stdout).lines().next().expect("a tree").to_owned();
    let out = run(hermetic("git").current_dir(&bare).args(["show", &format!("{tree}:.beads/issues.jsonl")]));
    let merged = String::from_utf8_lossy(&out.stdout);
    assert!(merged.contains(r#""title":"Ours""#) && merged.contains(r#""priority":0"#), "{merged}");
}

#[test]
fn print_gitaly_refuses_a_path_the_server_could_not_run_and_changes_nothing() {
    let repo = TestRepo::new();
    for bad in ["bd-merge", "./bin/bd-merge", "/opt/bd-merge\nevil", "/opt/\u{1b}[31mbd-merge", ""] {
        let out = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(["install", "--print-gitaly", bad]));
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(out.stdout.is_empty(), "{bad:?}: nothing printed on stdout");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("--print-gitaly") && !said.contains('\u{1b}'), "{bad:?}: {said}");
    }
    let out = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(["install", "--print-gitaly", "/x/bd-merge", "--local"]));
    assert_eq!(out.status.code(), Some(2), "--print-gitaly changes nothing, so install's options are refused beside it");
    let config = repo.git_output(&["config", "--get-regexp", "^merge\\."]);
    assert!(config.status.code() == Some(1) && config.stdout.is_empty(), "no driver registered");
}

#[test]
fn check_notes_each_gitlab_remote_and_says_what_runs_the_driver_there() {
    let repo = TestRepo::new();
    repo.commit_file(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line()]), "issues");
    crate::support::bd_sync_ok(repo.path(), &["install", "--local"]);
    for (name, url) in [
        ("origin", "git@gitlab.com:team/project.git"),
        ("server", "https://ci:token@gitlab.example.org:8443/team/project.git"),
        ("mirror", "ssh://git@github.com/team/project.git"),
        ("local", "/srv/git/project.git"),
    ] {
        repo.git(&["remote", "add", name, url]);
    }
    // A name `git remote add` refuses, set in the config file as a clone's could be.
    repo.git(&["config", "remote.bad\u{1b}[31mname.url", "https://GitLab.internal/x.git"]);
    let out = crate::support::bd_sync(repo.path(), &["--json", "check"]);
    assert_eq!(out.status.code(), Some(0), "notes never fail check: {}", String::from_utf8_lossy(&out.stdout));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let notes: Vec<String> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["kind"] == "gitlab-remote")
        .map(|f| f["message"].as_str().expect("message").to_owned())
        .collect();
    assert_eq!(notes.len(), 3, "{notes:#?}");
    assert!(notes.iter().any(|n| n.contains("origin is on GitLab.com") && n.contains("update-branch")), "{notes:#?}");
    assert!(notes.iter().any(|n| n.contains("gitlab.example.org") && n.contains("--print-gitaly") && !n.contains("token")), "{notes:#?}");
    assert!(notes.iter().all(|n| !n.contains('\u{1b}')), "control characters escaped: {notes:#?}");
}

//! The hook types a manager installs for us: a `.pre-commit-config.yaml` that already lists its
//! `default_install_hook_types` gets ours added to that list in place (flow or block style, only
//! the list changes), and uninstall gives back the config and the hooks directory byte for byte,
//! with the hook files pre-commit or lefthook created only for our jobs gone. A list install
//! cannot edit safely gets a snippet that names only what to add.
//!
//! Real pre-commit 4.7.0 and lefthook 2.2.2, found as in `managers.rs` (and required under CI).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::managers::{commit_is_notified_once, lefthook, pre_commit, Repo};

const CONFIG: &str = ".pre-commit-config.yaml";

/// Every entry of the hooks directory with its mode and bytes, in name order.
fn hooks_listing(repo: &Repo) -> Vec<(String, u32, Vec<u8>)> {
    let dir = repo.path().join(".git/hooks");
    let mut out: Vec<(String, u32, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("hooks dir")
        .map(|e| {
            let e = e.expect("entry");
            let meta = std::fs::symlink_metadata(e.path()).expect("metadata");
            (e.file_name().to_string_lossy().into_owned(), meta.permissions().mode(), std::fs::read(e.path()).unwrap_or_default())
        })
        .collect();
    out.sort();
    out
}

fn names(listing: &[(String, u32, Vec<u8>)]) -> Vec<&str> {
    listing.iter().map(|(n, _, _)| n.as_str()).filter(|n| !n.ends_with(".sample")).collect()
}

const REPOS: &str = "repos:\n-   repo: local\n    hooks:\n    -   id: lint\n        name: lint\n        entry: sh -c 'test ! -e \
    .fail-lint'\n        language: system\n        pass_filenames: false\n        always_run: true\n        stages: [pre-commit]\n";

/// `pre-commit install` with `config`, then ours: the config starts with `expected` (the user's
/// text with only the hook-type list changed), our jobs run, and uninstall restores the config
/// and the hooks directory byte for byte.
fn pre_commit_types_scenario(pre_commit: &Path, config: &str, expected: &str) {
    let repo = Repo::new(&[pre_commit.parent().expect("bin dir")]);
    repo.write(CONFIG, config);
    repo.ok(pre_commit, &["install"]);
    let hooks_before = hooks_listing(&repo);
    let install = repo.sync(&["install"]);
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    let now = String::from_utf8(repo.read(CONFIG).expect("config")).expect("utf8");
    assert!(now.starts_with(expected), "only the list changed:\n{}", crate::support::diff(expected.as_bytes(), now.as_bytes()));
    assert!(now[expected.len()..].starts_with("# >>> beads-git >>>\n"), "{now}");
    assert_eq!(now.matches("default_install_hook_types").count(), config.matches("default_install_hook_types").count().max(1), "{now}");
    let hooks = names(&hooks_listing(&repo)).join(" ");
    for t in ["pre-commit", "post-commit", "post-merge", "post-rewrite", "post-checkout"] {
        assert!(hooks.split(' ').any(|h| h == t), "pre-commit installed {t}: {hooks}");
    }
    let again = String::from_utf8_lossy(&repo.sync(&["install"]).stdout).into_owned();
    assert!(again.contains("nothing to change"), "{again}");
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "{text}");
    repo.ok("git", &["add", CONFIG, ".gitattributes"]);
    commit_is_notified_once(&repo, "bd-t1", "pre-commit with our hook types");

    // The config and attributes are committed: the whole team's uninstall.
    let out = repo.sync(&["uninstall", "--team"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(repo.read(CONFIG).expect("config"), config.as_bytes(), "the config is restored byte for byte");
    let hooks_after = hooks_listing(&repo);
    assert_eq!(names(&hooks_after), names(&hooks_before), "the hook types pre-commit installed only for us are gone");
    assert!(hooks_after == hooks_before, "the hooks directory is byte-identical to before install");
}

#[test]
fn regression_a_flow_list_of_hook_types_gets_ours_added_in_place() {
    let Some(p) = pre_commit() else { return };
    let config = format!("# team hooks\ndefault_install_hook_types: [pre-commit, pre-push]   # CI checks pushes\n{REPOS}");
    let expected = format!(
        "# team hooks\ndefault_install_hook_types: [pre-commit, pre-push, prepare-commit-msg, commit-msg, post-commit, post-merge, \
            post-rewrite, post-checkout]   # CI checks pushes\n{REPOS}"
    );
    pre_commit_types_scenario(&p, &config, &expected);
}

#[test]
fn regression_a_block_list_of_hook_types_gets_ours_added_in_place() {
    let Some(p) = pre_commit() else { return };
    let config = format!("default_install_hook_types:\n    - pre-push  # CI checks pushes\n    # and commits\n    - pre-commit\n{REPOS}");
    let expected = format!(
        "default_install_hook_types:\n    - pre-push  # CI checks pushes\n    # and commits\n    - pre-commit\n    - \
            prepare-commit-msg\n    - commit-msg\n    - post-commit\n    - post-merge\n    - post-rewrite\n    - post-checkout\n{REPOS}"
    );
    pre_commit_types_scenario(&p, &config, &expected);
}

#[test]
fn regression_uninstall_removes_the_hook_types_pre_commit_installed_only_for_us() {
    let Some(p) = pre_commit() else { return };
    let config = format!("# team hooks\n{REPOS}");
    pre_commit_types_scenario(&p, &config, &config);
}

#[test]
fn regression_uninstall_removes_the_stub_hooks_lefthook_created_only_for_us() {
    let Some(lefthook) = lefthook() else { return };
    let repo = Repo::new(&[lefthook.parent().expect("bin dir")]);
    let team = "# team config\npre-commit:\n  jobs:\n    - name: lint\n      run: 'true'\n";
    repo.write("lefthook.yml", team);
    repo.ok("git", &["add", "lefthook.yml"]);
    repo.ok("git", &["commit", "-q", "-m", "lefthook"]);
    repo.ok(&lefthook, &["install"]);
    let hooks_before = hooks_listing(&repo);
    let install = repo.sync(&["install"]);
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    assert!(names(&hooks_listing(&repo)).contains(&"post-merge"), "lefthook created post-merge for our job");
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "{text}");
    commit_is_notified_once(&repo, "bd-t2", "lefthook");
    let out = repo.sync(&["uninstall"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(repo.read("lefthook-local.yml").is_none());
    assert_eq!(repo.read("lefthook.yml").expect("team config"), team.as_bytes());
    let hooks_after = hooks_listing(&repo);
    assert_eq!(names(&hooks_after), names(&hooks_before), "the stubs lefthook created only for us are gone");
    assert!(hooks_after == hooks_before, "the hooks directory is byte-identical to before install");
}

#[test]
fn a_hook_type_list_install_cannot_edit_safely_gets_a_snippet_without_the_key() {
    for (what, types) in [
        ("an anchor", "default_install_hook_types: &types [pre-commit]\n"),
        ("a flow list over two lines", "default_install_hook_types: [pre-commit,\n    pre-push]\n"),
        ("quoted items", "default_install_hook_types: ['pre-commit', \"pre-push\"]\n"),
        ("a second document", "default_install_hook_types: [pre-commit]\n---\n"),
    ] {
        let repo = Repo::new(&[]);
        let config = format!("{types}{REPOS}");
        repo.write(CONFIG, &config);
        let out = repo.sync(&["install"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert_eq!(repo.read(CONFIG).expect("config"), config.as_bytes(), "{what}: not edited");
        assert!(err.contains("- repo: local") && err.contains("post-checkout"), "{what}: {err}");
        assert!(
            !err.lines().any(|l| l.trim_start().starts_with("default_install_hook_types:")),
            "{what}: the snippet repeats the key:\n{err}"
        );
    }
}

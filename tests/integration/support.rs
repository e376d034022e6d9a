//! Shared test helpers: hermetic git, temporary repositories and the paths of our binaries.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Path of one of the package's binaries, built by cargo for the tests.
pub fn bin(name: &str) -> PathBuf {
    match name {
        "bd-merge" => PathBuf::from(env!("CARGO_BIN_EXE_bd-merge")),
        "bd-sync" => PathBuf::from(env!("CARGO_BIN_EXE_bd-sync")),
        other => panic!("unknown binary {other}"),
    }
}

/// A command with every `GIT_*` variable cleared and a fixed identity and clock, so tests never
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
        .env_remove("BD_MERGE")
        .env_remove("BD_HOOKS")
        .stdin(Stdio::null());
    cmd
}

/// Runs a command and returns its output, failing the test with the command's stderr when it
/// could not start.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("could not run {cmd:?}: {e}"))
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
        let out = self.git_output(args);
        assert!(
            out.status.success(),
            "git {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
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

    /// Registers bd-merge as the `beads` driver with the placeholders of the spec.
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

/// Path of the shared data directory beside the repository, when present.
pub fn shared_file(rel: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("shared").join(rel);
    p.exists().then_some(p)
}

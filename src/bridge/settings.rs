//! What the bridge reads of git's configuration (`beads.bridge`, `beads.commitComments`,
//! `beads.commitLink`, the comment character, `user.name` and `user.email`) in one `git config` call, and who the actor
//! is. The commit hooks run on every commit, so one git process stands for five.

use std::path::Path;
use std::process::{Command, Stdio};

/// What the message hooks read of git's configuration, in one `git config` call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// `beads.bridge`.
    pub bridge: Option<String>,
    /// `core.commentChar` / `core.commentString` (its first character), `#` when unset.
    pub comment: char,
    /// `core.commentChar` is `auto`: git picks a character the message does not start a line
    /// with, and `comment` is only the default.
    pub comment_auto: bool,
    /// `user.name`.
    pub name: Option<String>,
    /// `user.email`.
    pub email: Option<String>,
    /// `beads.commitComments`.
    pub commit_comments: Option<String>,
    /// `beads.commitLink`: where a commit names its issue ([`CommitLink`]).
    pub commit_link: Option<String>,
}

/// Where a commit the bridge links names its issue (`git config beads.commitLink`): the
/// `Beads-Issue:` trailer (the default, read by `bd-sync`), ` (id)` at the end of the subject (what
/// br's and bd's `orphans` read: they look at subjects only), or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitLink {
    /// `Beads-Issue: <id>` (the default).
    Trailer,
    /// ` (<id>)` appended to a subject that does not name the issue yet.
    Subject,
    /// Both.
    Both,
}

impl CommitLink {
    /// The link `beads.commitLink` asks for: `trailer`, `subject` or `both` (any case); unset or
    /// anything else is `trailer` (`Err` carries the value not understood, for a warning).
    pub fn parse(value: Option<&str>) -> Result<CommitLink, String> {
        match value.map(|v| v.trim().to_ascii_lowercase()) {
            None => Ok(CommitLink::Trailer),
            Some(v) if v == "trailer" => Ok(CommitLink::Trailer),
            Some(v) if v == "subject" => Ok(CommitLink::Subject),
            Some(v) if v == "both" => Ok(CommitLink::Both),
            Some(_) => Err(value.unwrap_or_default().to_owned()),
        }
    }

    /// Whether the trailer is written.
    pub fn trailer(self) -> bool {
        matches!(self, CommitLink::Trailer | CommitLink::Both)
    }

    /// Whether the subject gets ` (id)`.
    pub fn subject(self) -> bool {
        matches!(self, CommitLink::Subject | CommitLink::Both)
    }
}

impl Settings {
    /// Reads them in the repository at `dir`; anything unreadable is unset. Read once per
    /// directory in a process (a command asks for the switch and the actor in turn, and git's
    /// configuration does not change under one command).
    pub fn read(dir: &Path) -> Settings {
        static LAST: std::sync::Mutex<Option<(std::path::PathBuf, Settings)>> = std::sync::Mutex::new(None);
        let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, settings)) = last.as_ref().filter(|(read_in, _)| read_in == dir) {
            return settings.clone();
        }
        let settings = Settings::read_now(dir);
        *last = Some((dir.to_path_buf(), settings.clone()));
        settings
    }

    /// [`Settings::read`], asking git every time.
    pub fn read_now(dir: &Path) -> Settings {
        const KEYS: [&str; 7] = [
            "beads.bridge",
            "beads.commitcomments",
            "beads.commitlink",
            "core.commentchar",
            "core.commentstring",
            "user.name",
            "user.email",
        ];
        // Read from git's files when they are plain enough to be certain (every commit runs
        // this: a process saved there is saved on every commit); else git is asked.
        if let Some(text) = crate::git::config_values(dir, &KEYS) {
            return Settings::parse(&text);
        }
        let out = Command::new("git")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .args([
                "config",
                "-z",
                "--get-regexp",
                r"^(beads\.bridge|beads\.commitcomments|beads\.commitlink|core\.commentchar|core\.commentstring|user\.name|user\.email)$",
            ])
            .output();
        let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        Settings::parse(&text)
    }

    /// Parses `git config -z --get-regexp` output (`key\nvalue\0`; the last value of a key wins).
    pub fn parse(text: &str) -> Settings {
        let mut s = Settings { comment: '#', ..Default::default() };
        for entry in text.split('\0').filter(|e| !e.is_empty()) {
            let (key, value) = entry.split_once('\n').unwrap_or((entry, ""));
            let value = Some(value.to_owned());
            match key {
                "beads.bridge" => s.bridge = value,
                "beads.commitcomments" => s.commit_comments = value,
                "beads.commitlink" => s.commit_link = value,
                "core.commentchar" | "core.commentstring" => {
                    s.comment_auto = value.as_deref() == Some("auto");
                    s.comment = value.as_deref().filter(|v| *v != "auto").and_then(|v| v.chars().next()).unwrap_or('#');
                }
                "user.name" => s.name = value,
                "user.email" => s.email = value,
                _ => {}
            }
        }
        s
    }

    /// Whether the clone asked for commit comments (`beads.commitComments`, a git boolean: a key
    /// without a value, `true`, `yes`, `on` or `1`).
    pub fn commit_comments_on(&self) -> bool {
        git_true(self.commit_comments.as_deref())
    }

    /// Whether the bridge is on for this process ([`super::enabled`]).
    pub fn bridge_on(&self) -> bool {
        super::enabled(std::env::var("BEADS_BRIDGE").ok().as_deref(), self.bridge.as_deref())
    }

    /// The actor: `BD_ACTOR`, `BEADS_ACTOR`, `user.name`, `user.email`, the first set.
    pub fn actor(&self) -> Option<String> {
        actor_from(&|k| std::env::var(k).ok(), self.name.as_deref(), self.email.as_deref())
    }
}

pub use crate::git::git_true;

/// [`actor`] from the environment `env` and git's `user.name` and `user.email`.
pub fn actor_from(env: &dyn Fn(&str) -> Option<String>, name: Option<&str>, email: Option<&str>) -> Option<String> {
    let set = |v: Option<String>| v.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    set(env("BD_ACTOR"))
        .or_else(|| set(env("BEADS_ACTOR")))
        .or_else(|| set(name.map(str::to_owned)))
        .or_else(|| set(email.map(str::to_owned)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_config_z_output_is_read_key_by_key_and_the_last_value_wins() {
        let s = Settings::parse(
            "user.name\nAl\nice\0user.email\na@x\0core.commentchar\n;\0beads.bridge\nfalse\0beads.bridge\ntrue\0core.commentstring\nauto\0",
        );
        assert_eq!(s.name.as_deref(), Some("Al\nice"));
        assert_eq!(s.email.as_deref(), Some("a@x"));
        assert_eq!(s.bridge.as_deref(), Some("true"));
        assert_eq!(s.comment, '#', "auto reads as #");
        assert!(s.comment_auto);
        assert!(Settings::parse("beads.commitcomments\0").commit_comments_on(), "a key without a value is true");
        assert!(Settings::parse("beads.commitcomments\nYes\0").commit_comments_on());
        assert!(!Settings::parse("beads.commitcomments\nfalse\0").commit_comments_on());
        assert!(!Settings::parse("").commit_comments_on());
        assert_eq!(Settings::parse("core.commentchar\n;\0").comment, ';');
        assert_eq!(Settings::parse("").comment, '#');
    }

    #[test]
    fn the_actor_is_the_first_one_set() {
        let env = |k: &str| (k == "BEADS_ACTOR").then(|| " beads ".to_owned());
        assert_eq!(actor_from(&env, Some("name"), Some("mail")).as_deref(), Some("beads"));
        assert_eq!(actor_from(&|_| None, Some(" "), Some("mail")).as_deref(), Some("mail"));
        assert_eq!(actor_from(&|_| None, None, None), None);
    }
}

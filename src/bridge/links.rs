//! Which commits belong to which issue (docs/agents.md), answered without walking the history on every
//! call.
//!
//! A commit is linked to an issue by a `Beads-Issue: <id>` trailer, or by naming the id anywhere
//! in its message (`fixes bd-a1b2`). Scanning a 100k-commit history for one issue costs seconds, so
//! the links live in an index file, `<git common dir>/beads/links`, beside the merge log. It
//! records the branch tips it was built from; when they move, only the difference is read:
//! commits reachable from the new tips and not the old ones are added, commits the old tips
//! reached and the new ones do not (a rebase, a deleted branch) are dropped. Both are one git
//! process each, proportional to what changed. The first call builds the whole index.
//!
//! Everything in a commit message is a stranger's text: ids are kept only when they consist of
//! id characters, at most [`MAX_IDS_PER_COMMIT`] per commit, and subjects are escaped and cut to
//! [`MAX_SUBJECT`] characters before they reach the file.

use std::collections::{BTreeSet, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// The trailer key that names the issue a commit is for.
pub const TRAILER_KEY: &str = "Beads-Issue";
/// At most this many ids are taken from one commit message (a hostile message naming a million
/// ids costs one line each in the index otherwise).
pub const MAX_IDS_PER_COMMIT: usize = 64;
/// Subjects are kept to this many characters (escaped).
pub const MAX_SUBJECT: usize = 200;
/// The index file is refused beyond this size.
const MAX_INDEX_BYTES: u64 = 1 << 30;
const HEADER: &str = "beads-links 1";

/// How a commit names its issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum How {
    /// A `Beads-Issue:` trailer.
    Trailer,
    /// The id appears in the message.
    Mention,
}

/// One commit linked to an issue.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Link {
    /// The full commit id.
    pub commit: String,
    /// The committer time, in seconds since the epoch.
    pub time: i64,
    /// How the commit names the issue.
    pub how: How,
    /// The commit's subject line, escaped for a terminal and cut to [`MAX_SUBJECT`] characters.
    pub subject: String,
}

/// What a refresh of the index did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refresh {
    /// Commits read from git (new since the last refresh).
    pub read: usize,
    /// Links dropped because their commits are no longer reachable from any branch or `HEAD`.
    pub dropped: usize,
    /// Whether the index was built from nothing (missing, unreadable, or another id prefix set).
    pub rebuilt: bool,
}

/// The links index of one repository.
#[derive(Debug, Clone)]
pub struct Index {
    file: PathBuf,
    work: PathBuf,
}

#[derive(Debug, Default)]
struct State {
    tips: Vec<String>,
    prefixes: Vec<String>,
    /// (commit, time, how, id, subject), oldest commits first.
    rows: Vec<Row>,
}

#[derive(Debug, Clone)]
struct Row {
    commit: String,
    time: i64,
    how: How,
    id: String,
    subject: String,
}

impl Index {
    /// The index of the repository containing `dir` (its directory is created when missing and
    /// refused when it is a link). `Ok(None)` outside a repository.
    pub fn of(dir: &Path) -> Result<Option<Index>> {
        let Ok(common) = crate::git::run(dir, &["rev-parse", "--path-format=absolute", "--git-common-dir"]) else {
            return Ok(None);
        };
        let beads = crate::safe_fs::managed_dir(Path::new(&common), &["beads"])?;
        Ok(Some(Index { file: beads.join("links"), work: dir.to_path_buf() }))
    }

    /// The index file's path.
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// Brings the index up to date with the branch tips and `HEAD`. `prefixes` are the id
    /// prefixes of the issues file (`bd` for `bd-a1b2`): a mention counts only when its prefix is
    /// one of them; another set rebuilds the index.
    pub fn refresh(&self, prefixes: &BTreeSet<String>) -> Result<Refresh> {
        let prefixes: Vec<String> = prefixes.iter().cloned().collect();
        let (mut state, rebuilt) = match self.load()? {
            Some(state) if state.prefixes == prefixes => (state, false),
            _ => (State { prefixes: prefixes.clone(), ..State::default() }, true),
        };
        let tips = self.tips()?;
        if !rebuilt && state.tips == tips {
            return Ok(Refresh::default());
        }
        let mut refresh = Refresh { rebuilt, ..Refresh::default() };
        if !state.tips.is_empty() {
            let gone: HashSet<String> = self.rev_list(&state.tips, &tips)?.into_iter().collect();
            let before = state.rows.len();
            state.rows.retain(|r| !gone.contains(&r.commit));
            refresh.dropped = before - state.rows.len();
        }
        let known: HashSet<&str> = prefixes.iter().map(String::as_str).collect();
        let mut added = Vec::new();
        refresh.read = self.read_commits(&tips, &state.tips, |commit, time, message| {
            added.extend(links_in(commit, time, message, &known));
        })?;
        // git lists newest first; the file keeps oldest first so appends stay in order.
        added.reverse();
        state.rows.extend(added);
        state.tips = tips;
        self.store(&state)?;
        Ok(refresh)
    }

    /// The commits linked to `id`, newest first (as of the last refresh).
    pub fn links(&self, id: &str) -> Result<Vec<Link>> {
        let Some(state) = self.load()? else { return Ok(Vec::new()) };
        let mut seen = HashSet::new();
        let mut out: Vec<Link> = Vec::new();
        for row in state.rows.iter().rev().filter(|r| r.id == id) {
            // A commit with both a trailer and a mention is one link, as a trailer.
            if seen.insert(row.commit.clone()) {
                out.push(Link { commit: row.commit.clone(), time: row.time, how: row.how, subject: row.subject.clone() });
            } else if row.how == How::Trailer {
                if let Some(l) = out.iter_mut().find(|l| l.commit == row.commit) {
                    l.how = How::Trailer;
                }
            }
        }
        out.sort_by_key(|l| std::cmp::Reverse(l.time));
        Ok(out)
    }

    fn git(&self) -> Command {
        let mut cmd = Command::new("git");
        cmd.current_dir(&self.work).stdin(Stdio::null());
        cmd
    }

    /// `HEAD` and every local branch's commit, sorted and unique, from one git process
    /// (`show-ref --head --heads`: it exits 1, listing nothing, in a repository without commits).
    fn tips(&self) -> Result<Vec<String>> {
        let out = self.git().args(["show-ref", "--head", "--heads"]).output().context("running git show-ref")?;
        let no_commits = out.status.code() == Some(1) && out.stdout.is_empty();
        if !(out.status.success() || no_commits) {
            bail!("git show-ref failed: {}", crate::record::printable(String::from_utf8_lossy(&out.stderr).trim(), 500));
        }
        let tips: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(sha, name)| is_hex(sha) && (*name == "HEAD" || name.starts_with("refs/heads/")))
            .map(|(sha, _)| sha.to_owned())
            .collect();
        Ok(tips.into_iter().collect())
    }

    /// git with `args`, given the commits reachable from `from` and not from `not` on stdin (so a
    /// repository with many branches never overflows a command line).
    fn walk(&self, args: &[&str], from: &[String], not: &[String]) -> Result<std::process::Child> {
        let mut child = self
            .git()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("running git {}", args.join(" ")))?;
        feed(&mut child, from, not)?;
        Ok(child)
    }

    /// Commits reachable from `from` and not from `not`.
    fn rev_list(&self, from: &[String], not: &[String]) -> Result<Vec<String>> {
        let child = self.walk(&["rev-list", "--ignore-missing", "--stdin"], from, not)?;
        let out = child.wait_with_output().context("running git rev-list")?;
        if !out.status.success() {
            bail!("git rev-list failed: {}", crate::record::printable(String::from_utf8_lossy(&out.stderr).trim(), 500));
        }
        Ok(String::from_utf8_lossy(&out.stdout).lines().filter(|l| is_hex(l)).map(str::to_owned).collect())
    }

    /// Streams the commits reachable from `from` and not from `not`, newest first, to `each`
    /// (commit, committer time, raw message); returns how many were read.
    fn read_commits(&self, from: &[String], not: &[String], mut each: impl FnMut(&str, i64, &[u8])) -> Result<usize> {
        if from.is_empty() {
            return Ok(0);
        }
        let args = ["-c", "log.showSignature=false", "log", "-z", "--ignore-missing", "--stdin", "--format=%H%x1f%ct%x1f%B"];
        let mut child = self.walk(&args, from, not)?;
        let stdout = child.stdout.take().context("git log's output")?;
        let mut reader = BufReader::new(stdout);
        let mut record = Vec::new();
        let mut count = 0;
        loop {
            record.clear();
            if reader.read_until(0, &mut record).context("reading git log")? == 0 {
                break;
            }
            if record.last() == Some(&0) {
                record.pop();
            }
            let mut parts = record.splitn(3, |b| *b == 0x1f);
            let (Some(commit), Some(time), Some(message)) = (parts.next(), parts.next(), parts.next()) else { continue };
            let commit = String::from_utf8_lossy(commit);
            let commit = commit.trim_start_matches('\n');
            if !is_hex(commit) {
                continue;
            }
            let time = std::str::from_utf8(time).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0);
            each(commit, time, message);
            count += 1;
        }
        let out = child.wait_with_output().context("running git log")?;
        if !out.status.success() {
            bail!("git log failed: {}", crate::record::printable(String::from_utf8_lossy(&out.stderr).trim(), 500));
        }
        Ok(count)
    }

    fn load(&self) -> Result<Option<State>> {
        let bytes = match crate::safe_fs::read_regular(&self.file, MAX_INDEX_BYTES) {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(None),
            Err(crate::safe_fs::FileError::TooLarge { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(parse(&String::from_utf8_lossy(&bytes)))
    }

    fn store(&self, state: &State) -> Result<()> {
        crate::safe_fs::refuse_non_regular(&self.file)?;
        crate::safe_fs::write_atomic_with(&self.file, crate::safe_fs::Durability::Scratch, |w| {
            writeln!(w, "{HEADER}")?;
            writeln!(w, "tips {}", state.tips.join(" "))?;
            writeln!(w, "prefixes {}", state.prefixes.join(" "))?;
            for r in &state.rows {
                let how = match r.how {
                    How::Trailer => "trailer",
                    How::Mention => "mention",
                };
                writeln!(w, "{}\t{}\t{}\t{}\t{}", r.commit, r.time, how, r.id, r.subject)?;
            }
            Ok(())
        })
    }
}

fn feed(child: &mut std::process::Child, from: &[String], not: &[String]) -> Result<()> {
    let mut stdin = child.stdin.take().context("git's input")?;
    let mut text = String::with_capacity((from.len() + not.len() + 1) * 42);
    for tip in from {
        text.push_str(tip);
        text.push('\n');
    }
    if !not.is_empty() {
        text.push_str("--not\n");
        for tip in not {
            text.push_str(tip);
            text.push('\n');
        }
    }
    stdin.write_all(text.as_bytes()).context("writing to git")?;
    Ok(())
}

/// A state read back, or `None` when the file is not an index of this version (it is rebuilt).
fn parse(text: &str) -> Option<State> {
    let mut lines = text.lines();
    if lines.next()? != HEADER {
        return None;
    }
    let tips: Vec<String> = lines.next()?.strip_prefix("tips")?.split_whitespace().map(str::to_owned).collect();
    let prefixes: Vec<String> = lines.next()?.strip_prefix("prefixes")?.split_whitespace().map(str::to_owned).collect();
    if !tips.iter().all(|t| is_hex(t)) {
        return None;
    }
    let mut rows = Vec::new();
    for line in lines {
        let mut f = line.splitn(5, '\t');
        let (Some(commit), Some(time), Some(how), Some(id), Some(subject)) = (f.next(), f.next(), f.next(), f.next(), f.next()) else {
            return None;
        };
        let how = match how {
            "trailer" => How::Trailer,
            "mention" => How::Mention,
            _ => return None,
        };
        if !is_hex(commit) || !is_id(id) {
            return None;
        }
        rows.push(Row { commit: commit.to_owned(), time: time.parse().ok()?, how, id: id.to_owned(), subject: subject.to_owned() });
    }
    Some(State { tips, prefixes, rows })
}

/// The links one commit message makes: its `Beads-Issue:` trailers, then every other id it
/// names whose prefix is known; at most [`MAX_IDS_PER_COMMIT`].
fn links_in(commit: &str, time: i64, message: &[u8], prefixes: &HashSet<&str>) -> Vec<Row> {
    let text = String::from_utf8_lossy(message);
    let subject = crate::record::printable(text.lines().next().unwrap_or("").trim(), MAX_SUBJECT).replace('\t', " ");
    let mut ids: Vec<(String, How)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for id in trailer_ids(&text) {
        if ids.len() < MAX_IDS_PER_COMMIT && seen.insert(id.clone()) {
            ids.push((id, How::Trailer));
        }
    }
    for id in mentioned_ids(&text, Some(prefixes)) {
        if ids.len() >= MAX_IDS_PER_COMMIT {
            break;
        }
        if seen.insert(id.clone()) {
            ids.push((id, How::Mention));
        }
    }
    ids.into_iter().map(|(id, how)| Row { commit: commit.to_owned(), time, how, id, subject: subject.clone() }).collect()
}

/// The ids named by `Beads-Issue:` trailers of a message, read as `git interpret-trailers
/// --parse` reads them ([`trailers`]): an indented example line in the body is not a trailer.
pub fn trailer_ids(message: &str) -> Vec<String> {
    trailers(message)
        .into_iter()
        .filter(|(key, _)| key.eq_ignore_ascii_case(TRAILER_KEY))
        .map(|(_, value)| value)
        .filter(|v| is_id(v))
        .collect()
}

/// The `(key, value)` trailers of a commit message as git's trailer parser finds them: only in
/// the message's last paragraph (never its first, the subject), before a `---` patch divider and
/// trailing blank lines; a paragraph is a trailer block when every line is a `Token: value` line
/// (a token of letters, digits and `-`) or a continuation (an indented line after one), or when at
/// least a quarter are and one is git's own (`Signed-off-by: `, `(cherry picked from commit `).
/// A continuation line is part of the value before it (joined with a space), as git joins it.
pub fn trailers(message: &str) -> Vec<(&str, String)> {
    let lines: Vec<&str> = message.lines().collect();
    // The patch divider ends the message (after the subject).
    let end = lines
        .iter()
        .skip(1)
        .position(|l| l.starts_with("---") && l[3..].chars().next().is_none_or(char::is_whitespace))
        .map_or(lines.len(), |p| p + 1);
    let mut end = end;
    while end > 0 && lines[end - 1].trim().is_empty() {
        end -= 1;
    }
    // The subject paragraph, then at least one blank line, is never trailers.
    let Some(first_blank) = lines[..end].iter().position(|l| l.trim().is_empty()) else { return Vec::new() };
    let start = lines[..end].iter().rposition(|l| l.trim().is_empty()).map_or(0, |p| p + 1).max(first_blank + 1);
    let block = &lines[start..end];
    fn token(line: &str) -> Option<(&str, &str)> {
        let (key, value) = line.split_once(':')?;
        let key = key.trim_end();
        (!key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')).then(|| (key, value.trim()))
    }
    let (mut trailers_n, mut others, mut git_made) = (0usize, 0usize, false);
    let mut after_trailer = false;
    for line in block {
        if line.starts_with([' ', '\t']) {
            if !after_trailer {
                others += 1;
            }
            continue;
        }
        if token(line).is_some() {
            trailers_n += 1;
            after_trailer = true;
            git_made |= line.starts_with("Signed-off-by: ") || line.starts_with("(cherry picked from commit ");
        } else {
            git_made |= line.starts_with("(cherry picked from commit ");
            others += 1;
            after_trailer = false;
        }
    }
    if trailers_n == 0 || !(others == 0 || (git_made && trailers_n * 3 >= others)) {
        return Vec::new();
    }
    let mut out: Vec<(&str, String)> = Vec::new();
    let mut last_is_trailer = false;
    for line in block {
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = out.last_mut().filter(|_| last_is_trailer) {
                value.push(' ');
                value.push_str(line.trim());
            }
            continue;
        }
        last_is_trailer = match token(line) {
            Some((key, value)) => {
                out.push((key, value.to_owned()));
                true
            }
            None => false,
        };
    }
    out
}

/// Every word of `message` shaped like an id with one of `prefixes` (`bd-a1b2`, `bd-a1b2.1`,
/// `hq-cv-5vczc`; any prefix when `None`), in order, each once; sentence punctuation around it is
/// not part of it.
pub fn mentioned_ids(message: &str, prefixes: Option<&HashSet<&str>>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for word in message.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))) {
        let word = word.trim_matches(|c: char| matches!(c, '.' | '-' | '_'));
        let Some((prefix, rest)) = word.split_once('-') else { continue };
        if rest.is_empty() || prefixes.is_some_and(|p| !p.contains(prefix)) || !is_id(word) {
            continue;
        }
        if seen.insert(word) {
            out.push(word.to_owned());
            if out.len() >= MAX_IDS_PER_COMMIT {
                break;
            }
        }
    }
    out
}

/// Whether `s` can be an issue id here: 1 to 128 characters of `[A-Za-z0-9._-]`, not starting
/// with `-` (so it is never read as an option, and never breaks a trailer or an index line).
pub fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && !s.starts_with('-')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

fn is_hex(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefixes(p: &[&'static str]) -> HashSet<&'static str> {
        p.iter().copied().collect()
    }

    #[test]
    fn mentions_are_words_with_a_known_prefix_without_punctuation() {
        let p = prefixes(&["bd", "hq"]);
        let got = mentioned_ids("fixes bd-a1b2. See (bd-a1b2.1), hq-cv-5vczc; not xx-1, bd-, pre-commit or bd-a1b2 again", Some(&p));
        assert_eq!(got, ["bd-a1b2", "bd-a1b2.1", "hq-cv-5vczc"]);
    }

    #[test]
    fn trailers_are_read_where_git_reads_them() {
        // An indented example in the body, a trailer-looking subject, a last paragraph of prose.
        assert!(trailer_ids("Beads-Issue: bd-1\n\nExample:\n    Beads-Issue: bd-2\n\nThanks\n").is_empty());
        assert!(trailer_ids("Beads-Issue: bd-1\n").is_empty(), "the subject is never a trailer");
        assert!(trailer_ids("Fix\n\nBeads-Issue: bd-1\nand some prose\n").is_empty(), "a mixed paragraph is not a block");
        // The last paragraph, blank lines after it, a continuation line, git's own trailer.
        assert_eq!(trailer_ids("Fix\n\nBody\n\nBeads-Issue: bd-3\nReviewed-by: x\n  continued\n\n\n"), ["bd-3"]);
        assert_eq!(trailer_ids("Fix\n\nSigned-off-by: a <a@b>\nsome note\nBeads-Issue: bd-4\n"), ["bd-4"]);
        assert_eq!(trailer_ids("Fix\n\nBeads-Issue: bd-5\n---\n diff --git a/x b/x\n"), ["bd-5"], "before a patch divider");
        assert!(trailer_ids("Fix\n\nNot A Token: bd-6\n").is_empty(), "a key with spaces is no token");
    }

    #[test]
    fn trailers_take_only_id_shaped_values() {
        let msg = "Subject\n\nBody\n\nBeads-Issue: bd-a1b2\nbeads-issue: bd-x\nBeads-Issue: $(touch x)\nBeads-Issue: -rf\n";
        assert_eq!(trailer_ids(msg), ["bd-a1b2", "bd-x"]);
    }

    #[test]
    fn a_message_naming_many_ids_gives_a_bounded_number_of_links() {
        let msg: String = (0..10_000).map(|i| format!("bd-{i} ")).collect();
        let rows = links_in(&"a".repeat(40), 0, msg.as_bytes(), &prefixes(&["bd"]));
        assert_eq!(rows.len(), MAX_IDS_PER_COMMIT);
    }

    #[test]
    fn subjects_are_escaped_and_cut() {
        let msg = format!("\x1b]0;owned\x07\t{}\n\nbd-1", "x".repeat(1000));
        let rows = links_in(&"a".repeat(40), 0, msg.as_bytes(), &prefixes(&["bd"]));
        assert!(!rows[0].subject.contains('\x1b') && !rows[0].subject.contains('\t'), "{:?}", rows[0].subject);
        assert!(rows[0].subject.chars().count() <= MAX_SUBJECT + 20);
    }

    #[test]
    fn a_damaged_index_reads_as_none_and_is_rebuilt() {
        assert!(parse("beads-links 1\ntips \nprefixes bd\n").is_some());
        assert!(parse("beads-links 1\ntips zz\nprefixes bd\n").is_none());
        assert!(parse("beads-links 2\n").is_none());
        assert!(parse(&format!("beads-links 1\ntips \nprefixes bd\n{}\t1\ttrailer\tbd 1\tx\n", "a".repeat(40))).is_none());
    }
}

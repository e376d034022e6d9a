//! Whether a commit message gets a `Beads-Issue:` trailer, and adding it (docs/agents.md, "How commits are linked").
//!
//! Two hook blocks call this. `prepare-commit-msg` adds the trailer when the message already has
//! its text (`-m`, `-F`, `--amend`, `-c`), so it shows in the editor. When the editor is still to
//! be filled (`git commit` alone, or a template), adding a line would defeat git's "empty
//! message aborts the commit" (a message holding only our trailer is not empty to git), so the
//! `commit-msg` block adds it after the editor closed, and only to a message with text. Both
//! skip merges, squashes, and commits replayed by a rebase, cherry-pick or revert; a message that
//! already names the issue or has the trailer is left alone, so an amend never adds it twice.
//! git itself (`git interpret-trailers`) places the trailer, so comment lines, a scissors line
//! and an existing trailer block are handled as git handles them.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use super::links::{is_id, trailer_ids, TRAILER_KEY};
use super::settings::{CommitLink, Settings};

/// Which hook is asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hook {
    /// `prepare-commit-msg`, with git's second argument (the message's source: `message`,
    /// `template`, `merge`, `squash`, `commit`, or nothing).
    Prepare {
        /// git's second argument, when given.
        source: Option<String>,
        /// git's third argument, with source `commit`: the commit whose message is reused
        /// (`-c`, `-C`, `--amend`).
        commit: Option<String>,
    },
    /// `commit-msg`, after the editor.
    CommitMsg,
}

/// What git is doing while the hook runs, read from the git directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InProgress {
    /// A merge is being concluded (`MERGE_HEAD`).
    pub merge: bool,
    /// A squash is being committed (`SQUASH_MSG`).
    pub squash: bool,
    /// A rebase, cherry-pick or revert replays commits (a clean revert or cherry-pick leaves
    /// only its `MERGE_MSG`).
    pub replay: bool,
}

impl InProgress {
    /// Reads the state files of `git_dir`. A commit git's cherry-pick makes sees
    /// `CHERRY_PICK_HEAD` (a rebase's picks too), a clean revert only its `MERGE_MSG`: so a
    /// `sequencer/` left by an abandoned cherry-pick (`reset --hard`) does not count, or every
    /// later commit would be taken for a replay.
    pub fn of(git_dir: &Path) -> InProgress {
        let has = |name: &str| git_dir.join(name).exists();
        // A rebase replays its picks; a commit made by an `exec` step, or while it stopped for
        // `edit` or `break`, is new work (the last step done says which).
        let rebase_replays = has("rebase-apply") || (has("rebase-merge") && !stopped_for_own_work(&git_dir.join("rebase-merge")));
        InProgress {
            merge: has("MERGE_HEAD"),
            squash: has("SQUASH_MSG"),
            replay: has("CHERRY_PICK_HEAD") || has("REVERT_HEAD") || rebase_replays || (has("MERGE_MSG") && !has("MERGE_HEAD")),
        }
    }
}

/// Whether the last step an interactive rebase did (`rebase-merge/done`) is one after which the
/// user commits their own work: `exec`, `edit`, `break`.
fn stopped_for_own_work(state: &Path) -> bool {
    let Ok(done) = std::fs::read_to_string(state.join("done")) else { return false };
    let last = done.lines().rev().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')).unwrap_or("");
    matches!(last.split_whitespace().next(), Some("exec" | "x" | "edit" | "e" | "break" | "b"))
}

/// Which issue the commit is for, as far as the tracker knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidates {
    /// `BEADS_ISSUE` named it.
    Named(String),
    /// The committer's issues in progress (none, one or several).
    InProgress(Vec<Claim>),
}

/// An issue in progress that may be the committer's: assigned to them, or moved (updated) in
/// this checkout since HEAD last moved, which only the committer's own edits do: a teammate's
/// arrive by a pull or checkout, which moves HEAD after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The issue's id.
    pub id: String,
    /// When it was last updated, if that is after HEAD last moved.
    pub moved: Option<crate::timestamp::Instant>,
}

impl Claim {
    /// An issue assigned to the committer, not updated since HEAD last moved.
    pub fn assigned(id: &str) -> Claim {
        Claim { id: id.to_owned(), moved: None }
    }
}

/// Asks the tracker for the committer's [`Claim`]s, given the actor and when HEAD last moved.
pub type ClaimsOf<'a> = dyn Fn(Option<&str>, Option<crate::timestamp::Instant>) -> Result<Vec<Claim>> + 'a;

/// The first day (`YYYY-MM-DD`, UTC) an issue updated after `head_moved` can carry in its
/// `updated_at` whatever its offset: the coarse bound for the cache's query.
pub fn claims_since(head_moved: Option<crate::timestamp::Instant>) -> Option<String> {
    let day_before = crate::timestamp::Instant { seconds: head_moved?.seconds.saturating_sub(86_400), nanos: 0 };
    crate::timestamp::write_like(day_before, "2000-01-01T00:00:00Z").and_then(|t| t.get(..10).map(str::to_owned))
}

/// The claims among the issues in progress (`(id, assignee, updated_at)`, in the order to offer
/// them): those assigned to `actor`, and those assigned to nobody that were updated after
/// `head_moved` (the committer moved them since their last commit or checkout). An issue
/// assigned to someone else is never the committer's.
pub fn claims(
    in_progress: Vec<(String, Option<String>, String)>,
    actor: Option<&str>,
    head_moved: Option<crate::timestamp::Instant>,
) -> Vec<Claim> {
    let mut out = Vec::new();
    for (id, assignee, updated) in in_progress {
        let moved = crate::timestamp::parse(&updated).filter(|at| head_moved.is_some_and(|head| *at > head));
        let assignee = assignee.as_deref().map(str::trim).filter(|a| !a.is_empty());
        let theirs = match assignee {
            Some(a) => actor == Some(a),
            None => moved.is_some(),
        };
        if theirs {
            out.push(Claim { id, moved });
        }
    }
    out
}

/// When HEAD last moved in the checkout whose git directory is `git_dir` (a commit, checkout,
/// pull, reset or rebase step): the last line of its reflog, `None` without one (a repository
/// with `core.logAllRefUpdates` off, or a line that does not parse).
pub fn head_moved_at(git_dir: &Path) -> Option<crate::timestamp::Instant> {
    use std::io::{Read, Seek, SeekFrom};
    // The reflog grows for the life of the clone: only its tail is read (a line is far shorter).
    const TAIL: u64 = 8 << 10;
    // Never waited on: a FIFO or a device there is no reflog.
    let mut file = crate::safe_fs::bounded::open_regular(&git_dir.join("logs").join("HEAD")).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
    let mut log = Vec::new();
    file.take(TAIL).read_to_end(&mut log).ok()?;
    let line = log.trim_ascii_end().rsplit(|&b| b == b'\n').next()?;
    let before_message = line.split(|&b| b == b'\t').next()?;
    // `OLD NEW Name <email> SECONDS ZONE`: the seconds follow the last `> `.
    let after_email = &before_message[memchr::memmem::rfind(before_message, b"> ")? + 2..];
    let seconds = std::str::from_utf8(after_email).ok()?.split_whitespace().next()?.parse().ok()?;
    Some(crate::timestamp::Instant { seconds, nanos: 0 })
}

/// Why no trailer was added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// A merge, squash or replayed commit, or one made to be squashed into another
    /// (`squash! `, `fixup! `, `amend! `: its trailer would stand twice after the autosquash).
    NotOwnWork,
    /// This hook leaves it to the other one (the editor is still to be filled).
    LaterHook,
    /// The message has no text: git will abort the commit.
    EmptyMessage,
    /// The message already has a `Beads-Issue:` trailer.
    HasTrailer,
    /// The message already names the issue.
    Named(String),
    /// The actor has no issue in progress.
    NoIssue,
    /// The actor has several issues in progress (sorted).
    Several(Vec<String>),
    /// `BEADS_ISSUE`, or the one issue in progress, is not an id that fits a trailer.
    BadId(String),
    /// `BEADS_ISSUE` names an id that is not in the issues file and whose prefix no issue has
    /// (a typo, or another project's).
    UnknownIssue(String),
    /// `commit-msg`, when `prepare-commit-msg` already decided (so nothing is said twice).
    DecidedBefore,
    /// The editor left the template as it was: git aborts the commit, and a trailer would stop
    /// it from seeing that.
    Unedited,
    /// The bridge is off (`beads.bridge`, `BEADS_BRIDGE`).
    Off,
}

impl Skip {
    /// Whether the committer should hear about it: the cases where a trailer was expected and
    /// not added (no issue, several, a bad `BEADS_ISSUE`). Said once per commit.
    pub fn worth_saying(&self) -> bool {
        matches!(self, Skip::NoIssue | Skip::Several(_) | Skip::BadId(_) | Skip::UnknownIssue(_))
    }
}

/// What to do with the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Add `Beads-Issue: <id>`.
    Add(String),
    /// Add `Beads-Issue: <id>`, the issue the committer moved last of several in progress for
    /// them (`over`, sorted): said in one line, since it was a choice.
    Chose {
        /// The issue chosen.
        id: String,
        /// The other candidates.
        over: Vec<String>,
    },
    /// Leave the message as it is.
    Skip(Skip),
}

impl Decision {
    /// The issue the message gets, if any.
    pub fn added(&self) -> Option<&str> {
        match self {
            Decision::Add(id) | Decision::Chose { id, .. } => Some(id),
            Decision::Skip(_) => None,
        }
    }
}

/// Decides whether `message` (as the hook reads it; comment lines start with `comment`, `None`
/// when git keeps them: no editor, so no cleanup of comments) gets a trailer.
pub fn decide(hook: &Hook, state: InProgress, message: &str, comment: Option<char>, candidates: &Candidates) -> Decision {
    match precheck(hook, state, message, comment) {
        Ok(text) => choose(&text, candidates),
        Err(skip) => Decision::Skip(skip),
    }
}

/// What can be decided without knowing the issue: the message's text when a trailer may go in,
/// else why not.
pub fn precheck(hook: &Hook, state: InProgress, message: &str, comment: Option<char>) -> Result<String, Skip> {
    if state.merge || state.squash || state.replay {
        return Err(Skip::NotOwnWork);
    }
    if let Hook::Prepare { source, .. } = hook {
        // Only `message` (-m, -F) and `commit` (-c, -C, --amend) say the text is there now;
        // anything else (none, `template`, a hook manager's unfilled `{2}`) waits for the editor.
        match source.as_deref() {
            Some("merge" | "squash") => return Err(Skip::NotOwnWork),
            Some("message" | "commit") => {}
            _ => return Err(Skip::LaterHook),
        }
    }
    let text = visible_text(message, comment);
    if text.trim().is_empty() {
        return Err(Skip::EmptyMessage);
    }
    let subject = text.trim_start();
    if ["squash! ", "fixup! ", "amend! "].iter().any(|p| subject.starts_with(p)) {
        return Err(Skip::NotOwnWork);
    }
    if !trailer_ids(&text).is_empty() {
        return Err(Skip::HasTrailer);
    }
    Ok(text)
}

/// The issue a message with `text` gets, from the `candidates`.
pub fn choose(text: &str, candidates: &Candidates) -> Decision {
    let id = match candidates {
        Candidates::Named(id) if !is_id(id) => return Decision::Skip(Skip::BadId(crate::record::printable(id, 80))),
        Candidates::Named(id) => id.clone(),
        Candidates::InProgress(claims) => match claims.as_slice() {
            [] => return Decision::Skip(Skip::NoIssue),
            [one] if !is_id(&one.id) => return Decision::Skip(Skip::BadId(crate::record::printable(&one.id, 80))),
            [one] => one.id.clone(),
            several => return choose_of_several(text, several),
        },
    };
    if names(text, &id) {
        return Decision::Skip(Skip::Named(id));
    }
    Decision::Add(id)
}

/// Of several issues in progress for the committer, the one they moved last since HEAD last
/// moved; when none was moved since (or two at the same instant), none: the committer names it.
fn choose_of_several(text: &str, several: &[Claim]) -> Decision {
    let mut ids: Vec<String> = several.iter().map(|c| c.id.clone()).collect();
    ids.sort();
    let latest = several.iter().filter_map(|c| c.moved).max();
    let mut moved_last = several.iter().filter(|c| latest.is_some() && c.moved == latest);
    let (Some(last), None) = (moved_last.next(), moved_last.next()) else {
        return Decision::Skip(Skip::Several(ids));
    };
    if !is_id(&last.id) {
        return Decision::Skip(Skip::BadId(crate::record::printable(&last.id, 80)));
    }
    if names(text, &last.id) {
        return Decision::Skip(Skip::Named(last.id.clone()));
    }
    ids.retain(|id| *id != last.id);
    Decision::Chose { id: last.id.clone(), over: ids }
}

/// The file beside git's message file that says `prepare-commit-msg` left the decision to
/// `commit-msg` (the editor was still to be filled).
const PENDING: &str = "BEADS_LINK_PENDING";

/// At most this many bytes of a message are read (a larger one is left alone).
pub const MAX_MESSAGE: u64 = 16 << 20;

/// Runs the message hook `hook` on git's message file `message_file` in the repository at `dir`:
/// decides, asks `candidates` (given the actor, and when HEAD last moved) for the issues in
/// progress only when the message could take a trailer, and adds it. `BEADS_ISSUE` in the environment names the issue, when
/// `known` says the id or its prefix is in the issues file (else the commit gets none, and why).
pub fn link_message(
    dir: &Path,
    hook: &Hook,
    message_file: &Path,
    candidates: &ClaimsOf<'_>,
    known: &dyn Fn(&str) -> Result<bool>,
) -> Result<Decision> {
    let message_file = dir.join(message_file);
    // git's per-worktree directory holds both the message file and the state files.
    let git_dir = message_file.parent().context("the message file has no directory")?;
    let pending = git_dir.join(PENDING);
    // What prepare-commit-msg saw when it left the decision: the comment character it read the
    // message with (none: git keeps comment lines) and the text.
    // Taken in every run: one left by a commit that never reached commit-msg is stale.
    let left = read_pending(&pending)?.filter(|_| *hook == Hook::CommitMsg);
    if *hook == Hook::CommitMsg && left.is_none() {
        return Ok(Decision::Skip(Skip::DecidedBefore));
    }
    // A merge, a squash or a replayed commit (each commit of a rebase runs this hook) is decided
    // by a few stats of the git directory, before git config is read.
    let state = InProgress::of(git_dir);
    if state.merge || state.squash || state.replay {
        return Ok(Decision::Skip(Skip::NotOwnWork));
    }
    let settings = Settings::read(dir);
    if !settings.bridge_on() {
        return Ok(Decision::Skip(Skip::Off));
    }
    let meta = std::fs::metadata(&message_file).with_context(|| format!("reading {}", message_file.display()))?;
    if !meta.is_file() || meta.len() > MAX_MESSAGE {
        bail!("{} is not a message file of at most {MAX_MESSAGE} bytes", message_file.display());
    }
    let message = String::from_utf8_lossy(&std::fs::read(&message_file)?).into_owned();
    let comment = match (&left, hook) {
        (Some((comment, _)), _) => *comment,
        // git sets GIT_EDITOR to `:` when no editor will run: then it keeps `#` lines.
        (None, _) if std::env::var("GIT_EDITOR").is_ok_and(|e| e == ":") => None,
        (None, _) if settings.comment_auto => Some(auto_comment_char(&message).unwrap_or(settings.comment)),
        (None, _) => Some(settings.comment),
    };
    let text = match precheck(hook, state, &message, comment) {
        Ok(text) => text,
        Err(Skip::LaterHook) => {
            let text = visible_text(&message, comment);
            let saved = format!("{}\n{text}", comment.map(String::from).unwrap_or_default());
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&pending)
                .with_context(|| format!("creating {}", pending.display()))?;
            std::io::Write::write_all(&mut file, saved.as_bytes()).with_context(|| format!("writing {}", pending.display()))?;
            return Ok(Decision::Skip(Skip::LaterHook));
        }
        Err(skip) => return Ok(Decision::Skip(skip)),
    };
    if let Some((_, before)) = &left {
        if !before.trim().is_empty() && before.trim() == text.trim() {
            return Ok(Decision::Skip(Skip::Unedited));
        }
    }
    if let Hook::Prepare { source: Some(source), commit: Some(commit) } = hook {
        if source == "commit" && is_merge(dir, commit) {
            return Ok(Decision::Skip(Skip::NotOwnWork));
        }
    }
    let named = std::env::var("BEADS_ISSUE").ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    if let Some(id) = named.as_deref().filter(|id| is_id(id)) {
        if !known(id)? {
            return Ok(Decision::Skip(Skip::UnknownIssue(id.to_owned())));
        }
    }
    let found = match named {
        Some(id) => Candidates::Named(id),
        None => Candidates::InProgress(candidates(settings.actor().as_deref(), head_moved_at(git_dir))?),
    };
    let decision = choose(&text, &found);
    if let Some(id) = decision.added() {
        // A value not understood falls back to the trailer.
        let link = CommitLink::parse(settings.commit_link.as_deref()).unwrap_or(CommitLink::Trailer);
        if link.subject() {
            add_to_subject(&message_file, id, comment)?;
        }
        if link.trailer() {
            add_trailer(dir, &message_file, id)?;
        }
    }
    Ok(decision)
}

/// Appends ` (<id>)` to the message's subject (its first line that is not blank and not a comment
/// line) unless the subject already names the issue; the file is rewritten in place, every other
/// byte kept.
pub fn add_to_subject(message_file: &Path, id: &str, comment: Option<char>) -> Result<()> {
    if !is_id(id) {
        bail!("{} is not an issue id", crate::record::printable(id, 80));
    }
    let message = std::fs::read(message_file).with_context(|| format!("reading {}", message_file.display()))?;
    let Some(with_link) = with_subject_link(&String::from_utf8_lossy(&message), id, comment) else { return Ok(()) };
    if String::from_utf8_lossy(&message).as_bytes() != message.as_slice() {
        // Not UTF-8: left alone rather than rewritten lossily.
        return Ok(());
    }
    std::fs::write(message_file, with_link).with_context(|| format!("writing {}", message_file.display()))
}

/// `message` with ` (<id>)` at the end of its subject; `None` when it has no subject or the
/// subject names the issue already.
pub fn with_subject_link(message: &str, id: &str, comment: Option<char>) -> Option<String> {
    let mut at = 0;
    for line in message.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if body.trim().is_empty() || comment.is_some_and(|c| body.starts_with(c)) {
            at += line.len();
            continue;
        }
        if names(body, id) {
            return None;
        }
        let end = at + body.trim_end().len();
        return Some(format!("{} ({id}){}", &message[..end], &message[end..]));
    }
    None
}

/// Takes the marker prepare-commit-msg left (removing it): the comment character and the text
/// it saw. `None` when there is none.
fn read_pending(pending: &Path) -> Result<Option<(Option<char>, String)>> {
    let Ok(meta) = std::fs::symlink_metadata(pending) else { return Ok(None) };
    let saved = if meta.is_file() && meta.len() <= MAX_MESSAGE { std::fs::read(pending).unwrap_or_default() } else { Vec::new() };
    std::fs::remove_file(pending).with_context(|| format!("removing {}", pending.display()))?;
    let saved = String::from_utf8_lossy(&saved).into_owned();
    let (comment, text) = saved.split_once('\n').unwrap_or(("#", ""));
    Ok(Some((comment.chars().next(), text.to_owned())))
}

/// Under `core.commentChar=auto`, the character git chose: the one its help text (the message's
/// last line) starts with, among those git picks from.
fn auto_comment_char(message: &str) -> Option<char> {
    let last = message.lines().rev().find(|l| !l.trim().is_empty())?;
    last.chars().next().filter(|c| "#;@!$%^&|:".contains(*c))
}

/// Whether `commit` (a hash, or `HEAD`) is a merge: the message of an amended merge is the
/// merge's.
fn is_merge(dir: &Path, commit: &str) -> bool {
    // git names the commit by its hash (`-c`, `-C`) or as `HEAD` (`--amend`).
    let hex = commit.len() >= 7 && commit.len() <= 64 && commit.bytes().all(|b| b.is_ascii_hexdigit());
    if !(hex || commit == "HEAD") {
        return false;
    }
    crate::git::run(dir, &["rev-list", "--parents", "-n", "1", commit, "--"]).is_ok_and(|line| line.split_whitespace().count() > 2)
}

/// What git keeps of `message`: all of it when it keeps comment lines (`comment` `None`), else
/// [`text_of`].
fn visible_text(message: &str, comment: Option<char>) -> String {
    comment.map_or_else(|| message.to_owned(), |c| text_of(message, c))
}

/// The message without comment lines and without everything below a scissors line (what git
/// keeps of it with the default cleanup).
pub fn text_of(message: &str, comment: char) -> String {
    let mut out = String::with_capacity(message.len());
    for line in message.lines() {
        if line.starts_with(comment) {
            if line.contains(">8") && line.contains("------------------------") {
                break;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Whether `text` names `id` as a word (`fixes bd-a1` names `bd-a1`, not `bd-a1b2` or `bd-a1.1`).
pub fn names(text: &str, id: &str) -> bool {
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_');
    let mut from = 0;
    while let Some(at) = text[from..].find(id) {
        let start = from + at;
        let end = start + id.len();
        let before_ok = start == 0 || !word(bytes[start - 1]);
        // A following `.` ends a sentence unless a child id continues (`bd-a1.2`).
        let after_ok =
            end == bytes.len() || !(word(bytes[end]) || (bytes[end] == b'.' && bytes.get(end + 1).is_some_and(u8::is_ascii_alphanumeric)));
        if before_ok && after_ok {
            return true;
        }
        from = start + 1;
        while !text.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

/// Adds `Beads-Issue: <id>` to the message file through `git interpret-trailers` (run in `dir`,
/// so git's comment character and trailer settings apply); a trailer with that key already
/// there is kept and nothing is added.
pub fn add_trailer(dir: &Path, message_file: &Path, id: &str) -> Result<()> {
    if !is_id(id) {
        bail!("{} is not an issue id", crate::record::printable(id, 80));
    }
    let out = Command::new("git")
        .current_dir(dir)
        .stdin(Stdio::null())
        .args(["interpret-trailers", "--in-place", "--no-divider", "--if-exists", "doNothing", "--trailer"])
        .arg(format!("{TRAILER_KEY}: {id}"))
        .arg(crate::git::not_an_option(message_file).as_ref())
        .output()
        .context("running git interpret-trailers")?;
    if !out.status.success() {
        bail!("git interpret-trailers failed: {}", crate::record::printable(String::from_utf8_lossy(&out.stderr).trim(), 500));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_moved_at_reads_the_reflogs_last_line() {
        let dir = tempfile::tempdir().expect("tmp");
        assert_eq!(head_moved_at(dir.path()), None, "no reflog");
        std::fs::create_dir_all(dir.path().join("logs")).expect("mkdir");
        let z = "0".repeat(40);
        let log = format!("{z} {z} A <a@x> 100 +0000\tcommit (initial): x\n{z} {z} B <b> c> <d@y> 1700000000 -0800\tcommit: a > b 5\n");
        std::fs::write(dir.path().join("logs/HEAD"), log).expect("write");
        assert_eq!(head_moved_at(dir.path()).map(|i| i.seconds), Some(1_700_000_000));
        std::fs::write(dir.path().join("logs/HEAD"), "garbage\n").expect("write");
        assert_eq!(head_moved_at(dir.path()), None);
        // A FIFO in its place is no reflog, and is not waited on.
        std::fs::remove_file(dir.path().join("logs/HEAD")).expect("remove");
        let fifo = std::ffi::CString::new(dir.path().join("logs/HEAD").as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: mkfifo(3) with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert_eq!(head_moved_at(dir.path()), None);
    }

    #[test]
    fn the_issue_moved_last_is_chosen_of_several_and_a_tie_or_none_moved_asks() {
        let at = |s: i64| Some(crate::timestamp::Instant { seconds: s, nanos: 0 });
        let head = at(1_000);
        let row = |id: &str, who: Option<&str>, updated: &str| (id.to_owned(), who.map(str::to_owned), updated.to_owned());
        let rows = vec![
            row("bd-1", Some("al"), "1970-01-01T00:00:10Z"),
            row("bd-2", None, "1970-01-01T00:20:00Z"),
            row("bd-3", Some("bo"), "1970-01-01T00:30:00Z"),
            row("bd-4", Some(" "), "1970-01-01T00:00:10Z"),
            row("bd-5", None, "not a time"),
        ];
        let claims = claims(rows.clone(), Some("al"), head);
        assert_eq!(claims.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["bd-1", "bd-2"], "bo's and stale ones are not al's");
        let decision = choose("x", &Candidates::InProgress(claims));
        assert_eq!(decision, Decision::Chose { id: "bd-2".into(), over: vec!["bd-1".into()] });
        // No reflog: only the assigned ones.
        assert_eq!(super::claims(rows, Some("al"), None), vec![Claim::assigned("bd-1")]);
        let tie = vec![Claim { id: "bd-a".into(), moved: at(5) }, Claim { id: "bd-b".into(), moved: at(5) }];
        assert_eq!(choose("x", &Candidates::InProgress(tie)), Decision::Skip(Skip::Several(vec!["bd-a".into(), "bd-b".into()])));
        assert_eq!(claims_since(at(86_400 * 2)).as_deref(), Some("1970-01-02"));
    }

    fn one(id: &str) -> Candidates {
        Candidates::InProgress(vec![Claim::assigned(id)])
    }

    fn message() -> Hook {
        Hook::Prepare { source: Some("message".into()), commit: None }
    }

    #[test]
    fn a_message_with_text_gets_the_actors_one_issue() {
        assert_eq!(decide(&message(), InProgress::default(), "Fix it\n", Some('#'), &one("bd-a1")), Decision::Add("bd-a1".into()));
        assert_eq!(
            decide(&Hook::CommitMsg, InProgress::default(), "Fix it\n# comment\n", Some('#'), &one("bd-a1")),
            Decision::Add("bd-a1".into())
        );
    }

    #[test]
    fn merges_squashes_and_replays_are_left_alone() {
        for state in [
            InProgress { merge: true, ..Default::default() },
            InProgress { squash: true, ..Default::default() },
            InProgress { replay: true, ..Default::default() },
        ] {
            assert_eq!(decide(&Hook::CommitMsg, state, "x\n", Some('#'), &one("bd-a1")), Decision::Skip(Skip::NotOwnWork));
        }
        for source in ["merge", "squash"] {
            let hook = Hook::Prepare { source: Some(source.into()), commit: None };
            assert_eq!(decide(&hook, InProgress::default(), "x\n", Some('#'), &one("bd-a1")), Decision::Skip(Skip::NotOwnWork));
        }
    }

    #[test]
    fn the_editor_case_waits_for_commit_msg_and_an_empty_message_stays_empty() {
        for source in [None, Some("template".to_owned()), Some("{2}".to_owned())] {
            assert_eq!(
                decide(&Hook::Prepare { source, commit: None }, InProgress::default(), "# Please enter\n", Some('#'), &one("bd-a1")),
                Decision::Skip(Skip::LaterHook)
            );
        }
        assert_eq!(
            decide(&Hook::CommitMsg, InProgress::default(), "\n# Please enter\n\n", Some('#'), &one("bd-a1")),
            Decision::Skip(Skip::EmptyMessage)
        );
        assert_eq!(
            decide(&Hook::CommitMsg, InProgress::default(), "; only\n", Some(';'), &one("bd-a1")),
            Decision::Skip(Skip::EmptyMessage)
        );
    }

    #[test]
    fn never_twice_never_beside_the_id_and_never_a_guess() {
        let amend = Hook::Prepare { source: Some("commit".into()), commit: None };
        assert_eq!(
            decide(&amend, InProgress::default(), "x\n\nBeads-Issue: bd-zz\n", Some('#'), &one("bd-a1")),
            Decision::Skip(Skip::HasTrailer)
        );
        assert_eq!(
            decide(&message(), InProgress::default(), "fixes bd-a1.\n", Some('#'), &one("bd-a1")),
            Decision::Skip(Skip::Named("bd-a1".into()))
        );
        assert_eq!(decide(&message(), InProgress::default(), "about bd-a1b2\n", Some('#'), &one("bd-a1")), Decision::Add("bd-a1".into()));
        assert_eq!(
            decide(&message(), InProgress::default(), "x\n", Some('#'), &Candidates::InProgress(vec![])),
            Decision::Skip(Skip::NoIssue)
        );
        assert_eq!(
            decide(
                &message(),
                InProgress::default(),
                "x\n",
                Some('#'),
                &Candidates::InProgress(vec![Claim::assigned("bd-b"), Claim::assigned("bd-a")])
            ),
            Decision::Skip(Skip::Several(vec!["bd-a".into(), "bd-b".into()]))
        );
        assert!(matches!(
            decide(&message(), InProgress::default(), "x\n", Some('#'), &Candidates::Named("bd-1\nEvil: yes".into())),
            Decision::Skip(Skip::BadId(_))
        ));
    }

    #[test]
    fn without_an_editor_comment_lines_are_text_and_squash_commits_are_left_alone() {
        assert_eq!(decide(&message(), InProgress::default(), "#123: fix parser\n", None, &one("bd-a1")), Decision::Add("bd-a1".into()));
        assert_eq!(
            decide(&message(), InProgress::default(), "#123: fix parser\n", Some('#'), &one("bd-a1")),
            Decision::Skip(Skip::EmptyMessage)
        );
        for subject in ["squash! x\n", "fixup! x\n", "amend! x\n"] {
            assert_eq!(decide(&message(), InProgress::default(), subject, None, &one("bd-a1")), Decision::Skip(Skip::NotOwnWork));
        }
        assert_eq!(auto_comment_char("x\n; Please enter\n;\n"), Some(';'));
        assert_eq!(auto_comment_char("x\ny\n"), None);
    }

    #[test]
    fn the_subject_link_goes_at_the_end_of_the_first_line_of_text_once() {
        assert_eq!(with_subject_link("Fix it\n\nBody\n", "bd-a1", Some('#')).as_deref(), Some("Fix it (bd-a1)\n\nBody\n"));
        assert_eq!(with_subject_link("# help\n\nFix it  \r\n", "bd-a1", Some('#')).as_deref(), Some("# help\n\nFix it (bd-a1)  \r\n"));
        assert_eq!(with_subject_link("Fix bd-a1 at last\n", "bd-a1", Some('#')), None, "already named");
        assert_eq!(with_subject_link("Fix it", "bd-a1", None).as_deref(), Some("Fix it (bd-a1)"));
        assert_eq!(with_subject_link("\n# only comments\n", "bd-a1", Some('#')), None);
        assert_eq!(
            with_subject_link("Fix bd-a1.2\n", "bd-a1", Some('#')).as_deref(),
            Some("Fix bd-a1.2 (bd-a1)\n"),
            "a child is another issue"
        );
    }

    #[test]
    fn names_is_a_word_match() {
        assert!(names("fixes bd-a1", "bd-a1"));
        assert!(names("(bd-a1)", "bd-a1"));
        assert!(names("bd-a1.", "bd-a1"));
        assert!(!names("bd-a1.2 done", "bd-a1"));
        assert!(!names("bd-a1b", "bd-a1"));
        assert!(!names("xbd-a1", "bd-a1"));
        assert!(names("é bd-a1 ü", "bd-a1"));
    }

    #[test]
    fn text_stops_at_the_scissors_line() {
        let msg = "Subject\n# ------------------------ >8 ------------------------\ndiff --git a b\n";
        assert_eq!(text_of(msg, '#'), "Subject\n");
    }
}

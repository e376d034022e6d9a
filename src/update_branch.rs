//! `bd-merge update-branch`: merge a base branch into the checked-out branch with our driver, where
//! no driver is installed: a hosting service's CI job.
//!
//! GitHub's merge button, "Update branch" and merge queue never run a custom merge driver, and
//! GitLab runs none either, so a pull request that touches the issues file conflicts with main on
//! every merge. A CI job fixes that by merging main into the pull request's branch the way a
//! person with beads-git installed would: the driver is registered for this one `git merge`
//! (`git -c merge.beads.driver=...`, nothing written to any config), and the issues files are
//! routed to it through `$GIT_DIR/info/attributes` for the length of the merge: that file outranks
//! a committed `.gitattributes`, so a pull request that commits `merge=union` cannot turn the
//! driver off. Before committing, the merged file is checked (no id on two lines, no conflict
//! marker, every line a record); a file that fails is never committed or pushed. A CI
//! checkout is usually shallow and holds only the pull request's branch, so the base is fetched
//! from the branch's remote when missing, and the history deepened step by step until the two
//! branches' merge base is found. The result is a merge commit whose message lists the issues
//! merged field by field and every value the driver overrode, each decision also as a trailer
//! (see [`crate::merge_trailers`]) so that `bd-merge review` in any clone can list and restore
//! it; after it, the service's own merge
//! of the pull request is a fast line merge with no conflict in the issues file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::diff::{changes, Snapshot};
use crate::fix::Fix;
use crate::git::{run as git, ISSUES_PATHS};

/// What to merge, and where.
#[derive(Debug, Clone)]
pub struct UpdateOptions {
    /// Any directory in the repository's work tree.
    pub repo: PathBuf,
    /// The branch to merge in (`main`, or `origin/main`).
    pub base: String,
    /// The branch being updated, when HEAD is detached (CI checkouts often are).
    pub branch: Option<String>,
    /// Push the merge commit to the branch's upstream.
    pub push: bool,
    /// The merge commit's first line (a default names both branches).
    pub message: Option<String>,
    /// The `bd-merge` executable the driver runs.
    pub bd_merge: PathBuf,
    /// Told git's and the driver's diagnostics, escaped, line by line (the library never prints).
    pub notice: fn(&str),
}

/// How an update ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum UpdateOutcome {
    /// The branch already contains the base: nothing was done.
    UpToDate {
        /// The branch's commit.
        head: String,
    },
    /// A merge commit was made (and pushed, with `--push`).
    Merged {
        /// The merge commit.
        commit: String,
        /// Whether it was pushed.
        pushed: bool,
        /// Issues both sides changed, merged field by field.
        issues: Vec<String>,
        /// The driver's reports of values it overrode, one per value.
        overridden: Vec<String>,
    },
    /// Files other than the issues files conflict: the merge was aborted, the work tree and the
    /// remote are as they were.
    Conflicts {
        /// The conflicted files.
        files: Vec<String>,
    },
}

impl UpdateOutcome {
    /// 0 up to date or merged, 1 conflicts.
    pub fn exit_code(&self) -> u8 {
        match self {
            UpdateOutcome::Conflicts { .. } => 1,
            _ => 0,
        }
    }
}

/// Why an update stopped before committing, for the cases a person acts on; [`UpdateError::text`]
/// words them.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    /// HEAD is detached and no branch was named.
    #[error("HEAD is detached and no branch was named")]
    Detached,
    /// The work tree has uncommitted changes.
    #[error("the work tree has uncommitted changes")]
    Dirty,
    /// The merged issues files hold what must never be committed (each problem named); the merge
    /// was aborted and nothing was committed or pushed.
    #[error("the merged issues file is not sound")]
    Unsound(Vec<String>),
    /// git, a fetch or the driver failed.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

impl UpdateError {
    /// The error for a person, `word` naming the fixes' commands and flags.
    pub fn text(&self, word: &dyn Fn(&Fix) -> String) -> String {
        match self {
            UpdateError::Detached => format!("HEAD is detached: pass {}, the branch this checkout is for", word(&Fix::NameBranch)),
            UpdateError::Dirty => format!(
                "the work tree has uncommitted changes; {} runs on a clean checkout (commit or stash them first)",
                word(&Fix::UpdateBranch)
            ),
            UpdateError::Unsound(problems) => format!(
                "the merged issues file is not sound, so nothing was committed or pushed:\n  {}\n\
                 Repair it on the base branch (`{}`, `{}`) and run {} again",
                problems.join("\n  "),
                word(&Fix::DedupeFile),
                word(&Fix::ResolveFile),
                word(&Fix::UpdateBranch)
            ),
            UpdateError::Failed(e) => format!("{e:#}"),
        }
    }
}

/// The command name update-branch's driver runs log under (and its trailers are read back as).
const UPDATE_COMMAND: &str = crate::merge_trailers::COMMAND;

/// The highest sequence number in the merge log at `dir` (0 when empty or unreadable).
fn last_seq(dir: &Path) -> u64 {
    crate::merge_log::read_all(dir).ok().and_then(|all| all.iter().map(|e| e.seq).max()).unwrap_or(0)
}

/// How many times a shallow clone is deepened (doubling each time from 64 commits) before the
/// whole history is fetched.
const DEEPEN_STEPS: u32 = 8;

/// Merges `options.base` into the checked-out branch with the field-level driver.
pub fn update_branch(options: &UpdateOptions) -> std::result::Result<UpdateOutcome, UpdateError> {
    let top = PathBuf::from(git(&options.repo, &["rev-parse", "--show-toplevel"])?);
    let repo = top.as_path();
    let branch = match (git(repo, &["symbolic-ref", "--short", "-q", "HEAD"]).ok().filter(|b| !b.is_empty()), &options.branch) {
        (_, Some(b)) => b.clone(),
        (Some(b), None) => b,
        (None, None) => return Err(UpdateError::Detached),
    };
    let dirty = git(repo, &["status", "--porcelain", "--untracked-files=no"])?;
    if !dirty.is_empty() {
        return Err(UpdateError::Dirty);
    }
    let remote = git(repo, &["config", "--get", &format!("branch.{branch}.remote")]).unwrap_or_else(|_| "origin".to_owned());
    let base = resolve_base(repo, &remote, &options.base)?;
    find_merge_base(repo, &remote, &branch, &base)?;
    let head = git(repo, &["rev-parse", "HEAD"])?;
    if git(repo, &["merge-base", "--is-ancestor", &base, "HEAD"]).is_ok() {
        return Ok(UpdateOutcome::UpToDate { head });
    }
    let merge_base = git(repo, &["merge-base", "HEAD", &base])?;
    let issues = issues_changed_on_both_sides(repo, &merge_base, &base)?;
    let log_dir = crate::merge_log::log_dir(repo);
    let logged_before = log_dir.as_deref().map(last_seq).unwrap_or(0);
    let (clean, overridden) = merge(repo, options, &base)?;
    if !clean {
        let files = git(repo, &["diff", "--name-only", "--diff-filter=U"])?.lines().map(str::to_owned).collect();
        git(repo, &["merge", "--abort"]).context("aborting the merge")?;
        return Ok(UpdateOutcome::Conflicts { files });
    }
    let problems = unsound_result(repo)?;
    if !problems.is_empty() {
        git(repo, &["merge", "--abort"]).context("aborting the merge")?;
        return Err(UpdateError::Unsound(problems));
    }
    // This merge's decisions, from the log its driver runs appended to: the log of a CI clone is
    // thrown away with it, so the merge commit carries them as trailers.
    let decisions: Vec<crate::merge_log::Entry> = match &log_dir {
        Some(dir) => crate::merge_log::read_all(dir)?
            .into_iter()
            .filter(|e| e.seq > logged_before && e.command == UPDATE_COMMAND && e.head.as_deref() == Some(head.as_str()))
            .collect(),
        None => Vec::new(),
    };
    let mut message = commit_message(options, &branch, &issues, &overridden);
    let trailers = crate::merge_trailers::trailers(&decisions);
    if !trailers.is_empty() {
        message.push('\n');
        for t in trailers {
            message.push_str(&t);
            message.push('\n');
        }
    }
    commit(repo, &message)?;
    let commit = git(repo, &["rev-parse", "HEAD"])?;
    if options.push {
        push(repo, &remote, &branch)?;
    }
    Ok(UpdateOutcome::Merged { commit, pushed: options.push, issues, overridden })
}

/// The base as a revision this clone has: itself when present, else fetched from `remote`
/// (`origin/main` and `main` both name the remote's `main`).
fn resolve_base(repo: &Path, remote: &str, base: &str) -> Result<String> {
    if base.starts_with('-') {
        bail!("{base:?} is not a branch name");
    }
    let has = |rev: &str| git(repo, &["rev-parse", "--verify", "--quiet", "--end-of-options", &format!("{rev}^{{commit}}")]).is_ok();
    let name = base.strip_prefix(&format!("{remote}/")).unwrap_or(base);
    let tracking = format!("refs/remotes/{remote}/{name}");
    let shallow = git(repo, &["rev-parse", "--is-shallow-repository"])? == "true";
    let mut fetch = vec!["fetch".to_owned(), "--quiet".to_owned(), "--no-tags".to_owned()];
    if shallow {
        fetch.push("--depth=1".to_owned());
    }
    fetch.extend([remote.to_owned(), format!("+refs/heads/{name}:{tracking}")]);
    // Always refresh the tracking branch: a CI clone's copy may be older than the remote's.
    match git(repo, &fetch) {
        Ok(_) => Ok(tracking),
        Err(_) if has(base) => Ok(base.to_owned()),
        Err(e) => Err(e.context(format!("fetching {name} from {remote}"))),
    }
}

/// Makes sure the history holds a merge base of HEAD and `base`, deepening a shallow clone.
fn find_merge_base(repo: &Path, remote: &str, branch: &str, base: &str) -> Result<()> {
    let mut depth = 64u32;
    for step in 0..=DEEPEN_STEPS {
        if git(repo, &["merge-base", "HEAD", base]).is_ok() {
            return Ok(());
        }
        if git(repo, &["rev-parse", "--is-shallow-repository"])? != "true" {
            bail!("{branch} and {base} have no common history, so there is nothing to merge them from");
        }
        let name = base.rsplit_once(&format!("refs/remotes/{remote}/")).map_or(base, |(_, n)| n);
        let refs = [format!("+refs/heads/{branch}:refs/remotes/{remote}/{branch}"), format!("+refs/heads/{name}:{base}")];
        let deepen = if step == DEEPEN_STEPS { "--unshallow".to_owned() } else { format!("--deepen={depth}") };
        let mut args = vec!["fetch".to_owned(), "--quiet".to_owned(), "--no-tags".to_owned(), deepen, remote.to_owned()];
        // The base alone when the branch is not on the remote (yet).
        let with_branch = git(repo, &args.iter().cloned().chain(refs.iter().cloned()).collect::<Vec<_>>());
        if with_branch.is_err() {
            args.push(refs[1].clone());
            git(repo, &args).with_context(|| format!("deepening the shallow clone to find where {branch} and {base} meet"))?;
        }
        depth = depth.saturating_mul(2);
    }
    bail!("no merge base of {branch} and {base} even after fetching the whole history")
}

/// Issues changed on both sides since the merge base: the ones the driver merges field by field.
fn issues_changed_on_both_sides(repo: &Path, merge_base: &str, base: &str) -> Result<Vec<String>> {
    let objects = crate::git::Repo::discover(repo)?;
    let snapshot = |rev: &str| -> Result<Snapshot> {
        Snapshot::parse(objects.issues_at(rev, None)?, false, None).map_err(|e| anyhow::anyhow!("reading the issues file at {rev}: {e}"))
    };
    let (old, ours, theirs) = (snapshot(merge_base)?, snapshot("HEAD")?, snapshot(base)?);
    let theirs_changed = changes(&old, &theirs).ids();
    let mut both: Vec<String> = changes(&old, &ours).ids().into_iter().filter(|id| theirs_changed.contains(id)).collect();
    both.sort();
    Ok(both)
}

/// The driver for this one command, as `-c` settings (nothing written to any config).
fn driver_settings(bd_merge: &Path) -> Vec<OsString> {
    // The same commands install writes into a clone's config.
    let bin_dir = bd_merge.parent().unwrap_or(Path::new("."));
    [
        format!("merge.beads.driver={}", crate::install::driver_command(bin_dir)),
        "merge.beads.name=beads JSONL merge (bd-merge update-branch)".to_owned(),
        format!("merge.beads-append.driver={}", crate::install::append_driver_command(bin_dir)),
        "merge.beads-append.name=beads append-only log merge".to_owned(),
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

/// Our merge attributes in `$GIT_DIR/info/attributes`, git's highest-precedence attributes file,
/// for as long as this value lives: a branch that commits `merge=union` (or any other driver) for
/// the issues file in its `.gitattributes` cannot route the merge away from the driver, since a
/// committed file outranks `core.attributesFile`. The file's earlier bytes come back on drop (or
/// it is removed, when there was none).
struct ForcedAttributes {
    path: PathBuf,
    before: Option<Vec<u8>>,
    /// What was written: the file is put back only while it still holds this, so another
    /// writer's edit during the merge is never undone.
    written: Vec<u8>,
}

impl ForcedAttributes {
    fn install(repo: &Path) -> Result<ForcedAttributes> {
        let path = PathBuf::from(git(repo, &["rev-parse", "--path-format=absolute", "--git-path", "info/attributes"])?);
        let dir = path.parent().context("info/attributes has a directory")?;
        crate::safe_fs::refuse_linked_dir(dir)?;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let before = crate::safe_fs::read_regular(&path, crate::safe_fs::SMALL_FILE_LIMIT)?;
        let mut content = before.clone().unwrap_or_default();
        if !content.is_empty() && !content.ends_with(b"\n") {
            content.push(b'\n');
        }
        content.extend_from_slice(b"# bd-merge update-branch: for this merge only (removed when it ends)\n");
        for line in crate::install::ATTRIBUTE_LINES.iter().filter(|l| l.contains(" merge=")) {
            content.extend_from_slice(format!("{line}\n").as_bytes());
        }
        crate::safe_fs::write_atomic(&path, &content)?;
        let forced = ForcedAttributes { path, before, written: content };
        for file in ISSUES_PATHS {
            let effective = git(repo, &["check-attr", "merge", "--", file])?;
            if !effective.ends_with(": beads") {
                bail!(
                    "the merge attribute of {file} is still not ours after writing {} ({effective}); refusing to merge",
                    forced.path.display()
                );
            }
        }
        Ok(forced)
    }
}

impl Drop for ForcedAttributes {
    fn drop(&mut self) {
        if crate::safe_fs::read_regular(&self.path, crate::safe_fs::SMALL_FILE_LIMIT).ok().flatten().as_deref() != Some(&self.written[..]) {
            return;
        }
        let _ = match &self.before {
            Some(bytes) => crate::safe_fs::write_atomic(&self.path, bytes),
            None => std::fs::remove_file(&self.path).map_err(Into::into),
        };
    }
}

/// The findings in the merged issues files that must never be committed or pushed: an id on two
/// lines, a conflict marker, a line that is not a record. Empty when the files are sound.
fn unsound_result(repo: &Path) -> Result<Vec<String>> {
    use crate::check::FindingKind;
    let mut problems = Vec::new();
    for rel in ISSUES_PATHS {
        let Some(content) = crate::safe_fs::read_regular(&repo.join(rel), 1 << 40)? else { continue };
        let (findings, _) = crate::check::check_file(&content);
        for f in findings {
            if matches!(f.kind, FindingKind::DuplicateId | FindingKind::ConflictMarker | FindingKind::MalformedLine) {
                problems.push(format!("{rel}: {}", crate::record::printable(&f.message, 400)));
            }
        }
    }
    Ok(problems)
}

/// Runs `git merge --no-commit` with our driver; returns whether it was clean and the driver's
/// reports of overridden values (its stderr lines), which are also passed on to stderr.
fn merge(repo: &Path, options: &UpdateOptions, base: &str) -> Result<(bool, Vec<String>)> {
    let settings = driver_settings(&options.bd_merge);
    let _attributes = ForcedAttributes::install(repo)?;
    let mut cmd = Command::new("git");
    for s in &settings {
        cmd.arg("-c").arg(s);
    }
    cmd.args(["merge", "--no-ff", "--no-commit", "--no-verify", "--quiet", "--end-of-options", base])
        .current_dir(repo)
        .env(crate::merge_log::COMMAND_ENV, UPDATE_COMMAND)
        .stdin(Stdio::null());
    let out = cmd.output().context("running git merge (is git installed?)")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut overridden = Vec::new();
    for line in stderr.lines() {
        (options.notice)(&crate::record::printable(line, 4000));
        if let Some(report) = line.strip_prefix("bd-merge: ").filter(|r| !r.contains("warning:") && !r.contains("record(s) left")) {
            overridden.push(crate::record::printable(report, 400));
        }
    }
    if out.status.success() {
        return Ok((true, overridden));
    }
    // A merge that stopped on conflicts leaves MERGE_HEAD; anything else is an error.
    if git(repo, &["rev-parse", "--verify", "--quiet", "MERGE_HEAD"]).is_ok() {
        return Ok((false, overridden));
    }
    bail!("git merge {base} failed: {}", crate::record::printable(stderr.trim(), 2000))
}

fn commit_message(options: &UpdateOptions, branch: &str, issues: &[String], overridden: &[String]) -> String {
    // Names and text from the branches go into git with their control and bidirectional-override
    // characters escaped, as every terminal line is.
    let mut message = match &options.message {
        Some(m) => crate::record::printable_lines(m).into_owned(),
        None => format!("Merge {} into {}", crate::record::escaped(&options.base), crate::record::escaped(branch)),
    };
    message.push_str("\n\nMerged by `bd-merge update-branch` with the field-level beads driver.\n");
    if issues.is_empty() {
        message.push_str("\nNo issue was changed on both sides.\n");
    } else {
        message.push_str(&format!("\nIssues changed on both sides, merged field by field ({}):\n", issues.len()));
        for id in issues {
            message.push_str(&format!("  {}\n", crate::record::printable(id, 200)));
        }
    }
    if !overridden.is_empty() {
        message.push_str(&format!("\nValues the merge overrode ({}):\n", overridden.len()));
        for r in overridden {
            message.push_str(&format!("  {}\n", crate::record::escaped(r)));
        }
    }
    message
}

/// Commits the merge; without a committer identity in git's environment or config, as
/// `beads-git` (a CI job may set neither).
fn commit(repo: &Path, message: &str) -> Result<()> {
    let mut file = tempfile::NamedTempFile::new().context("creating the commit message file")?;
    std::io::Write::write_all(&mut file, message.as_bytes()).context("writing the commit message file")?;
    let mut args: Vec<OsString> = Vec::new();
    if git(repo, &["var", "GIT_COMMITTER_IDENT"]).is_err() {
        args.extend(["-c", "user.name=beads-git", "-c", "user.email=beads-git@users.noreply.invalid"].map(OsString::from));
    }
    args.extend(["commit", "--no-verify", "--quiet", "-F"].map(OsString::from));
    args.push(file.path().as_os_str().to_owned());
    git(repo, &args)?;
    Ok(())
}

/// Pushes HEAD to the branch's upstream (`branch.<name>.merge`), else to the same name.
fn push(repo: &Path, remote: &str, branch: &str) -> Result<()> {
    let upstream = git(repo, &["config", "--get", &format!("branch.{branch}.merge")]).unwrap_or_else(|_| format!("refs/heads/{branch}"));
    git(repo, &["push", "--quiet", remote, &format!("HEAD:{upstream}")]).with_context(|| format!("pushing to {remote} {upstream}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commit_message_carries_no_raw_control_or_bidi_character() {
        let mut options = UpdateOptions {
            repo: PathBuf::from("."),
            base: "main\u{202e}txt.exe".to_owned(),
            branch: None,
            push: false,
            message: None,
            bd_merge: PathBuf::from("bd-merge"),
            notice: |_| {},
        };
        let ids = ["bd-1\u{2066}x".to_owned()];
        let message = commit_message(&options, "topic\u{1b}[31m", &ids, &["bd-1: title \u{202e}kept".to_owned()]);
        assert!(!message.chars().any(|c| c != '\n' && crate::record::is_unprintable(c)), "{message:?}");
        assert!(message.starts_with("Merge main\\u{202e}txt.exe into topic\\u{1b}[31m"), "{message}");
        options.message = Some("Update\u{202e}\nbody line".to_owned());
        let given = commit_message(&options, "topic", &[], &[]);
        assert!(given.starts_with("Update\\u{202e}\nbody line") && !given.contains('\u{202e}'), "{given}");
    }
}

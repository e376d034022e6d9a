//! `bd-sync check` as a whole: the issues file's problems ([`crate::check`]), git's view of it
//! (a conflict git still records), the installation's health ([`crate::install::health`]) and
//! the merge log's unreviewed decisions, in one report.
//!
//! It sits above both the file checks and the installer so that neither depends on the other
//! (docs/architecture.md).

use crate::check::{check_file, CheckReport, Finding, FindingKind};
use crate::fix::Fix;

/// What to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The issues file.
    pub file: std::path::PathBuf,
    /// Where our binaries live (the hooks and driver must point there); `None` checks the file
    /// alone, as the CI gate does (`check --ci`): no installation findings and no merge-log
    /// notes, which are about one clone (a CI checkout has the committed `merge=beads` attribute
    /// and, rightly, no driver).
    pub bin_dir: Option<std::path::PathBuf>,
}

/// A note when merges in this clone overrode values in the last day that nobody has listed with
/// `bd-merge review` (the merge log, `crate::merge_log`). Nothing outside a repository, and
/// nothing when the log cannot be read (it is never a reason to fail).
fn unreviewed_overrides(dir: &std::path::Path) -> Option<Finding> {
    let log = crate::merge_log::log_dir(dir)?;
    let now = crate::timestamp::merge_now().ok()?;
    let since = crate::timestamp::Instant { seconds: now.seconds - 86_400, nanos: now.nanos };
    let n = crate::merge_log::unreviewed_since(&log, since).ok().filter(|n| *n > 0)?;
    Some(
        Finding::new(
            FindingKind::UnreviewedOverrides,
            None,
            Vec::new(),
            format!("merges in this clone overrode {n} value(s) in the last day that nobody has reviewed"),
        )
        .with_fix(Fix::ReviewMergeLog),
    )
}

/// A note naming where the notifier sends and where each setting comes from, when a URL is set.
fn notify_settings(dir: &std::path::Path) -> Option<Finding> {
    let settings = crate::notify::settings(dir);
    settings.iter().find(|s| s.name == "url")?;
    // A URL's user info and query values are secrets as often as not: never printed.
    let value = |s: &crate::notify::Setting| if s.name == "url" { crate::notify::redacted_url(&s.value) } else { s.value.clone() };
    let said: Vec<String> = settings.iter().map(|s| format!("{} {} (from {})", s.name, value(s), s.from)).collect();
    Some(Finding::new(FindingKind::NotifySettings, None, Vec::new(), format!("the notifier's settings: {}", said.join("; "))))
}

/// A note when the git–issue bridge is off for this process or clone (`BEADS_BRIDGE`, `git config
/// beads.bridge`): `show`, `log --commits` and `context` then list no commits. Nothing when it is
/// on (the default), so a healthy check stays quiet.
fn bridge_off(dir: &std::path::Path) -> Option<Finding> {
    if crate::bridge::enabled_in(dir) {
        return None;
    }
    let from = if std::env::var_os("BEADS_BRIDGE").is_some_and(|v| !v.is_empty()) { "BEADS_BRIDGE" } else { "git config beads.bridge" };
    Some(Finding::new(
        FindingKind::BridgeOff,
        None,
        Vec::new(),
        format!("the git-issue bridge is off here (from {from}): show, log --commits and context list no linked commits"),
    ))
}

/// A note for each remote on a GitLab host: GitLab.com's merge requests never run a custom merge
/// driver, and a GitLab Self-Managed or Dedicated server runs ours only where an administrator
/// registered it in Gitaly's configuration (`bd-sync install --print-gitaly` prints it). A
/// server without "gitlab" in its name is not recognised.
fn gitlab_remotes(dir: &std::path::Path) -> Vec<Finding> {
    let Ok(urls) = crate::git::run(dir, &["config", "--get-regexp", r"^remote\..*\.url$"]) else { return Vec::new() };
    let mut out = Vec::new();
    for line in urls.lines() {
        let Some((key, url)) = line.split_once(' ') else { continue };
        let Some(name) = key.strip_prefix("remote.").and_then(|k| k.strip_suffix(".url")) else { continue };
        let Some(host) = url_host(url).filter(|h| h.split('.').any(|label| label.to_ascii_lowercase().starts_with("gitlab"))) else {
            continue;
        };
        let (name, shown) = (crate::record::printable(name, 100), crate::record::printable(host, 200));
        let message = if host.eq_ignore_ascii_case("gitlab.com") {
            format!(
                "the remote {name} is on GitLab.com, whose merge requests never run a custom merge driver: \
                 the update-branch job of the GitLab template merges the target branch into them with it"
            )
        } else {
            format!(
                "the remote {name} is on the GitLab server {shown}: its merge requests run the driver only where an administrator \
                 registered it in Gitaly's configuration (`bd-sync install --print-gitaly /path/to/bd-merge` prints it)"
            )
        };
        out.push(Finding::new(FindingKind::GitlabRemote, None, Vec::new(), message));
    }
    out
}

/// A note where jj manages the repository (`.jj/` at its top).
fn jj_repository(dir: &std::path::Path) -> Option<Finding> {
    let top = crate::git::run(dir, &["rev-parse", "--show-toplevel"]).ok()?;
    crate::install::is_jj_repo(std::path::Path::new(top.trim())).then(|| {
        Finding::new(
            FindingKind::JjRepository,
            None,
            Vec::new(),
            "jj manages this repository, and jj runs no merge driver and no git hook: when a jj rebase or merge leaves the issues file \
             conflicted, run `jj resolve --tool beads .beads/issues.jsonl` (`bd-sync install` registers the tool); the notifier's \
             `watch` or `since-last` mode stands in for the hooks"
                .into(),
        )
    })
}

/// The host of a git URL (`https://host/...`, `ssh://user@host:22/...`, `user@host:path`);
/// `None` for a local path.
fn url_host(url: &str) -> Option<&str> {
    let authority = match url.split_once("://") {
        Some((_, rest)) => rest.split('/').next()?,
        None if url.starts_with(['/', '.']) || !url.contains(':') => return None,
        None => url.split(':').next()?,
    };
    let host = authority.rsplit('@').next()?.split(':').next()?;
    (!host.is_empty()).then_some(host)
}

/// A note while bd 1.3 migrates its database (`.beads/MIGRATION-FREEZE` beside the file): bd
/// refuses its own writes then (exit 14), and our hooks import, export and flush nothing.
fn migration_freeze(path: &std::path::Path) -> Option<Finding> {
    let freeze = path.parent()?.join(crate::paths::MIGRATION_FREEZE);
    std::fs::symlink_metadata(&freeze).ok()?;
    Some(Finding::new(
        FindingKind::MigrationFreeze,
        None,
        Vec::new(),
        format!(
            "{} exists: bd is migrating its database and refuses writes; the hooks import, export and flush nothing until bd removes it",
            crate::record::printable(&freeze.display().to_string(), 400)
        ),
    ))
}

/// A warning when a tracker's database beside the file holds edits the file lacks (asking br for
/// at most 10 s when file times say it may); nothing when that cannot be told.
fn export_stale(path: &std::path::Path) -> Option<Finding> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let behind = match crate::tracker::behind(path, deadline) {
        Ok(found) => found?,
        // The tracker cannot be asked: say what could not be checked, and how to check it.
        Err(e @ crate::tracker::Error::NotOnPath { .. }) => {
            return Some(Finding::new(FindingKind::ExportStale, None, Vec::new(), format!("could not be checked: {e}")));
        }
        Err(_) => return None,
    };
    let rel = crate::record::printable(&behind.file_rel, 400);
    Some(
        Finding::new(
            FindingKind::ExportStale,
            None,
            Vec::new(),
            format!(
                "{rel} lacks edits that {}'s database ({}) holds, so committing it now would undo them in every clone that imports it",
                behind.tracker.program(),
                crate::record::printable(&behind.db.display().to_string(), 400),
            ),
        )
        .with_fix(Fix::FlushTracker { command: behind.flush_command(), file: behind.file_rel.clone() }),
    )
}

/// Checks the file and, when it is in a git repository, the installation.
pub fn check(options: &CheckOptions) -> anyhow::Result<CheckReport> {
    let path = &options.file;
    let content = crate::jsonl::read(path)?;
    let (mut findings, external) = check_file(&content);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    // Where br keeps this clone's issues, a line it refuses stops every br command: an error.
    if crate::tracker::is_br_directory(dir) {
        for f in findings.iter_mut().filter(|f| f.kind == FindingKind::BrRefuses) {
            f.severity = crate::check::Severity::Error;
        }
    }
    let typed = crate::paths::as_typed(path);
    for f in findings.iter_mut().filter(|f| f.kind == FindingKind::ConflictMarker) {
        f.fix = Some(Fix::ResolveThenAdd { file: Some(typed.clone()) });
    }
    if crate::git::git_dir(dir).is_some() && !findings.iter().any(|f| f.kind == FindingKind::ConflictMarker) {
        let name = path.file_name().map(std::path::PathBuf::from).unwrap_or_else(|| path.clone());
        let unmerged = crate::git::run(dir, &[std::ffi::OsStr::new("ls-files"), "-u".as_ref(), "--".as_ref(), name.as_os_str()]);
        if unmerged.is_ok_and(|out| !out.trim().is_empty()) {
            findings.push(
                Finding::new(
                    FindingKind::UnresolvedConflict,
                    None,
                    Vec::new(),
                    "git still marks this file as conflicted, yet it holds no conflict markers (the merge driver failed and left ours as \
                        it was)"
                        .into(),
                )
                .with_fix(Fix::ResolveFromIndex { file: typed }),
            );
        }
    }
    findings.extend(migration_freeze(path));
    if let Some(bin_dir) = &options.bin_dir {
        if crate::git::git_dir(dir).is_some() {
            findings.extend(crate::install::health(dir, bin_dir)?);
        }
        findings.extend(export_stale(path));
        findings.extend(unreviewed_overrides(dir));
        findings.extend(notify_settings(dir));
        findings.extend(bridge_off(dir));
        if crate::git::git_dir(dir).is_some() {
            findings.extend(gitlab_remotes(dir));
            findings.extend(jj_repository(dir));
        }
    }
    Ok(CheckReport::new(path.display().to_string(), findings, external))
}

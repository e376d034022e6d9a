//! How the binaries word the library's typed advice ([`beads_git::fix::Fix`]): the one place a
//! command or flag name appears in advice, so every binary and every `--json` output say it the
//! same way.

use beads_git::fix::Fix;
use beads_git::record::printable;

/// The command (or short instruction) a user runs for `fix`, without a leading "run".
pub fn word(fix: &Fix) -> String {
    match fix {
        // ---- files and repairs ----
        Fix::ResolveMarkers { file } => {
            let file = printable(&file.to_string_lossy(), 200);
            format!("bd-merge resolve --stage {file}")
        }
        Fix::ReviewMergeLog => "bd-merge review".to_owned(),
        Fix::RestoreEntry { address } => format!("bd-merge review --restore {}", printable(address, 200)),
        Fix::DedupeFile => "bd-merge dedupe".to_owned(),
        Fix::ResolveFile => "bd-merge resolve".to_owned(),
        Fix::ShowAtParent { commit, parent, path } => {
            format!("git show {}^{parent}:{}", printable(commit, 40), printable(path, 200))
        }
        Fix::ReadHelp => "--help".to_owned(),
        Fix::NameBranch => "--branch NAME".to_owned(),
        Fix::UpdateBranch => "update-branch".to_owned(),

        // ---- cache, install, check, notifier ----
        Fix::ListIds => "bd-sync ready".to_owned(),
        Fix::Install => "bd-sync install".to_owned(),
        Fix::CorrectLines => "bd-sync check".to_owned(),
        Fix::ReinstallBinaries => "cargo install --locked --path .".to_owned(),
        Fix::InstallOrUnsetHooksPath | Fix::MoveStrayBlock | Fix::RemoveAttributeLine => "bd-sync install".to_owned(),
        Fix::InstallSharedHooksDir => "bd-sync install --shared-hooks-dir".to_owned(),
        Fix::BrImportMerge => "br sync --merge".to_owned(),
        Fix::BrImportForce => "br sync --import-only --force".to_owned(),
        Fix::ResolveThenAdd { file: Some(file) } | Fix::ResolveFromIndex { file } => {
            format!("bd-merge resolve {}", beads_git::record::escaped_path(file))
        }
        Fix::ResolveThenAdd { file: None } => "bd-merge resolve".to_owned(),
        Fix::RecomputeDerived => "bd-merge dedupe".to_owned(),
        Fix::FlushTracker { command, .. } | Fix::RunManager { command } => printable(command, 400),
        Fix::CallHookEntryPoint { hook } => format!("bd-sync hook {hook}"),
        Fix::MakeExecutable => "chmod +x".to_owned(),
        Fix::AddBlockByHand => "bd-sync hook --help".to_owned(),
    }
}

// ---- cache, install, check, notifier: sentences around a fix ----

/// What `bd-sync` prints after a file import refused: the fix a user can run, at the end of the
/// message. `skip_invalid` says whether the command printing it has `--skip-invalid` (only
/// `bd-sync import` does); a command without it never offers it.
pub fn invalid_file_advice(invalid: &beads_git::cache::import::InvalidFile, skip_invalid: bool) -> String {
    let mut advice = match invalid.fix() {
        Fix::ResolveMarkers { file } => {
            let file = beads_git::record::escaped_path(&file);
            format!(
                "fix: the file holds git conflict markers (a merge committed or left unfinished without the beads driver): \
                 run `bd-merge resolve {file}`, then `git add {file}` and commit (or `bd-merge resolve --stage {file}`, then commit)"
            )
        }
        other => format!("fix: correct or remove the lines listed (`{}` lists every problem in the file)", word(&other)),
    };
    if skip_invalid {
        advice.push_str("; or `bd-sync import --skip-invalid` imports the other lines now");
    }
    advice
}

/// How a finding's message ends with its fix: `": run `bd-sync install`"` for most.
fn finding_tail(fix: &Fix) -> String {
    let command = word(fix);
    match fix {
        Fix::ReinstallBinaries => {
            format!(": reinstall beads-git (`{command}` in its clone) and run `{}` here", word(&Fix::Install))
        }
        Fix::InstallOrUnsetHooksPath => {
            format!(": run `{command}` to put the blocks there, or `git config --unset core.hooksPath` if nothing needs it")
        }
        Fix::MoveStrayBlock => format!(": run `{command}` to move it"),
        Fix::RemoveAttributeLine => format!("; remove that line, then run `{command}`"),
        Fix::ResolveThenAdd { file: Some(file) } => {
            let file = beads_git::record::escaped_path(file);
            format!(": run `{command}`, then `git add {file}` and commit")
        }
        Fix::ResolveThenAdd { file: None } => format!(": run `{command}` on this file, then `git add` it and commit"),
        Fix::ResolveFromIndex { file } => {
            let file = beads_git::record::escaped_path(file);
            format!(": run `{command}` to merge the three sides from git's index, then `git add {file}` and commit")
        }
        Fix::ReviewMergeLog => format!(": see them with `{command}`"),
        Fix::DedupeFile => format!("; `{command}` merges them into one record (bd-merge and bd-sync keep all copies until then)"),
        Fix::RecomputeDerived => format!("; bd rewrites it on its next flush, `{command}` fixes it now"),
        Fix::FlushTracker { file, .. } => format!(
            ": run `{command}` (and `git add {}`), or `git config beads.flushOnCommit true` to have the pre-commit hook do it",
            printable(file, 400)
        ),
        Fix::CallHookEntryPoint { .. } => {
            format!(" without a call to `{command}`, so beads-git's step never runs: run `{}` for the line to add", word(&Fix::Install))
        }
        Fix::MakeExecutable => format!(": {command} it"),
        Fix::AddBlockByHand => {
            format!(". Add our block to that file yourself if you own it (see `{command}`), or replace the link with a file")
        }
        _ => format!(": run `{command}`"),
    }
}

/// Words the fix of each finding into its message (before it is printed or serialised), so the
/// text and `--json` say the same.
pub fn word_findings(findings: &mut [beads_git::check::Finding]) {
    for f in findings {
        if let Some(fix) = &f.fix {
            let tail = finding_tail(fix);
            f.message.push_str(&tail);
        }
    }
}

/// A finding's message with its worded fix at the end, as `word_findings` leaves it.
pub fn finding_text(message: &str, fix: Option<&Fix>) -> String {
    match fix {
        Some(fix) => format!("{message}{}", finding_tail(fix)),
        None => message.to_owned(),
    }
}

/// What install or uninstall says about one file.
pub fn install_warning(warning: &beads_git::install::Warning) -> String {
    use beads_git::install::Warning;
    match warning {
        Warning::Text(text) => text.clone(),
        Warning::WithFix { text, fix } => finding_text(text, Some(fix)),
        Warning::NoTracker { top } => format!(
            "{} has no .beads/ directory (no beads tracker here): the driver and hooks do nothing until one exists (`bd init` or `br \
                init`); \
             if you meant another repository, `bd-sync uninstall` undoes this and `{} -C DIR` sets up that one",
            top.display(),
            word(&Fix::Install)
        ),
        Warning::NotExecutable { path } => {
            format!("{} is not executable, so git skips it (and our block): {} it to enable it", path.display(), word(&Fix::MakeExecutable))
        }
        Warning::CommitHuskyFiles { files } => {
            format!("husky's hook files are shared: commit {} (they call bd-sync and bd-hook from PATH)", files.join(" "))
        }
        Warning::CommitAttributes { path } => format!("commit {} so teammates' clones merge issues with bd-merge too", path.display()),
        Warning::ForeignHook { path, interpreter, hook } => foreign_hook(path, interpreter, hook),
        Warning::AttributeOutranked { source, rel, ours } => format!(
            "{}:{} sets {} for {rel}, and outranks our line in {}: remove that line (install does not edit it), then run `{}` again",
            source.file.display(),
            source.line,
            source.setting,
            ours.display(),
            word(&Fix::RemoveAttributeLine)
        ),
        Warning::AttributeNotRouted { rel, ours } => {
            format!("git does not route {rel} to merge=beads although {} says so; see `git check-attr -a -- {rel}`", ours.display())
        }
        Warning::ManagerInstall { .. } | Warning::ManagerUninstall { .. } => manager_warning(warning),
        Warning::CommitRemoval { rel, deleted: true, dry_run } => format!(
            "{rel} is committed; uninstall {} it (install created it): commit its removal with `git add {rel} && git commit` at the top \
                of the repository",
            if *dry_run { "would delete" } else { "deletes" }
        ),
        Warning::CommitRemoval { rel, deleted: false, .. } => {
            format!(
                "{rel} is committed; uninstall takes our lines out of it: commit that with `git add {rel} && git commit` at the top \
                of the repository"
            )
        }
        Warning::KeptForTeam { rel, why } => format!(
            "{rel} is committed and kept: {why}. Removing our lines from it turns beads-git off for everyone who pulls that commit; \
             if the team agrees, run `bd-sync uninstall --team` and commit {rel}"
        ),
    }
}

/// What to add to a hook written for another interpreter, which our sh block would break.
fn foreign_hook(path: &std::path::Path, interpreter: &str, name: &str) -> String {
    let call = match interpreter {
        i if i.starts_with("python") => {
            format!("import subprocess, sys; subprocess.call([\"bd-sync\", \"hook\", \"{name}\", *sys.argv[1:]], stdin=subprocess.DEVNULL)")
        }
        "node" | "deno" | "bun" => format!(
            "require(\"child_process\").spawnSync(\"bd-sync\", [\"hook\", \"{name}\", ...process.argv.slice(2)], {{ stdio: \
                [\"ignore\", \"inherit\", \"inherit\"] }});"
        ),
        _ => format!("run `bd-sync hook {name} <the hook's arguments>` with stdin from /dev/null"),
    };
    format!(
        "{} is a {} hook, and our block is POSIX sh: it was left byte-identical. To run beads-git's {name} step, make it \
         call `bd-sync hook {name}` with the hook's arguments near its start (that always exits 0 and never reads stdin), \
         e.g.\n    {call}\nthen run `{}` again to check",
        path.display(),
        printable(interpreter, 80),
        word(&Fix::Install)
    )
}

/// A hook manager's command that did not do its part, and what to do by hand.
fn manager_warning(warning: &beads_git::install::Warning) -> String {
    use beads_git::install::{ManagerRun, Warning};
    let why = |command: &str, problem: &ManagerRun| match problem {
        ManagerRun::Failed(stderr) => format!("`{command}` failed: {stderr}"),
        ManagerRun::NotStarted(e) => format!("could not run `{command}`: {e}"),
        ManagerRun::NotOnPath => String::new(),
    };
    match warning {
        Warning::ManagerInstall { manager, command, problem: ManagerRun::NotOnPath } => {
            format!("{manager} is not on PATH: run `{command}` so git runs our jobs")
        }
        Warning::ManagerInstall { command, problem, .. } => why(command, problem),
        Warning::ManagerUninstall { manager, problem: ManagerRun::NotOnPath, types, hooks, .. } => format!(
            "{manager} is not on PATH: remove the hook types it installed for our jobs ({}) from {} yourself",
            types.join(", "),
            hooks.display()
        ),
        Warning::ManagerUninstall { manager, command, problem, types, .. } => {
            format!("{}; remove the hook types {manager} installed for our jobs ({}) yourself", why(command, problem), types.join(", "))
        }
        other => install_warning(other),
    }
}

/// No issues file found; for something else in its place, what to do about it.
pub fn find_error(e: beads_git::paths::FindError) -> anyhow::Error {
    match e {
        beads_git::paths::FindError::NotRegular { .. } => {
            anyhow::anyhow!("{e} (remove it, and let bd or br write the file, or `git checkout` it)")
        }
        other => other.into(),
    }
}

/// Why `bd-hook install-hook` / `uninstall-hook` left the hook file alone.
pub fn one_hook_error(e: beads_git::install::OneHookError) -> anyhow::Error {
    use beads_git::install::OneHookError;
    match e {
        OneHookError::Refused { warning, .. } => anyhow::anyhow!(install_warning(&warning)),
        OneHookError::Managed { manager } => {
            anyhow::anyhow!("{manager} runs this repository's hooks: use `{}`, which adds our jobs to its config", word(&Fix::Install))
        }
        OneHookError::Failed(e) => e,
    }
}

/// An install that failed: part way, with what undoes it and what finishes it.
pub fn install_error(e: beads_git::install::InstallError) -> super::error::CommandError {
    use beads_git::install::InstallError;
    match e {
        InstallError::PartWay(cause) => super::error::CommandError::from(cause)
            .context(format!(
                "install stopped part way; what it changed so far is recorded, and `bd-sync uninstall` undoes it \
                 (or fix the cause and run `{}` again)",
                word(&Fix::Install)
            ))
            .with_fix(Fix::Install),
        InstallError::Failed(e) => e.into(),
    }
}

/// Why install stopped, and what to do.
pub fn install_refusal(refusal: &beads_git::install::InstallRefusal) -> String {
    use beads_git::install::InstallRefusal;
    match refusal {
        InstallRefusal::ManualEdit(m) => {
            format!("{refusal}.\nAdd this to it (then run `{}` again to check):\n\n{}", word(&refusal.fix()), m.snippet)
        }
        InstallRefusal::SharedHooksDir(_) => format!(
            "{refusal}. Pass --shared-hooks-dir to install into it anyway, or set a hooks directory for this \
             repository only: git config --local core.hooksPath .git/hooks"
        ),
    }
}

/// The line after an import that moved issues of this clone to a new id, with br's way to import
/// the file when br would refuse it.
pub fn rename_notice(notice: &beads_git::cache::import::RenameNotice) -> String {
    let ran = |fix: &Fix| match &notice.ran {
        Some(Ok(())) => format!("; ran `{}` (git config beads.brSyncMerge)", word(fix)),
        Some(Err(e)) => format!("; `{}` (git config beads.brSyncMerge) failed: {e}", word(fix)),
        None => String::new(),
    };
    match &notice.fix {
        Some(fix @ Fix::BrImportForce) if notice.ran.is_some() => format!("{notice}{}", ran(fix)),
        Some(fix @ Fix::BrImportMerge) if notice.ran.is_some() => format!("{notice}{}", ran(fix)),
        Some(Fix::BrImportForce) => format!(
            "{notice}; br's plain import refuses a moved issue that has comments, and br's database holds no unexported edit, so take the \
                file with `{}`",
            word(&Fix::BrImportForce)
        ),
        Some(Fix::BrImportMerge) => format!(
            "{notice}; br's database holds unexported edits and its base snapshot is the file from before this merge, so take the merged \
                file with `{}`, which keeps them",
            word(&Fix::BrImportMerge)
        ),
        Some(other) => format!("{notice}; run `{}`", word(other)),
        None if notice.unsettled => format!(
            "{notice}; br's database holds unexported edits and no base snapshot of the file from before this merge, so no br command \
                takes the merged file without losing one side, and none is named here (docs/trackers.md, \"After a merge moved an issue \
                of this clone\")"
        ),
        None => notice.to_string(),
    }
}

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
        Fix::NameBranch => "--branch NAME".to_owned(),
        Fix::UpdateBranch => "update-branch".to_owned(),

        // ---- cache, install, check, notifier ----
        Fix::Install => "bd-sync install".to_owned(),
        Fix::CorrectLines => "bd-sync check".to_owned(),
        Fix::ReinstallBinaries => "cargo install --locked --path .".to_owned(),
        Fix::InstallOrUnsetHooksPath | Fix::MoveStrayBlock | Fix::RemoveAttributeLine => "bd-sync install".to_owned(),
        Fix::InstallSharedHooksDir => "bd-sync install --shared-hooks-dir".to_owned(),
        Fix::BrImportMerge => "br sync --merge".to_owned(),
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
    match &notice.fix {
        Some(Fix::BrImportMerge) => format!(
            "{notice}; br's plain import refuses a moved issue that has comments, so import it with `{}`. br then writes the \
             whole issues file again in its own format (`git diff` shows every line): commit that only if `git diff --stat` \
             shows nothing but re-serialised lines, else `git checkout` the file and import again",
            word(&Fix::BrImportMerge)
        ),
        Some(other) => format!("{notice}; run `{}`", word(other)),
        None => notice.to_string(),
    }
}

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
    }
}

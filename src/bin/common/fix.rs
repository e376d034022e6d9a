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

        // ---- cache, install, check, notifier ----
        Fix::Install => "bd-sync install".to_owned(),
    }
}

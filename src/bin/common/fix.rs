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
        Fix::CorrectLines => "bd-sync check".to_owned(),
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

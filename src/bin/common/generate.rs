//! Shell completions and man pages, generated from each binary's clap definition so they can
//! never drift from the flags the binary accepts. Every binary takes one `--generate KIND` flag,
//! left out of `--help` as ripgrep does: `complete-bash`, `complete-zsh`, `complete-fish` or
//! `man`; docs/install.md has the lines that install what it prints.
//!
//! Those scripts are static. Issue ids are completed dynamically: `bd-sync` honours clap's
//! completion protocol under `BD_SYNC_COMPLETE=<shell>` (`source <(BD_SYNC_COMPLETE=bash bd-sync)`;
//! a variable of our own, so a `COMPLETE` set for another program never stops bd-sync, in hooks
//! least of all), whose script calls the binary back to complete, and [`issue_ids`] answers for
//! `show` and `log`.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

/// What `--generate` writes to stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// A bash completion script.
    CompleteBash,
    /// A zsh completion function (`_bd-sync`).
    CompleteZsh,
    /// A fish completion script.
    CompleteFish,
    /// A roff man page.
    Man,
}

/// Every kind's name, as `--generate` takes it.
pub const KINDS: &str = "complete-bash, complete-zsh, complete-fish or man";

/// Writes `kind` for `cmd` (the binary's clap definition) to `out`.
pub fn generate(kind: Kind, mut cmd: clap::Command, out: &mut dyn Write) -> anyhow::Result<()> {
    let name = cmd.get_name().to_owned();
    match kind {
        Kind::CompleteBash => clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, name, out),
        Kind::CompleteZsh => clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, name, out),
        Kind::CompleteFish => clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, name, out),
        Kind::Man => clap_mangen::Man::new(cmd).render(out)?,
    }
    Ok(())
}

/// Handles `BINARY --generate KIND` (or `--generate=KIND`) before the binary parses anything
/// else: `None` when the first argument is not `--generate`, else the exit code (0 written, 2
/// an unknown kind or a write error, named on stderr).
pub fn from_args(args: &[OsString], cmd: impl FnOnce() -> clap::Command) -> Option<ExitCode> {
    let first = args.get(1)?.to_str()?;
    let value = match first.strip_prefix("--generate") {
        Some("") => args.get(2).and_then(|a| a.to_str()).unwrap_or(""),
        Some(rest) => rest.strip_prefix('=')?,
        None => return None,
    };
    let cmd = cmd();
    let name = cmd.get_name().to_owned();
    let Ok(kind) = <Kind as clap::ValueEnum>::from_str(value, false) else {
        eprintln!("{name}: --generate takes {KINDS}, not {}", beads_git::record::escaped(&format!("{value:?}")));
        return Some(ExitCode::from(2));
    };
    let mut out = std::io::stdout().lock();
    match generate(kind, cmd, &mut out).and_then(|()| out.flush().map_err(Into::into)) {
        Ok(()) => Some(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("{name}: --generate: {e:#}");
            Some(ExitCode::from(2))
        }
    }
}

/// The issue ids of the issues file the shell's directory belongs to that start with what was
/// typed, each with its title as help (shells that show help, zsh and fish, print it beside the
/// id): `bd-sync show` and `log` complete ids with it. Reads the file, never the cache (completion
/// must not import or lock); nothing when there is no issues file or what was typed is not UTF-8.
pub fn issue_ids(current: &std::ffi::OsStr) -> Vec<clap_complete::CompletionCandidate> {
    let Some(typed) = current.to_str() else { return Vec::new() };
    let Ok(file) = beads_git::paths::find_issues_file(std::path::Path::new(".")) else { return Vec::new() };
    // As every command reads it: never through a link, never a FIFO, never past a bound.
    let Ok(Some(content)) = beads_git::safe_fs::read_regular(&file, 1 << 30) else { return Vec::new() };
    let mut out: Vec<(String, Option<String>)> = content
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let id = beads_git::record::record_id(line).ok()?;
            if !id.starts_with(typed) {
                return None;
            }
            let title = serde_json::from_slice::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("title").and_then(|t| t.as_str()).map(|t| beads_git::record::printable(t, 60)));
            Some((id.into_owned(), title))
        })
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out.into_iter().map(|(id, title)| clap_complete::CompletionCandidate::new(id).help(title.map(Into::into))).collect()
}

//! What the three binaries share on the command line: the shared flags (`args`: `-C`, `--json`,
//! `--color`, `--quiet`, seconds), the values of `--color` and `--conflict` as clap parses them,
//! mapped to the library's own types, and `--generate` (completions and man pages from each
//! binary's clap definition). The library knows nothing of clap; these enums are
//! where a flag's spelling and its help text live.

// Each binary includes this file and uses part of it.
#![allow(dead_code)]

/// `println!` for what a command prints on stdout (see [`stdout_write`]).
macro_rules! outln {
    () => { $crate::common::stdout_write(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::common::stdout_write(format_args!($($arg)*), true) };
}

/// `print!` for what a command prints on stdout (see [`stdout_write`]).
#[allow(unused_macros)]
macro_rules! out {
    ($($arg:tt)*) => { $crate::common::stdout_write(format_args!($($arg)*), false) };
}

/// Writes to stdout, and ends the process quietly (exit 0) when the reader has gone:
/// `bd-sync ready | head -1`. On unix SIGPIPE's default action ends it so before the write
/// returns; where a write to a closed pipe is an error instead (Windows, and the portable switch
/// of `src/platform.rs`), this does the same by hand rather than panic as `println!` does. Any
/// other failure to write (a full disk) is said on stderr and ends the process with exit 2.
pub fn stdout_write(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(args).and_then(|()| if newline { stdout.write_all(b"\n") } else { Ok(()) });
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(2);
    }
}

pub mod args;
pub mod complete;
pub mod error;
pub mod fix;
pub mod generate;

/// Writes the error object every `--json` command prints on stdout when it fails (the exit code
/// is unchanged): `{"error": {"kind", "message", "fix"}}`, as `bd-sync schema error` describes.
/// `fix` is the command worded from the error's typed fix ([`error::CommandError`]).
fn print_json_object(kind: &str, message: &str, fix: Option<&str>) {
    let value = serde_json::json!({"error": {"kind": kind, "message": message, "fix": fix}});
    outln!("{}", serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{\"error\": null}".to_owned()));
}

/// Ends the process for a command line clap refused (or `--help`, `--version`): under `--json`
/// (given anywhere before `--`) the error object goes to stdout first, with kind `usage`, so a
/// program reading stdout has something to parse; then clap says it on stderr and exits 2 (0 for
/// help and version).
pub fn exit_usage(e: clap::Error, args: &[std::ffi::OsString]) -> ! {
    use clap::error::ErrorKind;
    let shown =
        matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand);
    let json = args.iter().skip(1).take_while(|a| *a != "--").any(|a| a == "--json");
    if json && !shown {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or("").trim_start_matches("error: ").to_owned();
        let fix = fix::word(&beads_git::fix::Fix::ReadHelp);
        print_json_object("usage", &beads_git::record::printable(&first, 2000), Some(&fix));
    }
    e.exit()
}

use beads_git::cache::import::SyncPolicy;
use beads_git::color::ColorChoice;
use beads_git::merge::ConflictPolicy;

/// The `--color` flag's values, as git, ripgrep and ls spell them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Color {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always colour (even into a pipe, and despite `NO_COLOR`).
    Always,
    /// Never colour.
    Never,
}

impl From<Color> for ColorChoice {
    fn from(c: Color) -> ColorChoice {
        match c {
            Color::Auto => ColorChoice::Auto,
            Color::Always => ColorChoice::Always,
            Color::Never => ColorChoice::Never,
        }
    }
}

/// How to settle a field both sides changed when no per-kind rule can.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Conflict {
    /// The side whose record has the later `updated_at`; ties go to the greater record.
    #[default]
    Newest,
    /// Always ours (the branch being merged into).
    Ours,
    /// Always theirs (the branch being merged in).
    Theirs,
    /// Write git conflict markers around the record and exit 1.
    Markers,
}

impl From<Conflict> for ConflictPolicy {
    fn from(c: Conflict) -> ConflictPolicy {
        match c {
            Conflict::Newest => ConflictPolicy::Newest,
            Conflict::Ours => ConflictPolicy::Ours,
            Conflict::Theirs => ConflictPolicy::Theirs,
            Conflict::Markers => ConflictPolicy::Markers,
        }
    }
}

/// How to settle a field edited both in the cache and in the file. There is no `markers`: a cache
/// row cannot hold conflict markers, so the choice is made here, and reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SyncConflict {
    /// The side whose record has the later `updated_at`; ties go to the greater record.
    #[default]
    Newest,
    /// The cache's edit.
    Ours,
    /// The file's edit.
    Theirs,
}

impl From<SyncConflict> for SyncPolicy {
    fn from(c: SyncConflict) -> SyncPolicy {
        match c {
            SyncConflict::Newest => SyncPolicy::Newest,
            SyncConflict::Ours => SyncPolicy::Ours,
            SyncConflict::Theirs => SyncPolicy::Theirs,
        }
    }
}

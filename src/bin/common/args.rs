//! The flags the three binaries share, defined once so that each is spelled, explained and
//! obeyed the same way everywhere: `-C DIR` (each binary), `--json` and `--color` (bd-sync and
//! bd-merge), `--quiet` (bd-merge), and the parser of a `--timeout` in seconds. A binary
//! flattens the ones it has into its top-level parser; each is `global`, so it may come before
//! or after a subcommand, and listed after a subcommand's own options in its help. The one
//! exception is bd-merge's `--json`: only some of its commands have JSON output, so those declare
//! it themselves and `--help` offers it nowhere else.

use std::path::PathBuf;

use beads_git::record::printable;

// `-C DIR` (a plain comment: clap would take a doc comment as the command's about).
#[derive(clap::Args, Debug, Default)]
pub struct Directory {
    /// Run as if started in DIR (as `git -C`): relative paths, the repository and the issues file are found from there.
    #[arg(short = 'C', long = "repo", global = true, value_name = "DIR", display_order = 900)]
    pub directory: Option<PathBuf>,
}

impl Directory {
    /// Moves into DIR before the command does anything, so every relative path the user gave
    /// (files, `--db`, a repository) is read from there, as git's `-C` does; a link to a
    /// directory is followed. Errs with the sentence to print: `-C DIR: no such directory` for a
    /// missing path or a dangling link, `-C DIR: not a directory` for a file.
    pub fn enter(&self) -> Result<(), String> {
        let Some(dir) = &self.directory else {
            return Ok(());
        };
        let shown = printable(&dir.to_string_lossy(), 400);
        match std::fs::metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(format!("-C {shown}: no such directory")),
            Err(e) => return Err(format!("-C {shown}: {e}")),
            Ok(m) if !m.is_dir() => return Err(format!("-C {shown}: not a directory")),
            Ok(_) => {}
        }
        std::env::set_current_dir(dir).map_err(|e| format!("-C {shown}: {e}"))
    }
}

/// `--json`'s help, one text wherever the flag is offered.
const JSON_HELP: &str = "Machine-readable output: typed JSON on stdout, and an error object there when the command fails";
/// `--color`'s help, one text wherever the flag is offered.
const COLOR_HELP: &str = "Colour the output: auto (a terminal, unless NO_COLOR is set), always or never";

// `--json` and `--color` for a binary whose every command has JSON output (bd-sync); a plain
// comment: clap would take a doc comment as the command's about.
#[derive(clap::Args, Debug)]
pub struct Output {
    #[arg(long, global = true, help = JSON_HELP, display_order = 901)]
    pub json: bool,
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = super::Color::Auto, hide_possible_values = true,
        help = COLOR_HELP, display_order = 902)]
    pub color: super::Color,
}

// `--color` alone, global, for a binary where only some commands have JSON output (bd-merge).
#[derive(clap::Args, Debug)]
pub struct ColorOnly {
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = super::Color::Auto, hide_possible_values = true,
        help = COLOR_HELP, display_order = 902)]
    pub color: super::Color,
}

// `--json` on one command that honours it, so `--help` offers it only there (bd-merge's `diff`,
// `review`, `update-branch`).
#[derive(clap::Args, Debug)]
pub struct Json {
    #[arg(long, help = JSON_HELP, display_order = 901)]
    pub json: bool,
}

// `--json` given before a bd-merge subcommand's name, where the shared flags may stand: accepted
// but left out of `--help` (the driver's form, which that help describes, has no JSON output).
#[derive(clap::Args, Debug)]
pub struct JsonBefore {
    #[arg(long = "json", id = "json_before", hide = true)]
    pub json: bool,
}

// `--quiet` (a plain comment: clap would take a doc comment as the command's about).
#[derive(clap::Args, Debug)]
pub struct Quiet {
    /// Do not report each value a merge decided on stderr (warnings, conflicts and errors still print).
    #[arg(short = 'q', long, global = true, display_order = 903)]
    pub quiet: bool,
}

/// The longest `--timeout`, in seconds: a day (longer waits overflow SQLite's busy timeout, in
/// milliseconds, and deadlines far in the future the clock).
pub const MAX_SECONDS: f64 = 86_400.0;

/// A `--timeout` in seconds with a fraction allowed (`0.5`), at least 0 and at most a day.
pub fn seconds(text: &str) -> Result<f64, String> {
    let secs: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if secs.is_finite() && (0.0..=MAX_SECONDS).contains(&secs) {
        Ok(secs)
    } else {
        Err(format!("{text} is out of range: give 0 to {MAX_SECONDS} seconds"))
    }
}

/// A `--timeout` in seconds with a fraction allowed, more than 0 and at most a day.
pub fn positive_seconds(text: &str) -> Result<f64, String> {
    match seconds(text) {
        Ok(secs) if secs > 0.0 => Ok(secs),
        Ok(_) => Err(format!("{text} is out of range: give more than 0 and at most {MAX_SECONDS} seconds")),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn seconds_take_a_fraction_and_stay_within_a_day() {
        assert_eq!(super::seconds("0.5"), Ok(0.5));
        assert_eq!(super::seconds("0"), Ok(0.0));
        assert_eq!(super::seconds(" 86400 "), Ok(86_400.0));
        for bad in ["-1", "86400.5", "NaN", "inf", "", "soon"] {
            assert!(super::seconds(bad).is_err(), "{bad}");
        }
        assert!(super::positive_seconds("0").is_err());
        assert_eq!(super::positive_seconds("0.25"), Ok(0.25));
    }
}

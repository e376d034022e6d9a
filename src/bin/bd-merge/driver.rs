//! The default form of `bd-merge`, the one git runs as a merge driver: `BASE OURS THEIRS` (or the
//! old bd form `OUTPUT BASE LEFT RIGHT`) with git's `-l %L -p %P -s %S -x %X -y %Y`; and the
//! printer of a driver's report, which `resolve` shares.

use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::merge::driver::{self, Destination, DriverOptions, DriverOutcome};
use beads_git::merge::{Markers, MergeOptions};
use beads_git::record::{escaped, printable_lines};

use crate::common;

// The driver's arguments (a plain comment: clap would take a doc comment as the command's about).
// Git passes them (`merge.beads.driver`), so they are plumbing: left out of `--help`, described
// in the reference.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// BASE OURS THEIRS (git's %O %A %B), or OUTPUT BASE LEFT RIGHT (old bd form).
    #[arg(num_args = 3..=4, required = true, value_names = ["BASE", "OURS", "THEIRS"], hide = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Write the result here instead of over OURS; `-` for stdout.
    #[arg(short = 'o', long, value_name = "FILE", hide = true)]
    output: Option<PathBuf>,
    /// How to settle a field both sides changed when no merge rule can.
    #[arg(long = "conflict", value_enum, default_value_t = common::Conflict::Newest, hide = true)]
    conflict: common::Conflict,
    /// Conflict marker size (git's %L, from a `conflict-marker-size` attribute), at most 256; below 7 counts as 7.
    #[arg(short = 'l', long = "marker-size", value_name = "N", allow_hyphen_values = true, hide = true)]
    marker_size: Option<String>,
    /// Path of the file being merged, for messages (git's %P).
    #[arg(short = 'p', long = "path", value_name = "PATH", hide = true)]
    path: Option<String>,
    /// Label for the base in conflict markers (git's %S).
    #[arg(short = 's', long = "base-label", value_name = "LABEL", hide = true)]
    base_label: Option<String>,
    /// Label for ours in conflict markers (git's %X).
    #[arg(short = 'x', long = "ours-label", value_name = "LABEL", hide = true)]
    ours_label: Option<String>,
    /// Label for theirs in conflict markers (git's %Y).
    #[arg(short = 'y', long = "theirs-label", value_name = "LABEL", hide = true)]
    theirs_label: Option<String>,
    /// The file is an append-only log (bd's interactions.jsonl, deletions.jsonl): keep every line of both sides.
    #[arg(long, hide = true)]
    append: bool,
}

impl Args {
    /// The ids of the driver's arguments, refused beside a subcommand.
    pub(crate) const IDS: [&'static str; 9] =
        ["files", "output", "conflict", "marker_size", "path", "base_label", "ours_label", "theirs_label", "append"];
}

/// Runs the merge git asked for and maps its outcome to the driver's exit code.
pub(crate) fn run(cli: Args, global: crate::Global) -> ExitCode {
    let options = match options(&cli) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bd-merge: {}", printable_lines(&format!("{e:#}")));
            return ExitCode::from(2);
        }
    };
    let name = escaped(&driver::display_name(&options)).into_owned();
    match driver::run(&options) {
        Ok(report) => {
            print_report(&name, &report, global.quiet);
            ExitCode::from(report.exit_code())
        }
        Err(e) => {
            eprintln!("bd-merge: {name}: {}", printable_lines(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

/// The driver's report on stderr; `name` is already escaped, and so is every line from the data
/// (a report is one line: a newline from the data is escaped too).
pub(crate) fn print_report(name: &str, report: &driver::DriverReport, quiet: bool) {
    for w in &report.warnings {
        eprintln!("bd-merge: {name}: warning: {}", printable_lines(&w.text(&common::fix::word)));
    }
    if !quiet {
        for r in &report.reports {
            eprintln!("bd-merge: {name}: {}", escaped(&beads_git::merge::sides::describe(r, &report.labels, report.rebase)));
        }
    }
    match &report.outcome {
        DriverOutcome::Clean => {}
        DriverOutcome::Conflicted(n) => eprintln!("bd-merge: {name}: {n} record(s) left with conflict markers"),
        DriverOutcome::NeedsReview => {
            eprintln!("bd-merge: {name}: merged, but a side deleted most records: review it (exit 1 under --conflict markers)");
        }
        DriverOutcome::Fallback { reason, conflicted } => eprintln!(
            "bd-merge: {name}: {}\nbd-merge: {name}: cannot merge record by record; merged line by line{}",
            printable_lines(reason),
            if *conflicted { " and left conflict markers" } else { " cleanly" }
        ),
    }
}

/// The longest conflict marker: git's `%L` comes from a `conflict-marker-size` attribute that a
/// committed `.gitattributes` can set to anything, and a marker is written on every conflict.
const MAX_MARKER_SIZE: usize = 256;

/// `-l N`, checked: a number of at most [`MAX_MARKER_SIZE`].
fn marker_size(text: &str) -> anyhow::Result<usize> {
    let shown = escaped(text);
    match text.parse::<u64>() {
        Ok(n) if n <= MAX_MARKER_SIZE as u64 => Ok(n as usize),
        Ok(_) => anyhow::bail!(
            "marker size {shown} is out of range (at most {MAX_MARKER_SIZE}): git passes -l %L from the file's \
             conflict-marker-size attribute; set a smaller one in .gitattributes"
        ),
        Err(_) => anyhow::bail!("marker size {shown:?} is not a number (git's %L: a conflict-marker-size attribute)"),
    }
}

/// Builds driver options, treating placeholders git did not expand as not given.
fn options(cli: &Args) -> anyhow::Result<DriverOptions> {
    let given = |v: &Option<String>| v.clone().filter(|s| !driver::is_unexpanded_placeholder(s));
    let (base, ours, theirs, destination) = match cli.files.as_slice() {
        [b, o, t] => (b, o, t, None),
        [out, b, l, r] => (b, l, r, Some(out.clone())),
        _ => anyhow::bail!("expected BASE OURS THEIRS or OUTPUT BASE LEFT RIGHT"),
    };
    let destination = match (&cli.output, destination) {
        (Some(p), _) if p.as_os_str() == "-" => Destination::Stdout,
        (Some(p), _) => Destination::File(p.clone()),
        (None, Some(out)) if out == *ours => Destination::ReplaceOurs,
        (None, Some(out)) => Destination::File(out),
        (None, None) => Destination::ReplaceOurs,
    };
    let size = match given(&cli.marker_size) {
        Some(s) => marker_size(&s)?,
        None => 7,
    };
    let default = Markers::default();
    let markers = Markers {
        size,
        ours: given(&cli.ours_label).unwrap_or(default.ours),
        base: given(&cli.base_label).unwrap_or(default.base),
        theirs: given(&cli.theirs_label).unwrap_or(default.theirs),
        diff3: false,
    };
    Ok(DriverOptions {
        base: base.clone(),
        ours: ours.clone(),
        theirs: theirs.clone(),
        destination,
        path_name: given(&cli.path),
        structural: std::env::var_os("BD_MERGE").is_none_or(|v| v != "0"),
        detect_conflict_style: true,
        merge: MergeOptions { policy: cli.conflict.into(), markers, ..MergeOptions::default() },
        append_only: cli.append,
        log: Some(beads_git::merge_log::decision_log(beads_git::merge_log::DRIVER_COMMAND)),
    })
}

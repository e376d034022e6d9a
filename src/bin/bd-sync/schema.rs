//! `bd-sync schema [COMMAND]`: JSON Schemas of the `--json` outputs.

use crate::common::error::CommandResult;
use std::process::ExitCode;

use beads_git::record::escaped;
use beads_git::schema;

use crate::Global;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// ready, blocked, show, status, check, import, export, install, uninstall, diff, log, or error (what every --json command prints when
    /// it fails) [default: all].
    command: Option<String>,
}

pub(crate) fn run(args: Args) -> CommandResult {
    let out = match args.command {
        Some(c) => match schema::schema(&c) {
            Some(s) => s,
            None => {
                eprintln!("bd-sync: no schema for {}: one of {}", escaped(&format!("{c:?}")), schema::COMMANDS.join(", "));
                return Ok(ExitCode::from(2));
            }
        },
        None => {
            serde_json::Value::Object(schema::COMMANDS.iter().filter_map(|c| schema::schema(c).map(|s| ((*c).to_owned(), s))).collect())
        }
    };
    Global::print_json(&out)?;
    Ok(ExitCode::SUCCESS)
}

//! `bd-sync hook NAME`: our hook block, for hook managers to call. Fail-open: a hook must never
//! fail the git operation it runs in, so this always exits 0 and says what went wrong.

use std::process::ExitCode;

use beads_git::install;
use beads_git::record::{escaped, printable_lines};

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// pre-commit, prepare-commit-msg, commit-msg, post-commit, post-merge, post-rewrite or post-checkout.
    hook: String,
    /// The arguments git passed to the hook.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

pub(crate) fn run(args: Args) -> ExitCode {
    match install::Hook::from_name(&args.hook) {
        None => {
            let known: Vec<&str> = install::Hook::ALL.iter().map(|h| h.file_name()).collect();
            eprintln!("bd-sync: hook: unknown hook {} ({})", escaped(&args.hook), known.join(", "));
        }
        Some(h) => {
            if let Err(e) = install::own_bin_dir().and_then(|dir| install::run_hook(h, &args.args, &dir)) {
                eprintln!("bd-sync: hook {}: {}", args.hook, printable_lines(&format!("{e:#}")));
            }
        }
    }
    ExitCode::SUCCESS
}

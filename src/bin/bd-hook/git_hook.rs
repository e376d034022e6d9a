//! `bd-hook install-hook` and `uninstall-hook` (old spellings `--install-git-hook REPO`,
//! `--uninstall-git-hook REPO`): put our post-commit block
//! into a repository's hooks, or take it out, and exit.

use crate::common::error::CommandResult;
use std::process::ExitCode;

use beads_git::install::{self, Hook};

use crate::Cli;

/// Installs or removes the block, saying on stderr which file changed and how.
pub(crate) fn run(cli: &Cli) -> CommandResult {
    let (path, change) = match (&cli.install_git_hook, &cli.uninstall_git_hook) {
        (Some(repo), _) => {
            install::install_one(repo, Hook::PostCommit, &install::own_bin_dir()?).map_err(crate::common::fix::one_hook_error)?
        }
        (None, Some(repo)) => install::uninstall_one(repo, Hook::PostCommit).map_err(crate::common::fix::one_hook_error)?,
        (None, None) => return Ok(ExitCode::SUCCESS),
    };
    eprintln!("bd-hook: {}: {change}", path.display());
    Ok(ExitCode::SUCCESS)
}

//! The git–issue bridge (docs/agents.md): what links commits to issues, and the switch that turns it
//! off.
//!
//! Agents and people lose their context between sessions; the bridge keeps the commits made for
//! an issue findable from the issue. [`links`] indexes which commits name which issue (by a
//! `Beads-Issue:` trailer or by mentioning its id) without walking the history on every call;
//! [`commit_msg`] decides whether a commit message gets the trailer and adds it, and
//! [`commit_comment`] asks the tracker to note a new commit on its issues (opt-in).
//! [`enabled`] is the one switch: `git config beads.bridge false` for a clone, `BEADS_BRIDGE=0`
//! for one process.

pub mod commit_comment;
pub mod commit_msg;
pub mod context;
pub mod links;
pub mod settings;

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Result;

/// Whether the bridge is on in the repository at `dir` for this process: `BEADS_BRIDGE`, else
/// `git config beads.bridge`, else on.
pub fn enabled_in(dir: &Path) -> bool {
    settings::Settings::read(dir).bridge_on()
}

/// The links index of the repository at `dir`, brought up to date once for every id a command
/// asks about; `None` when the bridge is off or `dir` is not in a repository. `prefixes` are the
/// issues' id prefixes (`cache::query::id_prefixes`).
pub fn links_index(dir: &Path, prefixes: &BTreeSet<String>) -> Result<Option<links::Index>> {
    if !enabled_in(dir) {
        return Ok(None);
    }
    let Some(index) = links::Index::of(dir)? else { return Ok(None) };
    index.refresh(prefixes)?;
    Ok(Some(index))
}

/// Whether the bridge is on, from the process's `BEADS_BRIDGE` (first) and the clone's
/// `beads.bridge` git config value: `0`, `false`, `no` and `off` (any case) turn it off; anything
/// else, or nothing, leaves it on.
pub fn enabled(env: Option<&str>, config: Option<&str>) -> bool {
    let off = crate::git::git_false;
    match (env.map(str::trim).filter(|v| !v.is_empty()), config) {
        (Some(v), _) => !off(v),
        (None, Some(v)) => !off(v),
        (None, None) => true,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_environment_outranks_git_config() {
        use super::enabled;
        assert!(enabled(None, None));
        assert!(!enabled(Some("0"), Some("true")));
        assert!(enabled(Some("1"), Some("false")));
        assert!(!enabled(None, Some("FALSE")));
        assert!(!enabled(Some(""), Some("off")), "an empty variable is unset");
    }
}

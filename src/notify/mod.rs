//! The notifier behind `bd-hook`: telling a server which work items changed.
//!
//! Its parts, each with one job: [`ids`] collects the ids from the command line, standard input
//! or a range of commits (what git hooks hand it); [`watch`] follows the issues file and reports
//! the ids a write changed; [`since_last`] compares the issues with what a state in the git dir
//! last delivered; [`post`] delivers the ids, fail-open. `since_last` lives here rather than
//! beside the cache because its state is the notifier's alone (which ids a server took); it
//! shares nothing with the cache's own sync state.
//!
//! The delivery types are re-exported here (`notify::Notifier`), since every mode ends in them.

pub mod ids;
pub mod post;
pub mod since_last;
pub mod watch;

pub use post::*;

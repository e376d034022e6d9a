//! The three-way merge of JSONL issue files, record by record.
//!
//! Records are matched by `id`. A record whose bytes are the same on two sides is decided without
//! being parsed, so merging two branches that each touched a few percent of a 100k-issue file
//! parses only those few percent. Records changed on both sides go to the field rules in
//! [`field`]; what those rules leave open is settled by the [`ConflictPolicy`]. The function here
//! is pure: the same three inputs and options always give the same bytes, reports and outcome.
//! Reading files, falling back to `git merge-file` and writing the result live in [`driver`].
//!
//! The parts, in the order a merge runs them: [`types`] (options, outcome, error), `inputs`
//! (indexing and checking the three files), `join` (visiting every key once), `decide` (what to
//! write for one key) and `finish` (the passes over the whole result).

pub mod collisions;
pub(crate) mod comments;
mod decide;
pub mod derived;
pub mod driver;
pub mod field;
mod finish;
mod inputs;
mod join;
pub mod producing;
pub mod repair;
pub mod sides;
mod sorted;
pub(crate) mod stamp;
pub mod text;
pub mod types;

pub(crate) use decide::updated_at_of;
pub use join::{merge, merge_append_only, merge_indexed, merge_sorted};
pub use types::{
    ConflictPolicy, DecisionLog, Decisions, Input, Labels, Markers, MergeOptions, Merged, Rename, Report, Resolution, Side, SideNames,
    Unmergeable, Warning,
};

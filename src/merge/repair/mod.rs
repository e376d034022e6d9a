//! Repairing an issues file that was merged where our driver did not run (README, "When git says CONFLICT"): a hosting
//! service's merge button, a clone without `bd-sync install`, `git stash pop`, `merge=union`.
//!
//! `resolve` finds the three sides again, from git's index stages (`:1:` `:2:` `:3:`) during a
//! conflicted merge, rebase, cherry-pick or stash pop, or else from the conflict markers left in
//! the file (diff3/zdiff3 markers carry the base; plain markers are merged against an empty base
//! for their hunks; lines outside hunks are common to all three), and merges them exactly as the
//! driver would have. `dedupe` turns an id left on several lines into one record.
//!
//! Markers and copies in a committed file have lost their base, so both repairs first look for
//! the merge commit that produced the file ([`super::producing`]) and, when the working file is
//! still that commit's, redo its merge from the parents and their merge base, exactly as the
//! driver would have merged them. Only without such history do they merge against an empty base,
//! and then they say why ([`History::Missing`]) and log every value they dropped.

mod dedupe;
mod resolve;
mod shared;
mod types;

pub use dedupe::{dedupe, dedupe_with_history};
pub use resolve::{resolve, sides_from_markers};
pub use types::{DedupeRun, Deduped, History, ResolveOptions, ResolveOutcome, Sides};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::MergeOptions;

    #[test]
    fn sides_come_back_from_plain_and_diff3_markers() {
        let plain =
            b"{\"id\":\"a\"}\n<<<<<<< HEAD\n{\"id\":\"b\",\"v\":1}\n=======\n{\"id\":\"b\",\"v\":2}\n>>>>>>> feature\n{\"id\":\"c\"}\n";
        let [b, o, t] = sides_from_markers(plain).expect("well formed").expect("has markers");
        assert_eq!(b, b"{\"id\":\"a\"}\n{\"id\":\"c\"}\n");
        assert_eq!(o, b"{\"id\":\"a\"}\n{\"id\":\"b\",\"v\":1}\n{\"id\":\"c\"}\n");
        assert_eq!(t, b"{\"id\":\"a\"}\n{\"id\":\"b\",\"v\":2}\n{\"id\":\"c\"}\n");
        let diff3 = b"<<<<<<< ours\n{\"id\":\"b\",\"v\":1}\n||||||| \
            base\n{\"id\":\"b\",\"v\":0}\n=======\n{\"id\":\"b\",\"v\":2}\n>>>>>>> theirs\n";
        let [b, _, _] = sides_from_markers(diff3).expect("well formed").expect("has markers");
        assert_eq!(b, b"{\"id\":\"b\",\"v\":0}\n");
        assert!(sides_from_markers(b"<<<<<<< ours\n{\"id\":\"b\"}\n").is_err());
        assert!(sides_from_markers(b"{\"id\":\"b\"}\n").expect("fine").is_none());
    }

    #[test]
    fn dedupe_merges_copies_field_by_field() {
        let content = b"{\"id\":\"a\",\"title\":\"T\",\"labels\":[\"x\"],\"updated_at\":\"2026-01-01T00:00:00Z\"}\n{\"id\":\"b\"}\n{\"id\
            \":\"a\",\"title\":\"T\",\"labels\":[\"y\"],\"updated_at\":\"2026-01-02T00:00:00Z\"}\n{\"id\":\"b\"}\n";
        let (out, done, warnings) = dedupe(content, &MergeOptions::default());
        assert!(warnings.is_empty());
        assert_eq!(done.len(), 2);
        let text = String::from_utf8(out).expect("utf8");
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.starts_with("{\"id\":\"a\",\"title\":\"T\",\"labels\":[\"x\",\"y\"]"), "{text}");
    }
}

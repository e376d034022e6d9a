//! The merge stamp: the `updated_at` a merge writes on a record it changed (README, "Timestamps of
//! merged records").
//!
//! br imports by last-write-wins on `updated_at` and skips a record whose timestamp it has
//! already seen, so a record that equals neither side must be newer than both: one tick after the
//! later side's `updated_at`, never before the merge's own clock. In the merge, "stamp" means this
//! value alone; the sides' own `updated_at` values it is computed from are called just that.
//! What else trackers expect of a record a merge writes (key order, array sorts) is in
//! [`crate::conventions`].

use std::borrow::Cow;

use crate::record::Entry;
use crate::timestamp;

/// The merge stamp (README "Timestamps of merged records"): one tick after the later of
/// `sides_updated_at` (the sides' `updated_at` texts), never before `now`, the merge's one clock
/// (`BD_MERGE_NOW` or the system clock, read once per command by its caller). Every path that
/// stamps a record (field merge, renames, comment renumbering, resolve, dedupe, import) takes its
/// stamp from here, so a fixed clock fixes every stamp. `None` when no side has a timestamp.
pub(crate) fn merge_stamp(sides_updated_at: &[Option<String>], now: Option<timestamp::Instant>) -> Option<String> {
    timestamp::merge_stamp(sides_updated_at.iter().flatten().map(String::as_str), now)
}

/// Sets the `updated_at` entry to the [`merge_stamp`] of `sides_updated_at`. False when the record has
/// no timestamp entry or no side has a timestamp.
pub(crate) fn bump_updated_at(entries: &mut [Entry<'_>], sides_updated_at: &[Option<String>], now: Option<timestamp::Instant>) -> bool {
    let Some(entry) = entries.iter_mut().find(|e| e.key == "updated_at") else {
        return false;
    };
    let Some(next) = merge_stamp(sides_updated_at, now) else {
        return false;
    };
    // A timestamp has nothing to escape, so the new text is the string quoted.
    entry.raw_value = Cow::Owned(format!("\"{next}\""));
    true
}

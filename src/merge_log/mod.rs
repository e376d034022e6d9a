//! The merge log: every value a merge dropped, kept where the person can find it later.
//!
//! Every automatic merge policy drops a value somewhere (both sides retitled an issue: one title
//! survives), and a stderr line that scrolls away is no trace. So the driver, `bd-merge resolve`,
//! `dedupe`, `update-branch` and `bd-sync import`'s three-way merge append one JSON object per
//! dropped value, dropped record and renamed issue to `<git common dir>/beads/merge-log.jsonl`:
//! per clone (every worktree shares it), never committed. `bd-merge review` reads it back and
//! `--restore` puts a dropped value back (see [`restore`]).
//!
//! Writing it never fails a merge: every error comes back as one warning for the caller to print.
//! It is never written through a symlink (a hostile repository cannot aim it at another file).
//! Past [`ROTATE_BYTES`] the log becomes `merge-log.1.jsonl` (replacing the older one) and a new
//! log starts: 4 MiB holds about ten thousand decisions (an entry is a few hundred bytes), months
//! of an agent merging dozens of branches a day, and stays small enough to read whole on every
//! `review` and `bd-sync check` in milliseconds; two generations bound the disk use to 8 MiB.
//!
//! The bound holds for every append, whatever a merge drops: a value whose JSON text is longer
//! than [`VALUE_BYTES`] is logged cut to its beginning (the entry names what was cut and its full
//! size, see [`Cut`]; such an entry cannot be restored), and when one merge drops more than a
//! generation holds, the entries that fit are logged and one more entry counts the rest
//! ([`Reason::Omitted`]).
//!
//! Entries carry a sequence number, one more than the highest one logged, which `review` shows
//! and `--restore N` takes. Appends hold a lock (`merge-log.lock`, never opened through a link)
//! while they read that number and write, so merges running at once in several worktrees never
//! share a number. The log is read line by line and a line that is not an entry is skipped: a
//! line cut short by a crash or a full disk costs that line alone, since the next append starts
//! on a fresh line; a line longer than a whole generation (an older version's huge value) is
//! skipped without being read into memory.
//!
//! Two small files hold the highest number the post-merge hook has looked at
//! (`merge-log.announced`) and the highest one a person has listed with `review`
//! (`merge-log.reviewed`), so the hook speaks only of the merge that just ended (see [`announce`])
//! and `check` only of unread entries.

mod format;
mod marks;
mod record;
mod restore;
mod review;
#[cfg(test)]
mod tests;
mod types;

pub(crate) use format::prefix;
pub use format::{append, read_all, LOCK_NAME, LOG_NAME, ROTATED_NAME, ROTATE_BYTES, VALUE_BYTES};
pub use marks::{announce, mark_reviewed, unreviewed_since};
pub use record::{
    decision_log, entries, keep, log_dir, record, record_dedupe, record_import, COMMAND_ENV, DEDUPE_COMMAND, DRIVER_COMMAND,
    IMPORT_COMMAND, RESOLVE_COMMAND,
};
pub use restore::{restore, restore_entry, value_in_record};
pub use review::{address, parse_since, render, select, NotATime};
pub use types::{
    Announcement, Context, Cut, Entry, Filter, HookEvent, NotRestorable, Reason, Refusal, RestoreOutcome, Restored, Word,
    TRAILER_VALUE_BYTES,
};

//! What beads-git uses that only some systems have, and the portable way it takes elsewhere.
//!
//! Linux and the other unix systems give the crate a few things Windows lacks: `renameat2`'s
//! exchange for git's `%A`, a larger pipe, prefaulted read buffers, process groups and `poll` for
//! a command's time bound, `O_NOFOLLOW`, inode numbers and change times in a file's identity,
//! `kill(pid, 0)`, and SIGPIPE's default action. Each use is written as "the system's way, else
//! the portable way", and the portable way is compiled on every system, so it is not dead code
//! on the one that runs the test suite: with [`PORTABLE_ENV`] set to `1`, Linux takes the
//! portable way too (`tests/integration/portable.rs` runs the driver, the cache, the hooks and a
//! timed-out command so). The table of what differs where is in `docs/install.md#platforms`.
//!
//! Two things are not switched, because taking the other system's way would break Linux itself
//! rather than imitate Windows: file modes (git on Linux runs only executable hooks, so their
//! mode is set and checked, and a new issues file must not be private), and `O_NONBLOCK` when
//! opening an input (a FIFO exists only on unix, and opening one blocking would hang).

use std::sync::OnceLock;

/// The environment variable that makes Linux take the portable way (`1`); for testing.
pub const PORTABLE_ENV: &str = "BEADS_GIT_PORTABLE";

/// Whether [`PORTABLE_ENV`] asked for the portable way (read once per process).
pub fn portable_forced() -> bool {
    static FORCED: OnceLock<bool> = OnceLock::new();
    *FORCED.get_or_init(|| std::env::var_os(PORTABLE_ENV).is_some_and(|v| v == "1"))
}

/// Whether the Linux-only calls may be used: `renameat2`'s exchange, `F_SETPIPE_SZ`,
/// `MADV_POPULATE_WRITE`.
pub fn linux_calls() -> bool {
    cfg!(target_os = "linux") && !portable_forced()
}

/// Whether the unix calls may be used: process groups and `poll`, `O_NOFOLLOW`, inode numbers
/// and change times, `kill(pid, 0)`, SIGPIPE's default action.
pub fn unix_calls() -> bool {
    cfg!(unix) && !portable_forced()
}

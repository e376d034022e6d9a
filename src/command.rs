//! Running a command on the user's behalf (`bd-hook since-last --source-cmd`, a tracker's own export) with a
//! time bound that holds whatever the command does.
//!
//! A shell command can leave a background process behind that keeps its stdout open
//! (`tracker export; tracker daemon &`): waiting for the output to end then waits for that
//! process, and killing the shell at the timeout kills only the shell. A cron job that waits so
//! holds its lock for as long, and every later run finds it busy. So the command runs in its own
//! process group, its output is read here without blocking, and at the timeout the whole group is
//! stopped (SIGTERM, then SIGKILL a moment later for whatever ignored it) and reading stops: the
//! caller gets its error at the deadline, never later, and drops its locks. Once the command
//! itself has exited, its output is read for [`AFTER_EXIT`] more at most: then the group it left
//! is stopped and the caller has the output and a word that something lingered.
//!
//! Elsewhere than unix (and on Linux under the portable switch, [`crate::platform`]) there are no
//! process groups and no `poll`: a thread reads the output and hands it over, so the deadline
//! holds all the same, and at the deadline the command alone is killed (what it started in the
//! background runs on, and the thread blocked on its pipe ends with it).

use std::io::Read as _;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long the group has between SIGTERM and SIGKILL (process groups are a unix idea: elsewhere
/// the command alone is killed at once).
#[cfg_attr(not(unix), allow(dead_code))]
const TERM_GRACE: Duration = Duration::from_millis(200);

/// Why [`run_captured`] returned no output.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The command could not be started.
    #[error("could not start it: {0}")]
    Start(#[source] std::io::Error),
    /// The deadline passed: the command and its process group were stopped.
    #[error("{}", timed_out(*.after, *.exited))]
    TimedOut {
        /// The timeout.
        after: Duration,
        /// The command itself had exited (with this status) but something it started still held
        /// its stdout.
        exited: Option<ExitStatus>,
    },
    /// It wrote more than the limit to stdout: it was stopped with its process group.
    #[error("it wrote more than {} MiB to stdout and was stopped", .0 >> 20)]
    TooLarge(u64),
    /// Reading its output or waiting for it failed.
    #[error("{0}")]
    Io(#[source] std::io::Error),
}

fn timed_out(after: Duration, exited: Option<ExitStatus>) -> String {
    let secs = after.as_secs_f64();
    let group = crate::platform::unix_calls();
    match (exited, group) {
        (Some(_), true) => format!(
            "did not finish within {secs} s: it exited, but a process it started in the background still held its stdout; \
             that process and the rest of its process group were stopped (redirect a background process's output, e.g. `>/dev/null`)"
        ),
        (Some(_), false) => format!(
            "did not finish within {secs} s: it exited, but a process it started in the background still held its stdout \
             (it runs on: this system has no process groups; redirect a background process's output, e.g. `>/dev/null`)"
        ),
        (None, true) => format!("did not finish within {secs} s; it was stopped with every process it started"),
        (None, false) => format!("did not finish within {secs} s; it was stopped (what it started in the background runs on)"),
    }
}

/// How [`Captured::lingering`] was dealt with, for a caller's message.
pub fn lingering_stopped() -> &'static str {
    if crate::platform::unix_calls() {
        "that process group was stopped"
    } else {
        "that process runs on (this system has no process groups)"
    }
}

/// What a finished command left.
#[derive(Debug)]
pub struct Captured {
    /// How it exited.
    pub status: ExitStatus,
    /// All it wrote to stdout.
    pub stdout: Vec<u8>,
    /// The command exited, but something it started in the background still held its stdout
    /// [`AFTER_EXIT`] later: that process group was stopped, and `stdout` is what came before.
    pub lingering: bool,
}

/// How long the output is read after the command itself exited (a process it left in the
/// background may hold the pipe open; its group is then stopped).
pub const AFTER_EXIT: Duration = Duration::from_secs(2);

/// Runs `command` (its stdin and stderr as the caller set them) in a new process group, and
/// returns its stdout once the command has exited and its stdout has closed. At `timeout`, or
/// when stdout passes `limit` bytes, the whole group is stopped and an error returned at once.
pub fn run_captured(command: &mut Command, timeout: Duration, limit: u64) -> Result<Captured, CommandError> {
    run(command, timeout, limit, crate::platform::unix_calls())
}

/// [`run_captured`], the unix way (`grouped`: a process group, `poll`) or the portable way.
fn run(command: &mut Command, timeout: Duration, limit: u64, grouped: bool) -> Result<Captured, CommandError> {
    #[cfg(unix)]
    if grouped {
        use std::os::unix::process::CommandExt as _;
        command.process_group(0);
    }
    let deadline = Instant::now() + timeout;
    let mut child = command.stdout(Stdio::piped()).spawn().map_err(CommandError::Start)?;
    let mut group = Group { child: &mut child, stopped: false, grouped };
    let stdout = group.child.stdout.take().ok_or_else(|| CommandError::Io(std::io::Error::other("no stdout pipe")))?;
    let mut pipe = Pipe::new(stdout, grouped).map_err(|e| group.fail(CommandError::Io(e)))?;
    let mut out = Vec::new();
    let mut open = true;
    let mut status = None;
    let mut exited_at: Option<Instant> = None;
    let mut lingering = false;
    loop {
        if status.is_none() {
            status = group.child.try_wait().map_err(|e| group.fail(CommandError::Io(e)))?;
            if status.is_some() {
                exited_at = Some(Instant::now());
            }
        }
        if !open && status.is_some() {
            break;
        }
        let now = Instant::now();
        if let Some(at) = exited_at.filter(|at| now >= *at + AFTER_EXIT) {
            // The command is done; what holds the pipe is something it left behind.
            let _ = at;
            group.stop();
            lingering = true;
            break;
        }
        if now >= deadline {
            return Err(group.fail(CommandError::TimedOut { after: timeout, exited: status }));
        }
        let until = exited_at.map_or(deadline, |at| deadline.min(at + AFTER_EXIT));
        let wait = until.saturating_duration_since(now).min(Duration::from_millis(20));
        if !open {
            std::thread::sleep(wait);
            continue;
        }
        match pipe.drain(wait, &mut out, limit) {
            Ok(Drained::Open) => {}
            Ok(Drained::Closed) => open = false,
            Ok(Drained::TooLarge) => return Err(group.fail(CommandError::TooLarge(limit))),
            Err(e) => return Err(group.fail(CommandError::Io(e))),
        }
    }
    let status = status.expect("the loop ends only once the command exited");
    Ok(Captured { status, stdout: out, lingering })
}

/// The command's process group, stopped (and the command reaped) when a run fails.
struct Group<'a> {
    child: &'a mut Child,
    stopped: bool,
    /// The command leads its own process group (unix): the group is stopped, not the command alone.
    grouped: bool,
}

impl Group<'_> {
    /// Stops the whole group, reaps the command, and hands back `error`.
    fn fail(&mut self, error: CommandError) -> CommandError {
        self.stop();
        error
    }

    fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        #[cfg(unix)]
        if self.grouped {
            let Ok(pgid) = libc::pid_t::try_from(self.child.id()) else {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            };
            // SAFETY: kill(2) on the process group the command leads (`process_group(0)` made its
            // pid the group id); the command is not reaped yet, so the id cannot have been reused.
            unsafe { libc::kill(-pgid, libc::SIGTERM) };
            let until = Instant::now() + TERM_GRACE;
            while Instant::now() < until && !matches!(self.child.try_wait(), Ok(Some(_))) {
                std::thread::sleep(Duration::from_millis(10));
            }
            // Whatever ignored SIGTERM, a background process above all, goes now. The group id
            // stays reserved while any member lives, so this reaches only the command's own.
            // SAFETY: as above.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            let _ = self.child.wait();
            return;
        }
        let _ = self.grouped;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one [`Pipe::drain`] left.
enum Drained {
    /// The pipe is still open.
    Open,
    /// The writing end closed: everything is read.
    Closed,
    /// More than the limit came.
    TooLarge,
}

/// The command's stdout, read within a bound.
enum Pipe {
    /// Non-blocking, waited on with `poll` (unix).
    #[cfg(unix)]
    Polled(std::process::ChildStdout, Vec<u8>),
    /// Read by a thread that hands over what it read: a blocking read cannot be bounded otherwise.
    Threaded(std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>),
}

impl Pipe {
    /// The unix way when `polled`, else the reading thread.
    fn new(stdout: std::process::ChildStdout, polled: bool) -> std::io::Result<Pipe> {
        #[cfg(unix)]
        if polled {
            set_nonblocking(&stdout)?;
            return Ok(Pipe::Polled(stdout, vec![0u8; 64 << 10]));
        }
        let _ = polled;
        let (send, receive) = std::sync::mpsc::sync_channel(4);
        let mut stdout = stdout;
        std::thread::spawn(move || {
            let mut chunk = vec![0u8; 64 << 10];
            loop {
                let read = match stdout.read(&mut chunk) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    read => read.map(|n| chunk[..n].to_vec()),
                };
                let last = !matches!(&read, Ok(bytes) if !bytes.is_empty());
                // The reader gone (a deadline, a limit): nobody wants the rest.
                if send.send(read).is_err() || last {
                    return;
                }
            }
        });
        Ok(Pipe::Threaded(receive))
    }

    /// Appends what the pipe has to `out`, waiting at most `wait` for the first bytes.
    fn drain(&mut self, wait: Duration, out: &mut Vec<u8>, limit: u64) -> std::io::Result<Drained> {
        let take = |bytes: &[u8], out: &mut Vec<u8>| {
            if (out.len() + bytes.len()) as u64 > limit {
                return false;
            }
            out.extend_from_slice(bytes);
            true
        };
        match self {
            #[cfg(unix)]
            Pipe::Polled(stdout, chunk) => {
                if !readable(stdout, wait) {
                    return Ok(Drained::Open);
                }
                // Drain what is there; the pipe is non-blocking, so this never waits.
                loop {
                    match stdout.read(chunk) {
                        Ok(0) => return Ok(Drained::Closed),
                        Ok(n) if !take(&chunk[..n], out) => return Ok(Drained::TooLarge),
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(Drained::Open),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Pipe::Threaded(receive) => {
                let mut next = receive.recv_timeout(wait).map_err(|e| e == std::sync::mpsc::RecvTimeoutError::Timeout);
                loop {
                    match next {
                        Ok(Ok(bytes)) if bytes.is_empty() => return Ok(Drained::Closed),
                        Ok(Ok(bytes)) if !take(&bytes, out) => return Ok(Drained::TooLarge),
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => return Err(e),
                        Err(true) => return Ok(Drained::Open),
                        Err(false) => return Ok(Drained::Closed),
                    }
                    next = receive.try_recv().map_err(|e| e == std::sync::mpsc::TryRecvError::Empty);
                }
            }
        }
    }
}

#[cfg(unix)]
fn set_nonblocking(pipe: &std::process::ChildStdout) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd as _;
    let fd = pipe.as_raw_fd();
    // SAFETY: fcntl(2) on a descriptor we own.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Waits at most `wait` for the pipe to have data (or be closed).
#[cfg(unix)]
fn readable(pipe: &std::process::ChildStdout, wait: Duration) -> bool {
    use std::os::unix::io::AsRawFd as _;
    let mut fds = libc::pollfd { fd: pipe.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX).max(1);
    // SAFETY: poll(2) on one valid pollfd that outlives the call.
    let n = unsafe { libc::poll(&raw mut fds, 1, ms) };
    n > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script).stdin(Stdio::null());
        c
    }

    /// Both ways: the unix one (process group, `poll`) and the portable one (a reading thread).
    const WAYS: [bool; 2] = [true, false];

    #[test]
    fn output_of_a_command_that_ends_is_returned_whole() {
        for grouped in WAYS {
            let got = run(&mut sh("printf 'a\\nb\\n'; exit 3"), Duration::from_secs(10), 100, grouped).expect("runs");
            assert_eq!(got.stdout, b"a\nb\n", "grouped: {grouped}");
            assert_eq!(got.status.code(), Some(3));
            assert!(!got.lingering);
        }
    }

    #[test]
    fn output_larger_than_a_pipe_comes_whole() {
        for grouped in WAYS {
            let got = run(&mut sh("head -c 3000000 /dev/zero"), Duration::from_secs(20), 4 << 20, grouped).expect("runs");
            assert_eq!(got.stdout.len(), 3_000_000, "grouped: {grouped}");
        }
    }

    #[test]
    fn more_output_than_the_limit_stops_the_command() {
        for grouped in WAYS {
            let err = run(&mut sh("yes"), Duration::from_secs(10), 1 << 20, grouped).expect_err("too large");
            assert!(matches!(err, CommandError::TooLarge(_)), "grouped: {grouped}: {err}");
        }
    }

    #[test]
    fn a_command_past_its_timeout_is_stopped_at_the_deadline() {
        for grouped in WAYS {
            let start = Instant::now();
            let err = run(&mut sh("sleep 30"), Duration::from_millis(300), 100, grouped).expect_err("timed out");
            assert!(matches!(err, CommandError::TimedOut { exited: None, .. }), "grouped: {grouped}: {err}");
            assert!(start.elapsed() < Duration::from_secs(5), "grouped: {grouped}: {:?}", start.elapsed());
        }
    }

    #[test]
    fn a_background_process_holding_the_output_does_not_hold_the_caller() {
        for grouped in WAYS {
            let start = Instant::now();
            let got = run(&mut sh("echo done; sleep 30 &"), Duration::from_secs(20), 100, grouped).expect("runs");
            assert_eq!(got.stdout, b"done\n", "grouped: {grouped}");
            assert!(got.lingering, "grouped: {grouped}");
            assert!(start.elapsed() < Duration::from_secs(10), "grouped: {grouped}: {:?}", start.elapsed());
        }
    }
}

//! What the benchmark binaries share: arguments, sizes, data generation and measuring a child
//! process (wall time and peak RSS, read by `wait4`).

#![allow(dead_code)] // each bench uses part of it

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The value after `name` on the command line, or `default`.
pub fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned()).unwrap_or_else(|| default.to_owned())
}

/// `10k` -> 10,000; `1m` -> 1,000,000.
pub fn issues_in(label: &str) -> usize {
    let (digits, unit) = match label.strip_suffix('m') {
        Some(d) => (d, 1_000_000),
        None => (label.trim_end_matches('k'), 1000),
    };
    digits.parse::<usize>().expect("sizes like 1k, 10k, 100k, 1m") * unit
}

/// The generator: gen.py itself, through `gen_scale.py`, which gives gen.py's bytes in linear
/// time (gen.py alone is quadratic and does not finish at 1M).
pub fn gen_command() -> Command {
    let mut c = Command::new("python3");
    c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/gen_scale.py"));
    c
}

/// Writes gen.py's base file of `n` issues with `seed` to `path`.
pub fn gen_base(path: &Path, n: usize, seed: u32) {
    std::fs::create_dir_all(path.parent().expect("a file in a directory")).expect("mkdir");
    let ok = gen_command().args(["base", "--n", &n.to_string(), "--seed", &seed.to_string(), "--out"]).arg(path).status().expect("python3");
    assert!(ok.success(), "gen.py failed");
}

/// One finished child process.
pub struct Measured {
    pub wall: Duration,
    /// CPU time, user and system, of the child and the processes it waited for.
    pub cpu: Duration,
    /// Peak resident set size, KiB.
    pub rss_kib: i64,
    pub code: i32,
}

/// Runs a command to completion (stdin and stderr closed) and measures it.
pub fn measure(cmd: &mut Command) -> Measured {
    // A child started by posix_spawn shares our address space until it execs, and Linux then
    // records our *peak* RSS as the start of its own: a bench that once read a 1 GB file would
    // report 1 GB for every command. An empty pre_exec hook makes std fork instead, and a forked
    // child starts from our current RSS, which is small while we measure.
    // SAFETY: the hook does nothing, so it is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, || Ok(()));
    }
    let start = Instant::now();
    // Reaped by wait4 below (which also reports the peak RSS), not by Child::wait.
    #[allow(clippy::zombie_processes)]
    let child = cmd.stdin(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data, zero is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    assert_eq!(r, pid, "wait4");
    let wall = start.elapsed();
    let rss_kib = if cfg!(target_os = "macos") { usage.ru_maxrss / 1024 } else { usage.ru_maxrss };
    let time = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    Measured { wall, cpu: time(usage.ru_utime) + time(usage.ru_stime), rss_kib, code: libc::WEXITSTATUS(status) }
}

/// The median of run-by-run figures (ratios).
pub fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median, in milliseconds.
pub fn median_ms(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

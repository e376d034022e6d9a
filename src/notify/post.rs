//! Delivering "this work item changed" notices to a Gemba-style server, fail-open.
//!
//! `POST {url}/api/workitems/notify` with `{"work_item_id": ..., "source": ...}` per id. The
//! notifier runs inside git hooks and scripts, so it must never get in the way: requests go out
//! concurrently over a small pool of reused connections, each with its own timeout, all within
//! one overall deadline; connection errors, 429 and 5xx are retried with jittered exponential
//! backoff (honouring `Retry-After`) while the deadline allows. A 404 means the server does not
//! know the id (e.g. it was deleted) and counts as delivered. The bearer token is only ever put in
//! the `Authorization` header: never in messages, logs or errors.
//!
//! Nothing a server sends can crash it or turn it into a request storm: `Retry-After` only ever
//! lengthens the wait, never past the deadline, and the wait between two attempts at one id is
//! never under [`RETRY_FLOOR`]; response bodies are read up to a small limit; what a server says
//! (a `Location`, an error) is cut and escaped before it is shown.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

/// The notifier's settings that can live in git config as well as in the environment: (name,
/// environment variable, git config key). The environment wins; git config makes a setting hold
/// for every shell, cron job and hook of the clone. The token is not among them: it stays in the
/// environment (`GEMBA_NOTIFY_AUTH`) or a file (`--auth-file`), never in git config.
pub const SETTINGS: [(&str, &str, &str); 3] = [
    ("url", "GEMBA_NOTIFY_URL", "beads.notifyUrl"),
    ("workspace", "GEMBA_NOTIFY_WORKSPACE", "beads.notifyWorkspace"),
    ("source", "GEMBA_NOTIFY_SOURCE", "beads.notifySource"),
];

/// One notifier setting and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    /// `url`, `workspace` or `source`.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// The environment variable or `git config` key it was read from.
    pub from: String,
}

/// The settings in force for a hook run in `dir`, each from its environment variable when that is
/// set and not empty, else from git config; unset ones are left out.
pub fn settings(dir: &std::path::Path) -> Vec<Setting> {
    settings_with(dir, None).0
}

/// [`settings`], and in the same `git config` call the value of one more key (`also`, as git
/// prints it: lowercase, e.g. `beads.commitcomments`; the last value wins). The post-commit hook
/// needs the notifier's settings and `beads.commitComments`: one git process for both.
pub fn settings_with(dir: &std::path::Path, also: Option<&str>) -> (Vec<Setting>, Option<String>) {
    let from_env = |var: &str| std::env::var(var).ok().filter(|v| !v.is_empty());
    // One git process for all the keys, and none when the environment names them all and no
    // other key is asked for (the hooks run this on every commit). git prints each key
    // lowercased (`beads.notifyurl`).
    // Nor when git's configuration files name none of the keys (read without git; see
    // `config_names_none_of` for when that is certain).
    let words: Vec<&str> = std::iter::once("notify").chain(also.and_then(|key| key.rsplit('.').next())).collect();
    let config: Vec<(String, String)> =
        if also.is_none() && SETTINGS.iter().all(|(_, var, _)| from_env(var).is_some()) || crate::git::config_names_none_of(dir, &words) {
            Vec::new()
        } else {
            let pattern = match also {
                Some(key) => format!(r"^(beads\.notify(url|workspace|source)|{})$", key.replace('.', r"\.")),
                None => r"^beads\.notify(url|workspace|source)$".to_owned(),
            };
            // `-z`: each entry is `key\nvalue\0`, so a value holding a newline stays whole; a key
            // without a value (a git boolean's `true`) has no newline.
            crate::git::run(dir, &["config", "-z", "--get-regexp", &pattern])
                .unwrap_or_default()
                .split('\0')
                .map(|e| e.trim_start_matches('\n'))
                .filter(|e| !e.is_empty())
                .map(|e| e.split_once('\n').map_or((e.to_owned(), String::new()), |(k, v)| (k.to_owned(), v.to_owned())))
                .collect()
        };
    let extra = also.and_then(|key| config.iter().rev().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.clone()));
    let found = SETTINGS
        .iter()
        .filter_map(|&(name, var, key)| {
            if let Some(value) = from_env(var) {
                return Some(Setting { name, value, from: var.to_owned() });
            }
            // The last value wins, as `git config --get` takes it.
            let value = config.iter().rev().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.clone()).filter(|v| !v.is_empty())?;
            Some(Setting { name, value, from: format!("git config {key}") })
        })
        .collect();
    (found, extra)
}

/// Where and how to send.
#[derive(Clone)]
pub struct Target {
    /// Base URL (`GEMBA_NOTIFY_URL`); a trailing `/` is ignored.
    pub url: String,
    /// Bearer token, if any.
    pub token: Option<String>,
    /// The `source` field of every notice.
    pub source: String,
    /// Prefix ids as `PREFIX/<id>`.
    pub workspace: Option<String>,
}

/// `url` as we print it: its user info (`user:password@`), every query value and the fragment
/// replaced by `***`, so a token in a URL never reaches a terminal or a CI log
/// (`https://***@host/path?token=***`).
pub fn redacted_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let (rest, fragment) = match rest.split_once('#') {
        Some((rest, _)) => (rest, "#***"),
        None => (rest, ""),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => {
            let parts: Vec<String> = query
                .split('&')
                .map(|part| match part.split_once('=') {
                    Some((key, _)) => format!("{key}=***"),
                    None if part.is_empty() => String::new(),
                    None => "***".to_owned(),
                })
                .collect();
            (rest, format!("?{}", parts.join("&")))
        }
        None => (rest, String::new()),
    };
    let (authority, path) = rest.find('/').map_or((rest, ""), |at| rest.split_at(at));
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => authority.to_owned(),
    };
    format!("{scheme}{authority}{path}{query}{fragment}")
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &redacted_url(&self.url))
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .field("source", &self.source)
            .field("workspace", &self.workspace)
            .finish()
    }
}

impl Target {
    /// The endpoint.
    pub fn endpoint(&self) -> String {
        format!("{}/api/workitems/notify", self.url.trim_end_matches('/'))
    }

    /// The JSON body for one id.
    pub fn body(&self, id: &str) -> String {
        let item = match &self.workspace {
            Some(prefix) if !prefix.is_empty() => format!("{prefix}/{id}"),
            _ => id.to_owned(),
        };
        serde_json::json!({ "work_item_id": item, "source": self.source }).to_string()
    }
}

/// Timing and concurrency.
#[derive(Debug, Clone, Copy)]
pub struct Delivery {
    /// Everything must be done by then (the total of `--timeout`).
    pub deadline: Instant,
    /// One request may take at most this long.
    pub per_request: Duration,
    /// Requests in flight at once.
    pub concurrency: usize,
}

impl Delivery {
    /// Defaults for a total time budget: 4 in flight, each request at most 1 s. A budget too
    /// large for the clock is cut to a year.
    pub fn within(total: Duration) -> Delivery {
        let total = total.min(Duration::from_secs(365 * 24 * 3600));
        let now = Instant::now();
        let deadline = now.checked_add(total).unwrap_or(now);
        Delivery { deadline, per_request: Duration::from_secs(1).min(total), concurrency: 4 }
    }
}

/// The least time between two attempts at one id, whatever the server says. 100 ms: a server
/// answering `Retry-After: 0` (or a 503 in a microsecond) then costs at most 10 requests a
/// second per id in flight, 20 per id in the default 2 s budget (the jittered backoff, which
/// doubles from 100 ms, keeps it nearer 5); yet a server that really asks for "retry now" still
/// gets several tries within a commit's 2 s.
pub const RETRY_FLOOR: Duration = Duration::from_millis(100);

/// The most of a response body read (to reuse the connection); a longer body is dropped with
/// its connection.
const MAX_BODY: u64 = 64 << 10;

/// The most characters of a server's words (a `Location`, an error) put in a message.
const MAX_QUOTED: usize = 120;

/// The wait before attempt `attempt + 1` (1-based `attempt` just failed): jittered exponential
/// backoff from 100 ms, at least [`RETRY_FLOOR`], lengthened (never shortened) by `Retry-After`.
pub fn retry_wait(attempt: u32, jitter: f64, retry_after: Option<Duration>) -> Duration {
    let base = Duration::from_millis(50u64 << attempt.clamp(1, 6));
    let jitter = if jitter.is_finite() { jitter.clamp(0.0, 1.0) } else { 0.5 };
    let backoff = base.mul_f64(0.5 + jitter).max(RETRY_FLOOR);
    backoff.max(retry_after.unwrap_or_default())
}

/// `Retry-After` in seconds (an HTTP date, a negative or an unreadable value is ignored: the
/// backoff applies). Any number of seconds is accepted; the deadline bounds the wait.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let v = value.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(v.parse::<u64>().map(Duration::from_secs).unwrap_or(Duration::MAX))
}

/// How one id ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// A 2xx answer.
    Delivered,
    /// 404: the server does not know the id; not retried, not a failure.
    Unknown,
    /// Still not delivered at the deadline, or refused for good (another 4xx).
    Failed {
        /// Why, without the token (the same words for every id that failed the same way).
        reason: String,
        /// Requests made for this id.
        attempts: u32,
    },
}

/// What happened to every id, in the order given.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// `(id, outcome)` per id.
    pub results: Vec<(String, Outcome)>,
}

impl Report {
    /// Ids that did not get through.
    pub fn failed(&self) -> impl Iterator<Item = (&str, &str)> {
        self.results.iter().filter_map(|(id, o)| match o {
            Outcome::Failed { reason, .. } => Some((id.as_str(), reason.as_str())),
            _ => None,
        })
    }

    /// True when every id was delivered (or is unknown to the server).
    pub fn all_delivered(&self) -> bool {
        self.failed().next().is_none()
    }

    /// One line for the whole batch, or `None` when everything got through: how many ids
    /// failed, the first few of them (escaped, cut), and each way of failing with its count
    /// (at most three named). A down server gives one line, not one per id.
    pub fn failure_summary(&self) -> Option<String> {
        let mut ids: Vec<&str> = Vec::new();
        let mut ways: Vec<(&str, usize, u32)> = Vec::new();
        for (id, o) in &self.results {
            let Outcome::Failed { reason, attempts } = o else { continue };
            ids.push(id);
            match ways.iter_mut().find(|w| w.0 == reason.as_str()) {
                Some(w) => {
                    w.1 += 1;
                    w.2 += attempts;
                }
                None => ways.push((reason, 1, *attempts)),
            }
        }
        if ids.is_empty() {
            return None;
        }
        const SHOWN: usize = 3;
        let mut names: Vec<String> = ids.iter().take(SHOWN).map(|id| crate::record::printable(id, 40)).collect();
        if ids.len() > SHOWN {
            names.push(format!("and {} more", ids.len() - SHOWN));
        }
        let mut why: Vec<String> =
            ways.iter().take(SHOWN).map(|(reason, n, attempts)| format!("{reason} ({n} id(s), {attempts} request(s))")).collect();
        if ways.len() > SHOWN {
            why.push(format!("{} other reason(s)", ways.len() - SHOWN));
        }
        Some(format!("{} id(s) not delivered ({}): {}", ids.len(), names.join(", "), why.join("; ")))
    }
}

/// A reusable client (connection pool) for one target.
pub struct Notifier {
    agent: ureq::Agent,
    target: Target,
}

impl Notifier {
    /// Builds the client. Proxies come from `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`.
    pub fn new(target: Target, concurrency: usize) -> Notifier {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // A redirect would be followed as a GET without the body: never success.
            .max_redirects(0)
            .max_idle_connections_per_host(concurrency.max(1))
            .timeout_global(Some(Duration::from_secs(30)))
            .user_agent(concat!("bd-hook/", env!("CARGO_PKG_VERSION")))
            .build();
        Notifier { agent: ureq::Agent::new_with_config(config), target }
    }

    /// Sends one notice per id, concurrently, until all are settled or the deadline passes.
    pub fn send(&self, ids: &[String], delivery: Delivery) -> Report {
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; ids.len()]);
        let workers = delivery.concurrency.clamp(1, 16).min(ids.len().max(1));
        std::thread::scope(|s| {
            for w in 0..workers {
                let (next, results) = (&next, &results);
                s.spawn(move || {
                    let mut rng = Jitter::new(w as u64);
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(id) = ids.get(i) else { break };
                        let outcome = self.send_one(id, delivery, &mut rng);
                        results.lock().expect("no worker panics while holding the lock")[i] = Some(outcome);
                    }
                });
            }
        });
        let results = results.into_inner().expect("workers are done");
        Report {
            results: ids
                .iter()
                .cloned()
                .zip(results.into_iter().map(|o| o.unwrap_or(Outcome::Failed { reason: "not attempted".into(), attempts: 0 })))
                .collect(),
        }
    }

    fn send_one(&self, id: &str, delivery: Delivery, rng: &mut Jitter) -> Outcome {
        let endpoint = self.target.endpoint();
        let body = self.target.body(id);
        let mut attempt = 0u32;
        loop {
            let Some(left) = delivery.deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) else {
                let reason = if attempt == 0 { "deadline passed before it could be sent" } else { "deadline passed" };
                return Outcome::Failed { reason: reason.into(), attempts: attempt };
            };
            let mut request = self
                .agent
                .post(&endpoint)
                .config()
                .timeout_global(Some(delivery.per_request.min(left)))
                .build()
                .header("Content-Type", "application/json");
            if let Some(token) = &self.target.token {
                request = request.header("Authorization", &format!("Bearer {token}"));
            }
            attempt += 1;
            let (retry_reason, retry_after) = match request.send(body.as_str()) {
                Ok(mut response) => {
                    let status = response.status().as_u16();
                    let location = response.headers().get("location").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
                    let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
                    // Drain a short body so the connection goes back to the pool; a longer one
                    // is dropped with its connection.
                    let _ = response.body_mut().with_config().limit(MAX_BODY).read_to_vec();
                    match status {
                        200..=299 => return Outcome::Delivered,
                        404 => return Outcome::Unknown,
                        429 | 500..=599 => (format!("HTTP {status}"), retry_after),
                        300..=399 => {
                            let to = location.map(|l| format!(" to {}", crate::record::printable(&l, MAX_QUOTED))).unwrap_or_default();
                            return Outcome::Failed {
                                reason: format!("HTTP {status} redirect{to}: not followed (fix the notify URL)"),
                                attempts: attempt,
                            };
                        }
                        _ => return Outcome::Failed { reason: format!("HTTP {status}"), attempts: attempt },
                    }
                }
                // A URL or proxy setting that cannot work does not get better by retrying.
                Err(e) if is_permanent(&e) => {
                    return Outcome::Failed {
                        reason: format!("{}: not retried (fix the notify URL or proxy)", describe(&e)),
                        attempts: attempt,
                    };
                }
                Err(e) => (describe(&e), None),
            };
            let wait = retry_wait(attempt, rng.next_f64(), retry_after);
            // Clamped to the time left: a wait that would end past the deadline ends the tries now.
            let left = delivery.deadline.saturating_duration_since(Instant::now());
            if wait >= left {
                return Outcome::Failed { reason: format!("{retry_reason} until the deadline"), attempts: attempt };
            }
            std::thread::sleep(wait);
        }
    }
}

/// Errors of the request itself (a malformed URL, an unusable proxy, https required), which no
/// retry can fix.
fn is_permanent(e: &ureq::Error) -> bool {
    matches!(
        e,
        ureq::Error::Http(_)
            | ureq::Error::BadUri(_)
            | ureq::Error::InvalidProxyUrl
            | ureq::Error::RequireHttpsOnly(_)
            | ureq::Error::TlsRequired
    )
}

/// An error message that cannot leak the token (ureq errors never carry request headers; this
/// keeps it that way if that ever changes).
fn describe(e: &ureq::Error) -> String {
    let text = e.to_string();
    if text.to_ascii_lowercase().contains("bearer") {
        "request failed".into()
    } else {
        crate::record::printable(&text, MAX_QUOTED)
    }
}

/// Small xorshift for backoff jitter; seeded from the clock and the worker number.
struct Jitter(u64);

impl Jitter {
    fn new(worker: u64) -> Jitter {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
        Jitter((t ^ (worker.wrapping_mul(0x9E37_79B9_7F4A_7C15))) | 1)
    }

    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_only_lengthens_the_wait_and_never_goes_under_the_floor() {
        for attempt in [0, 1, 2, 40, u32::MAX] {
            for jitter in [0.0, 0.5, 1.0, -3.0, f64::NAN] {
                let zero = retry_wait(attempt, jitter, Some(Duration::ZERO));
                assert!(zero >= RETRY_FLOOR, "{attempt} {jitter}: {zero:?}");
                assert!(zero <= Duration::from_millis(50 << 6).mul_f64(1.5), "{attempt}: capped backoff");
                assert_eq!(retry_wait(attempt, jitter, Some(Duration::MAX)), Duration::MAX);
            }
        }
        assert_eq!(parse_retry_after("18446744073709551615"), Some(Duration::from_secs(u64::MAX)));
        assert_eq!(parse_retry_after("100000000000000000000000000"), Some(Duration::MAX));
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        for ignored in ["-1", "", "1.5", "Thu, 01 Jan 1970 00:00:00 GMT", "+5"] {
            assert_eq!(parse_retry_after(ignored), None, "{ignored:?}");
        }
        // A budget the clock cannot hold does not overflow.
        let d = Delivery::within(Duration::MAX);
        assert!(d.deadline > Instant::now());
    }

    #[test]
    fn failures_are_one_line_per_batch() {
        let failed = |reason: &str| Outcome::Failed { reason: reason.into(), attempts: 2 };
        let mut results: Vec<(String, Outcome)> = (0..115).map(|i| (format!("bd-{i}"), failed("HTTP 503 until the deadline"))).collect();
        results.push(("x\u{1b}]0;t\u{7}".into(), failed("deadline passed")));
        results.push(("ok".into(), Outcome::Delivered));
        let line = Report { results }.failure_summary().expect("a summary");
        assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line}");
        assert!(
            line.starts_with(
                "116 id(s) not delivered (bd-0, bd-1, bd-2, and 113 more): HTTP 503 until the deadline (115 id(s), 230 \
            request(s)); deadline passed (1 id(s), 2 request(s))"
            ),
            "{line}"
        );
        assert_eq!(Report { results: vec![("a".into(), Outcome::Unknown)] }.failure_summary(), None);
    }
}

#[cfg(test)]
mod redaction_tests {
    use super::redacted_url;

    #[test]
    fn user_info_query_values_and_the_fragment_are_hidden() {
        assert_eq!(
            redacted_url("https://user:pw@gemba.example:8443/base?token=abc&x=1#frag"),
            "https://***@gemba.example:8443/base?token=***&x=***#***"
        );
        assert_eq!(redacted_url("http://localhost:8080"), "http://localhost:8080");
        assert_eq!(redacted_url("http://h/p?secret"), "http://h/p?***");
        assert_eq!(redacted_url("http://a@b@h/"), "http://***@h/", "the last @ ends the user info");
        assert_eq!(redacted_url("http://h/a@b"), "http://h/a@b", "an @ in the path is not user info");
        assert_eq!(redacted_url("not a url token=x"), "not a url token=x");
    }
}

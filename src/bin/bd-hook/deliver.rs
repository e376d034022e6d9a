//! Where a mode's ids go: to the server (the notifier, within `--timeout`), or to stdout under
//! `--dry-run` or without a server. The server comes from the flags, the environment or git
//! config, in that order, so a hook run from any shell or cron job of this clone finds the same.

use std::io::Write;
use std::time::Duration;

use anyhow::{Context, Result};
use beads_git::notify::{Delivery, Notifier, Report, Target};

use crate::Cli;

/// The ids' destination for one run.
pub(crate) struct Outlet {
    target: Option<Target>,
    notifier: Option<Notifier>,
    /// `-z`: NUL-separated output.
    null: bool,
    /// `--dry-run`.
    dry_run: bool,
    /// `--timeout`, per batch.
    total: Duration,
    concurrency: usize,
}

impl Outlet {
    /// The outlet the flags describe; `None` when there is no server to send to and no
    /// `--dry-run` (nothing to do).
    pub(crate) fn new(cli: &Cli) -> Result<Option<Outlet>> {
        Outlet::with_settings(cli, &beads_git::notify::settings(std::path::Path::new(".")))
    }

    /// [`Outlet::new`], with the settings git config and the environment hold already read.
    pub(crate) fn with_settings(cli: &Cli, settings: &[beads_git::notify::Setting]) -> Result<Option<Outlet>> {
        let target = target(cli, settings)?;
        if target.is_none() && !cli.dry_run {
            return Ok(None);
        }
        let concurrency = usize::from(cli.concurrency);
        Ok(Some(Outlet {
            notifier: target.clone().map(|t| Notifier::new(t, concurrency)),
            target,
            null: cli.null,
            dry_run: cli.dry_run,
            total: Duration::try_from_secs_f64(cli.timeout).unwrap_or(Duration::from_secs(2)),
            concurrency,
        }))
    }

    /// Whether ids are printed rather than sent.
    pub(crate) fn dry(&self) -> bool {
        self.dry_run || self.notifier.is_none()
    }

    /// Prints what would be sent for `ids` on stdout.
    pub(crate) fn print(&self, ids: &[String]) {
        let mut out = std::io::stdout().lock();
        let end: &[u8] = if self.null { b"\0" } else { b"\n" };
        for id in ids {
            // NUL-separated ids go to a program as they are; one per line, they are escaped
            // (a newline in an id would otherwise forge a second one).
            let body = self.target.as_ref().map(|t| t.body(id)).unwrap_or_else(|| {
                if self.null {
                    id.clone()
                } else {
                    beads_git::record::escaped(id).into_owned()
                }
            });
            let _ = out.write_all(body.as_bytes()).and_then(|()| out.write_all(end));
        }
        let _ = out.flush();
    }

    /// Sends `ids`, says in one line what did not get through, and returns the report (`None`
    /// without a server).
    pub(crate) fn send(&self, ids: &[String]) -> Option<Report> {
        let report = self.notifier.as_ref()?.send(ids, Delivery { concurrency: self.concurrency, ..Delivery::within(self.total) });
        if let Some(line) = report.failure_summary() {
            eprintln!("bd-hook: {}", beads_git::record::escaped(&line));
        }
        Some(report)
    }

    /// Prints or sends `ids`; whether every one was delivered (a print always is).
    pub(crate) fn deliver(&self, ids: &[String]) -> bool {
        if self.dry() {
            self.print(ids);
            return true;
        }
        self.send(ids).is_none_or(|r| r.all_delivered())
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The server: flags first, then the environment, then git config (`beads.notifyUrl`, ...).
fn target(cli: &Cli, settings: &[beads_git::notify::Setting]) -> Result<Option<Target>> {
    let setting = |name: &str| settings.iter().find(|s| s.name == name).map(|s| s.value.clone());
    let Some(url) = cli.url.clone().or_else(|| setting("url")) else {
        return Ok(None);
    };
    let token = match &cli.auth_file {
        Some(f) => {
            let bytes = beads_git::safe_fs::bounded::read_regular(f, 64 << 10)
                .with_context(|| format!("reading the token file {}", f.display()))?;
            Some(String::from_utf8(bytes).with_context(|| format!("the token file {} is not UTF-8", f.display()))?.trim().to_owned())
        }
        None => env("GEMBA_NOTIFY_AUTH"),
    };
    Ok(Some(Target {
        url,
        token: token.filter(|t| !t.is_empty()),
        source: cli.source.clone().or_else(|| setting("source")).unwrap_or_else(|| "bd-hook".into()),
        workspace: cli.workspace.clone().or_else(|| setting("workspace")),
    }))
}

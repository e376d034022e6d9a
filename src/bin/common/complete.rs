//! Dynamic shell completion that a stranger's repository cannot turn into code.
//!
//! Completion candidates come from the repository: issue ids and titles from the issues file,
//! file names from the work tree. clap's shell adapters hand them to the shell as they are, and
//! bash then inserts them unquoted (an id holding `$(...)` runs when the line runs), glob-expands
//! them, and splits them on its separator byte; zsh prints them raw in its list (escape sequences
//! reach the terminal). So the three shells' adapters here are clap's own registration scripts with
//! one choke point in front of every answer: a candidate is offered only when every byte of it is
//! one no shell treats specially ([`is_safe_candidate`]), and help text is escaped to one printable
//! line. A candidate outside that set is left out (the user can still type it, quoted); ids and
//! paths in real trackers never need more.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{Bash, EnvCompleter, Fish, Shells, Zsh};

/// Bytes a completion candidate may hold: letters, digits and punctuation that no shell quotes,
/// expands or splits on (no blank, quote, `$`, backquote, glob character, `~`, `!`, `;`, `&`, `|`,
/// `<`, `>`, parenthesis, brace, backslash or control character).
fn is_safe_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.,+@%=/:".contains(&b)
}

/// Whether `value` may be inserted on a command line as it is, in bash, zsh and fish: non-empty,
/// only [`is_safe_byte`]s, and not starting with `=` (zsh expands `=name` to a command's path).
pub fn is_safe_candidate(value: &str) -> bool {
    !value.is_empty() && !value.starts_with('=') && value.bytes().all(is_safe_byte)
}

/// The candidates clap's engine finds for `args` at `index`, less the unsafe ones, each with its
/// help escaped to one printable line.
fn safe_candidates(
    cmd: &mut clap::Command,
    args: Vec<OsString>,
    index: usize,
    dir: Option<&Path>,
) -> std::io::Result<Vec<(String, Option<String>)>> {
    let found: Vec<CompletionCandidate> = clap_complete::engine::complete(cmd, args, index, dir)?;
    Ok(found
        .into_iter()
        .filter_map(|c| {
            let value = c.get_value().to_str()?.to_owned();
            if !is_safe_candidate(&value) {
                return None;
            }
            let help = c.get_help().map(|h| beads_git::record::printable(&h.to_string(), 80));
            Some((value, help))
        })
        .collect())
}

fn env_usize(name: &str) -> usize {
    std::env::var(name).ok().and_then(|i| i.parse().ok()).unwrap_or_default()
}

/// The separator the registration script asked for (`_CLAP_IFS`), else a newline.
fn separator() -> String {
    std::env::var("_CLAP_IFS").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "\n".to_owned())
}

/// How a shell reads the answer.
#[derive(Clone, Copy)]
enum Format {
    /// bash: values joined by the script's separator (vertical tab).
    Bash,
    /// zsh: `value:help` joined by the script's separator (newline); `:` and `\` escaped.
    Zsh,
    /// fish: `value<TAB>help`, one a line.
    Fish,
}

/// One of clap's shell adapters (its registration script, its name) answering through the
/// candidate filter.
struct Safe {
    shell: &'static (dyn EnvCompleter + Sync),
    format: Format,
}

impl EnvCompleter for Safe {
    fn name(&self) -> &'static str {
        self.shell.name()
    }
    fn is(&self, name: &str) -> bool {
        self.shell.is(name)
    }
    fn write_registration(&self, var: &str, name: &str, bin: &str, completer: &str, buf: &mut dyn Write) -> std::io::Result<()> {
        self.shell.write_registration(var, name, bin, completer, buf)
    }
    fn write_complete(
        &self,
        cmd: &mut clap::Command,
        mut args: Vec<OsString>,
        dir: Option<&Path>,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        let index = match self.format {
            Format::Fish => args.len().saturating_sub(1),
            Format::Bash | Format::Zsh => env_usize("_CLAP_COMPLETE_INDEX"),
        };
        if matches!(self.format, Format::Zsh) && args.len() == index {
            args.push(OsString::new());
        }
        let found = safe_candidates(cmd, args, index, dir)?;
        let items: Vec<String> = found
            .into_iter()
            .map(|(value, help)| match (self.format, help) {
                (Format::Bash, _) => value,
                (Format::Zsh, Some(h)) => format!("{}:{}", value.replace(':', "\\:"), h.replace('\\', "\\\\")),
                (Format::Zsh, None) => value.replace(':', "\\:"),
                (Format::Fish, Some(h)) => format!("{value}\t{h}\n"),
                (Format::Fish, None) => format!("{value}\n"),
            })
            .collect();
        match self.format {
            Format::Fish => write!(buf, "{}", items.concat()),
            Format::Bash | Format::Zsh => write!(buf, "{}", items.join(&separator())),
        }
    }
}

/// The shells `BINARY_COMPLETE=<shell>` answers for, each behind the candidate filter.
pub const SHELLS: Shells<'static> = Shells(&[
    &Safe { shell: &Bash, format: Format::Bash },
    &Safe { shell: &Zsh, format: Format::Zsh },
    &Safe { shell: &Fish, format: Format::Fish },
]);

/// Answers the completion protocol when `var` is set (and exits), else returns: the first thing a
/// binary with dynamic completion does.
pub fn answer(var: &'static str, factory: fn() -> clap::Command) {
    clap_complete::CompleteEnv::with_factory(factory).var(var).shells(SHELLS).complete();
}

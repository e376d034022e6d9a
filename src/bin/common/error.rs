//! The one error every command of the three binaries returns to its `main`: what went wrong (an
//! `anyhow` chain, `{:#}` is the message), the kind `--json` reports, the exit code, and the
//! typed [`Fix`] when the code that made the error knows what the user can do. `main` reports it
//! in one place ([`CommandError::report`]): the message on stderr, and under `--json` the error
//! object on stdout whose `fix` is worded from the type (`super::fix::word`), never read back out
//! of the message's text.

use std::process::ExitCode;

use beads_git::fix::Fix;

/// What a command's `run` returns (its exit code when it ran to a verdict).
pub type CommandResult<T = ExitCode> = Result<T, CommandError>;

/// The `kind` of the `--json` error object (`bd-sync schema error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The command failed (exit 2).
    Error,
    /// No issue has the id given (exit 1).
    NotFound,
    /// A partial id matches several issues (exit 1).
    Ambiguous,
    /// The command line asks for something the command does not do (exit 2).
    Usage,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Error => "error",
            Kind::NotFound => "not-found",
            Kind::Ambiguous => "ambiguous",
            Kind::Usage => "usage",
        }
    }

    /// The fix every error of this kind has without being told one.
    fn default_fix(self) -> Option<Fix> {
        match self {
            Kind::Usage => Some(Fix::ReadHelp),
            Kind::Error | Kind::NotFound | Kind::Ambiguous => None,
        }
    }

    fn exit_code(self) -> u8 {
        match self {
            Kind::NotFound | Kind::Ambiguous => 1,
            Kind::Error | Kind::Usage => 2,
        }
    }
}

/// A failed command, as its `main` reports it.
#[derive(Debug)]
pub struct CommandError {
    kind: Kind,
    error: anyhow::Error,
    fix: Option<Fix>,
}

/// Any error converts (`?`), as a plain failure with no fix: the code that knows the fix says it
/// with [`CommandError::with_fix`].
impl<E: Into<anyhow::Error>> From<E> for CommandError {
    fn from(e: E) -> CommandError {
        CommandError { kind: Kind::Error, error: e.into(), fix: None }
    }
}

impl CommandError {
    /// A failure of `kind` said by `message`.
    pub fn new(kind: Kind, message: impl std::fmt::Display) -> CommandError {
        CommandError { kind, error: anyhow::anyhow!("{message}"), fix: None }
    }

    /// The same error, with what the user can do about it.
    pub fn with_fix(mut self, fix: Fix) -> CommandError {
        self.fix = Some(fix);
        self
    }

    /// The same error under a line that says what was being done (`{:#}` shows `context: error`).
    pub fn context(mut self, context: impl std::fmt::Display + Send + Sync + 'static) -> CommandError {
        self.error = self.error.context(context);
        self
    }

    /// The fix, when the error knows one.
    pub fn fix(&self) -> Option<&Fix> {
        self.fix.as_ref()
    }

    /// The message, causes included, as stderr shows it (before escaping).
    pub fn message(&self) -> String {
        format!("{:#}", self.error)
    }

    /// The error alone, for a fail-open hook that only says it on stderr (where the fix is part of
    /// the message already).
    pub fn into_error(self) -> anyhow::Error {
        self.error
    }

    /// Says the error (stderr, with `program: `; under `json` the error object on stdout first) and
    /// gives the exit code its kind has.
    pub fn report(&self, program: &str, json: bool) -> ExitCode {
        let message = self.message();
        if json {
            let fix = self.fix.clone().or_else(|| self.kind.default_fix()).map(|fix| super::fix::word(&fix));
            super::print_json_object(self.kind.name(), &message, fix.as_deref());
        }
        eprintln!("{program}: {}", beads_git::record::printable_lines(&message));
        ExitCode::from(self.kind.exit_code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_converted_error_keeps_its_causes_and_has_no_fix() {
        let e: CommandError = anyhow::anyhow!("inner").context("outer").into();
        assert_eq!(e.message(), "outer: inner");
        assert!(e.fix().is_none());
        let e = e.context("top").with_fix(Fix::Install);
        assert_eq!(e.message(), "top: outer: inner");
        assert_eq!(e.fix(), Some(&Fix::Install));
    }

    #[test]
    fn the_fix_is_the_types_even_when_the_text_names_another_command() {
        let e = CommandError::new(Kind::Error, "run `rm -rf /` to fix it").with_fix(Fix::DedupeFile);
        assert_eq!(e.fix().map(super::super::fix::word).as_deref(), Some("bd-merge dedupe"));
        let plain = CommandError::new(Kind::Error, "run `bd-sync install`");
        assert!(plain.fix().is_none(), "nothing is read out of the text");
    }

    #[test]
    fn each_kind_has_its_exit_code() {
        assert_eq!(Kind::NotFound.exit_code(), 1);
        assert_eq!(Kind::Ambiguous.exit_code(), 1);
        assert_eq!(Kind::Error.exit_code(), 2);
        assert_eq!(Kind::Usage.exit_code(), 2);
    }
}

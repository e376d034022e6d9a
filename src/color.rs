//! Whether output is coloured, decided in one place for every binary: the `--color` flag when a
//! binary was given one, else `NO_COLOR` (set and non-empty means never), else whether stdout is
//! a terminal. Binaries call [`set`] once after parsing; everything that paints asks [`stdout`].

use std::sync::atomic::{AtomicU8, Ordering};

/// The `--color` flag's values, as git, ripgrep and ls spell them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always colour (even into a pipe, and despite `NO_COLOR`).
    Always,
    /// Never colour.
    Never,
}

static CHOICE: AtomicU8 = AtomicU8::new(0);

/// Records the choice made on the command line (call once, after parsing).
pub fn set(choice: ColorChoice) {
    CHOICE.store(choice as u8, Ordering::Relaxed);
}

/// Whether what goes to stdout is coloured.
pub fn stdout() -> bool {
    match CHOICE.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => std::io::IsTerminal::is_terminal(&std::io::stdout()) && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

/// The ANSI colour codes (SGR parameters) the binaries paint with.
pub mod sgr {
    /// Bold red: urgent priorities.
    pub const BOLD_RED: &str = "1;31";
}

/// `text` wrapped in the ANSI colour `code` (an SGR parameter such as [`sgr::BOLD_RED`]) when
/// `enabled`, else `text` as it is.
pub fn paint(enabled: bool, code: &str, text: &str) -> String {
    if enabled {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

//! Listing the log for a person: which entries a filter selects, `--since`'s times, and the
//! human listing with each entry's address and whether it can be restored.

use anyhow::{bail, Result};
use serde_json::value::RawValue;

use super::types::{Entry, Filter, Reason, TRAILER_VALUE_BYTES};
use crate::merge::sides::{name_sides, possessive, side_name};
use crate::merge::Side;

/// The entries `filter` selects, newest first.
pub fn select(mut entries: Vec<Entry>, filter: &Filter) -> Vec<Entry> {
    entries.reverse();
    entries.retain(|e| filter.id.as_ref().is_none_or(|id| *id == e.id));
    if let Some(since) = filter.since {
        entries.retain(|e| crate::timestamp::parse(&e.time).is_some_and(|t| (t.seconds, t.nanos) >= (since.seconds, since.nanos)));
    }
    if let Some(n) = filter.last {
        entries.truncate(n);
    }
    entries
}

/// `--since WHEN`: an RFC 3339 instant, a date (`2026-01-05`, midnight UTC), or an age before
/// `now` (`90m`, `12h`, `2d`, `1w`).
pub fn parse_since(text: &str, now: crate::timestamp::Instant) -> Result<crate::timestamp::Instant> {
    let t = text.trim();
    if let Some(i) = crate::timestamp::parse(t).or_else(|| crate::timestamp::parse(&format!("{t}T00:00:00Z"))) {
        return Ok(i);
    }
    let (n, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => 0,
    };
    match n.parse::<i64>() {
        Ok(n) if seconds > 0 => {
            Ok(crate::timestamp::Instant { seconds: now.seconds.saturating_sub(n.saturating_mul(seconds)), nanos: now.nanos })
        }
        _ => bail!(
            "--since {}: not a time; write an RFC 3339 instant (2026-01-05T10:00:00Z), a date (2026-01-05) or an age (90m, 12h, 2d, 1w)",
            crate::record::printable(text, 60)
        ),
    }
}

pub(super) fn shown(value: Option<&RawValue>, width: usize) -> String {
    match value {
        None => "(absent)".to_owned(),
        Some(v) => crate::record::printable(v.get(), width),
    }
}

/// `kept` or `dropped` of `e` for a person: a cut value as its beginning and its full size.
pub(super) fn shown_part(e: &Entry, part: &str, value: Option<&RawValue>, width: usize) -> String {
    let Some(cut) = e.cut.iter().find(|c| c.part == part) else { return shown(value, width) };
    let begins = value.and_then(|v| serde_json::from_str::<String>(v.get()).ok()).unwrap_or_default();
    format!("{}... (cut: the value is {} bytes)", crate::record::printable(&begins, width), cut.bytes)
}

/// The human listing of `entries` (already selected and ordered), control characters escaped.
pub fn render(entries: &[Entry]) -> String {
    let mut out = String::new();
    if entries.is_empty() {
        out.push_str("no merge decisions logged\n");
        return out;
    }
    for e in entries {
        let p = |s: &str| crate::record::printable(s, 200);
        if e.reason == Reason::Omitted {
            out.push_str(&format!("#{} {} {}: {}\n  {}\n", e.seq, p(&e.time), p(&e.command), p(&e.path), p(&e.detail)));
            continue;
        }
        let side = |word: &str| side_name(&e.labels, e.rebase, if word == "ours" { Side::Ours } else { Side::Theirs });
        let head = e.head.as_deref().map(|h| format!(", HEAD {}", p(&h.chars().take(12).collect::<String>()))).unwrap_or_default();
        let during = if e.rebase { " during a rebase" } else { "" };
        let head = match &e.commit {
            Some(c) => format!(", from commit {}", p(&c.chars().take(12).collect::<String>())),
            None => head,
        };
        out.push_str(&format!("{} {} {}{during}: {}{head}\n", printable_address(e), p(&e.time), p(&e.command), p(&e.path)));
        let why = name_sides(&e.detail, &e.labels, e.rebase);
        out.push_str(&format!("  {} {} ({}: {})\n", p(&crate::record::key_label(&e.id)), p(&e.field), e.reason, p(&why)));
        if e.reason == Reason::Rename {
            out.push_str(&format!(
                "  {}'s issue moved to {}; {}'s issue keeps {}\n",
                p(&side(&e.kept_from)),
                shown(e.kept.as_deref(), 200),
                p(&side(if e.kept_from == "ours" { "theirs" } else { "ours" })),
                shown(e.dropped.as_deref(), 200)
            ));
        } else {
            out.push_str(&format!("  kept    {}  from {}\n", shown_part(e, "kept", e.kept.as_deref(), 200), p(&side(&e.kept_from))));
            out.push_str(&format!(
                "  dropped {}  from {}\n",
                shown_part(e, "dropped", e.dropped.as_deref(), 200),
                p(&side(&e.dropped_from))
            ));
            match not_restorable(e) {
                None => out.push_str(&format!("  put it back: bd-merge review --restore {}\n", p(&address(e)))),
                Some(why) if !e.cut.is_empty() => out.push_str(&format!("  not restorable: {why}\n")),
                Some(_) => {}
            }
        }
    }
    out
}

/// Why an entry cannot be restored (`None`: it can).
pub(super) fn not_restorable(e: &Entry) -> Option<String> {
    if e.reason == Reason::Rename || e.field == "id" {
        return Some(format!("{} is a rename, not a dropped value: both issues are in the file", printable_address(e)));
    }
    if e.reason == Reason::Omitted {
        return Some(format!(
            "{} counts {} decision(s) the merge log had no room for; it holds no value to restore",
            printable_address(e),
            e.omitted
        ));
    }
    if e.field == "(record)" {
        return Some(format!(
            "{} is a whole record ({}); edit the issue with your tracker instead",
            printable_address(e),
            crate::record::printable(&e.detail, 200)
        ));
    }
    // A value, id or field logged cut could only be restored wrong.
    let cut = ["dropped", "kept", "id", "field"].iter().find_map(|part| e.cut.iter().find(|c| c.part == *part));
    if let (Some(cut), Some(commit)) = (cut, &e.commit) {
        let parent = if e.dropped_from == "ours" { 1 } else { 2 };
        return Some(format!(
            "{}'s trailer holds the {} value cut to its first {} bytes (it is {} bytes), so it cannot be restored from there; \
             take it from the merge's parent: git show {}^{parent}:{}",
            printable_address(e),
            cut.part,
            TRAILER_VALUE_BYTES,
            cut.bytes,
            crate::record::printable(commit, 40),
            crate::record::printable(&e.path, 200)
        ));
    }
    if let Some(cut) = cut {
        let part = if matches!(cut.part.as_str(), "dropped" | "kept") { format!("{} value", cut.part) } else { cut.part.clone() };
        let side = side_name(&e.labels, e.rebase, if e.dropped_from == "ours" { Side::Ours } else { Side::Theirs });
        return Some(format!(
            "{}'s {part} was logged cut ({} bytes, past the merge log's bound), so it cannot be restored; take the value from {} side of that merge",
            printable_address(e),
            cut.bytes,
            crate::record::printable(&possessive(&side), 200)
        ));
    }
    None
}

/// How `review` names an entry and `--restore` takes it: `#N` for this clone's log, `#HASH:N`
/// for the N-th trailer of a merge commit.
pub fn address(e: &Entry) -> String {
    match &e.commit {
        Some(c) => format!("{}:{}", &c[..c.len().min(12)], e.seq),
        None => e.seq.to_string(),
    }
}

pub(super) fn printable_address(e: &Entry) -> String {
    format!("#{}", crate::record::printable(&address(e), 60))
}

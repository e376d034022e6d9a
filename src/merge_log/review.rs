//! Listing the log for a person: which entries a filter selects, `--since`'s times, and the
//! human listing with each entry's address and whether it can be restored.

use serde_json::value::RawValue;

use super::types::{Announcement, Entry, Filter, NotRestorable, Reason, Refusal, Word, TRAILER_VALUE_BYTES};
use crate::fix::Fix;
use crate::merge::sides::{name_sides, possessive, side_name};
use crate::merge::Side;

/// A text [`parse_since`] does not read as a time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}: not a time; write an RFC 3339 instant (2026-01-05T10:00:00Z), a date (2026-01-05) or an age (90m, 12h, 2d, 1w)")]
pub struct NotATime {
    /// The text, escaped.
    pub text: String,
}

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

/// A time `review` filters by: an RFC 3339 instant, a date (`2026-01-05`, midnight UTC), or an age before
/// `now` (`90m`, `12h`, `2d`, `1w`).
pub fn parse_since(text: &str, now: crate::timestamp::Instant) -> Result<crate::timestamp::Instant, NotATime> {
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
        _ => Err(NotATime { text: crate::record::printable(text, 60) }),
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

/// The human listing of `entries` (already selected and ordered), control characters escaped;
/// `word` names the fixes (the command that puts a value back).
pub fn render(entries: &[Entry], word: Word<'_>) -> String {
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
                None => out.push_str(&format!("  put it back: {}\n", word(&Fix::RestoreEntry { address: address(e) }))),
                Some(why) if !e.cut.is_empty() || e.unverified => out.push_str(&format!("  not restorable: {}\n", why.text(word))),
                Some(_) => {}
            }
        }
    }
    out
}

/// Why an entry cannot be restored (`None`: it can).
pub(super) fn not_restorable(e: &Entry) -> Option<NotRestorable> {
    let address = printable_address(e);
    if e.unverified {
        return Some(NotRestorable::Unverified { address });
    }
    if e.reason == Reason::Rename || e.field == "id" {
        return Some(NotRestorable::Rename { address });
    }
    if e.reason == Reason::Omitted {
        return Some(NotRestorable::Omitted { address, count: e.omitted });
    }
    if e.field == "(record)" {
        return Some(NotRestorable::WholeRecord { address, detail: crate::record::printable(&e.detail, 200) });
    }
    // A value, id or field logged cut could only be restored wrong.
    let cut = ["dropped", "kept", "id", "field"].iter().find_map(|part| e.cut.iter().find(|c| c.part == *part))?;
    if let Some(commit) = &e.commit {
        let parent = if e.dropped_from == "ours" { 1 } else { 2 };
        let fix = Fix::ShowAtParent { commit: commit.clone(), parent, path: e.path.clone() };
        return Some(NotRestorable::CutInTrailer { address, part: cut.part.clone(), bytes: cut.bytes, fix });
    }
    let part = if matches!(cut.part.as_str(), "dropped" | "kept") { format!("{} value", cut.part) } else { cut.part.clone() };
    let side = side_name(&e.labels, e.rebase, if e.dropped_from == "ours" { Side::Ours } else { Side::Theirs });
    Some(NotRestorable::Cut { address, part, bytes: cut.bytes, side: crate::record::printable(&possessive(&side), 200) })
}

impl NotRestorable {
    /// The reason for a person, `word` naming the fix's command.
    pub fn text(&self, word: Word<'_>) -> String {
        match self {
            NotRestorable::Rename { address } => format!("{address} is a rename, not a dropped value: both issues are in the file"),
            NotRestorable::Unverified { address } => format!(
                "{address} is a trailer its merge commit does not bear out (the commit's issues file, or its parents', do not hold the \
                    values it names): it is not restored"
            ),
            NotRestorable::Omitted { address, count } => {
                format!("{address} counts {count} decision(s) the merge log had no room for; it holds no value to restore")
            }
            NotRestorable::WholeRecord { address, detail } => {
                format!("{address} is a whole record ({detail}); edit the issue with your tracker instead")
            }
            NotRestorable::CutInTrailer { address, part, bytes, fix } => format!(
                "{address}'s trailer holds the {part} value cut to its first {TRAILER_VALUE_BYTES} bytes (it is {bytes} bytes), so it \
                    cannot be restored from there; \
                 take it from the merge's parent: {}",
                word(fix)
            ),
            NotRestorable::Cut { address, part, bytes, side } => format!(
                "{address}'s {part} was logged cut ({bytes} bytes, past the merge log's bound), so it cannot be restored; take the value \
                    from {side} side of that merge"
            ),
        }
    }
}

impl Refusal {
    /// The reason for a person, `word` naming the fix's command.
    pub fn text(&self, word: Word<'_>) -> String {
        let review = || word(&Fix::ReviewMergeLog);
        match self {
            Refusal::Ambiguous { seq, count } => format!(
                "#{seq} names {count} entries in the merge log (merges that ran at once before entries were numbered under a lock); \
                 restore cannot tell which one you mean: see them with `{}` and edit the issue by hand",
                review()
            ),
            Refusal::NoEntry { seq, log } => format!("no entry #{seq} in the merge log ({}); list them with `{}`", log.display(), review()),
            Refusal::NotRestorable(why) => why.text(word),
            Refusal::SeveralLines { file, label } => {
                format!("{file}: {label} stands on several lines; run `{}` first", word(&Fix::DedupeFile))
            }
            Refusal::Gone { file, label } => format!("{file}: {label} is not in the file any more; nothing to restore it into"),
            Refusal::AlreadyThere { file, label, field } => {
                format!("{file}: {label}: {field} already has the dropped value; nothing to restore")
            }
            Refusal::ChangedSince { file, label, field, values } => {
                let [now, kept, dropped] = values.as_ref();
                format!(
                    "{file}: {label}: {field} changed again since that merge (now {now}, the merge kept {kept}); not restored, edit it by \
                    hand if you still want {dropped}"
                )
            }
            Refusal::NotAnAddress { address } => format!("{address} is not an entry's number"),
            Refusal::NotANumber { address, n } => format!("{address}: {n} is not a number"),
            Refusal::NotAHash { address, hash } => format!("{address}: {hash} is not a commit hash"),
            Refusal::NoTrailer { address, searched } => {
                format!("no trailer #{address} in the last {searched} merge commits of HEAD's history; list them with `{}`", review())
            }
            Refusal::SeveralTrailers { address, count } => {
                format!("#{address} names {count} entries of different commits; give more of the hash")
            }
        }
    }
}

impl Announcement {
    /// The hook's one line, `word` naming the fix's command.
    pub fn text(&self, word: Word<'_>) -> String {
        let mut parts = Vec::new();
        if self.values > 0 {
            parts.push(format!("{} value(s) overridden", self.values));
        }
        if self.renamed > 0 {
            parts.push(format!("{} issue(s) renamed", self.renamed));
        }
        format!("beads-git: the merge chose for you: {}; see them with `{}`", parts.join(", "), word(&Fix::ReviewMergeLog))
    }
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

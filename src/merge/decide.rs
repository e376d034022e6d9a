//! The per-id decisions: for one key, given where its lines are in base, ours and theirs, what
//! the merge writes (the line as it is, a field-by-field merge, a record between conflict
//! markers, the copies of a repeated id as a set, two issues created under one id) and what it
//! reports. The [`Merger`] holds what the decisions gather for the finishing passes.

use std::borrow::Cow;
use std::cell::OnceCell;

use rustc_hash::FxHashSet;
use serde_json::Value;

use super::field::{self, merge_entries, FieldCtx};
use super::inputs::{parse, same_value, validate, At, Indexed, Parsed};
use super::stamp;
use super::types::{Conflict, ConflictPolicy, Input, MergeOptions, Out, Report, Resolution, Side, Unmergeable, Warning};
use crate::jsonl::Line;
use crate::record::{render_entries, LineProblem, RawObject, HEADER_KEY};
use crate::timestamp;

pub(super) struct Merger<'m, 'a> {
    pub(super) b: &'m Indexed<'a>,
    pub(super) o: &'m Indexed<'a>,
    pub(super) t: &'m Indexed<'a>,
    pub(super) options: &'m MergeOptions,
    pub(super) go_style: OnceCell<bool>,
    pub(super) ours_bytes: &'a [u8],
    pub(super) reports: Vec<Report>,
    pub(super) warnings: Vec<Warning>,
    pub(super) conflicts: usize,
    /// Ids (on one line in every input) whose ours or theirs line differs from base: the only
    /// records that can carry comments a side added; with their base, ours and theirs lines.
    pub(super) touched: Vec<(String, [Option<&'a [u8]>; 3])>,
    /// A side deleted more than half of the base's records.
    pub(super) mass_deletion: bool,
    /// Ids ours and theirs hold for two different issues (another `created_at`): written between
    /// conflict markers by this pass, and settled by re-keying the inputs ([`super::collisions`]).
    pub(super) collided: Vec<String>,
}

impl<'m, 'a> Merger<'m, 'a> {
    pub(super) fn new(inputs: [&'m Indexed<'a>; 3], options: &'m MergeOptions, ours_bytes: &'a [u8], warnings: Vec<Warning>) -> Self {
        let [b, o, t] = inputs;
        Merger {
            b,
            o,
            t,
            options,
            go_style: OnceCell::new(),
            ours_bytes,
            reports: Vec::new(),
            warnings,
            conflicts: 0,
            touched: Vec::new(),
            mass_deletion: false,
            collided: Vec::new(),
        }
    }

    pub(super) fn merge_id(&mut self, id: &str) -> Result<Vec<Out<'a>>, Unmergeable> {
        // One lookup per input: is the id there, on one line or on several.
        let (b, o, t) = (self.b, self.o, self.t);
        self.merge_at(id, [b.at(id), o.at(id), t.at(id)])
    }

    /// Merges one key, given where its lines are in base, ours and theirs.
    pub(super) fn merge_at(&mut self, id: &str, slots: [Option<At<'_>>; 3]) -> Result<Vec<Out<'a>>, Unmergeable> {
        if slots.iter().any(|s| matches!(s, Some(At::Many(_)))) {
            return self.merge_duplicates(id);
        }
        let line = |file: &Indexed<'a>, slot: Option<At<'_>>| match slot {
            Some(At::One(n)) => Some(file.line(n)),
            _ => None,
        };
        let (b, o, t) = (line(self.b, slots[0]), line(self.o, slots[1]), line(self.t, slots[2]));
        let bytes = |l: Option<Line<'a>>| l.map(|l| l.bytes);
        // Each comparison of whole lines once: most records are the same in all three.
        let (ours_is_base, theirs_is_base) = (bytes(o) == bytes(b), bytes(t) == bytes(b));
        if !ours_is_base || !theirs_is_base {
            self.touched.push((id.to_owned(), [bytes(b), bytes(o), bytes(t)]));
        }
        let keep = |line: Line<'a>| Ok(vec![Out::Line(Cow::Borrowed(line.bytes))]);
        match (b, o, t) {
            (Some(_), Some(x), Some(_)) if ours_is_base && theirs_is_base => keep(x),
            (_, Some(x), Some(y)) if x.bytes == y.bytes => {
                if b.is_none_or(|b| b.bytes != x.bytes) {
                    validate(Input::Ours, x)?;
                }
                keep(x)
            }
            (None, Some(x), None) => {
                validate(Input::Ours, x)?;
                keep(x)
            }
            (None, None, Some(y)) => {
                validate(Input::Theirs, y)?;
                keep(y)
            }
            (None, Some(x), Some(y)) => {
                let (px, py) = (parse(Input::Ours, x)?, parse(Input::Theirs, y)?);
                if px.value == py.value {
                    return keep(x);
                }
                if !self.options.partial && two_creations(x.bytes, y.bytes) {
                    return Ok(self.two_issues(id, x, y));
                }
                Ok(vec![self.merge_fields(id, None, &px, &py)])
            }
            (Some(_) | None, None, None) => Ok(Vec::new()),
            (Some(b), Some(x), None) => self.deleted_on_one_side(id, b, x, Side::Ours),
            (Some(b), None, Some(y)) => self.deleted_on_one_side(id, b, y, Side::Theirs),
            (Some(b), Some(x), Some(y)) => {
                if !self.options.partial && two_creations(x.bytes, y.bytes) {
                    validate(Input::Ours, x)?;
                    validate(Input::Theirs, y)?;
                    return Ok(self.two_issues(id, x, y));
                }
                if theirs_is_base {
                    validate(Input::Ours, x)?;
                    return keep(x);
                }
                if ours_is_base {
                    // Theirs may only have re-formatted it (another writer): then the record is
                    // unchanged, and an unchanged record keeps ours' bytes.
                    return if same_value((Input::Base, b), (Input::Theirs, y))? { keep(x) } else { keep(y) };
                }
                let (pb, px, py) = (parse(Input::Base, b)?, parse(Input::Ours, x)?, parse(Input::Theirs, y)?);
                if py.value == pb.value || px.value == py.value {
                    return keep(x);
                }
                if px.value == pb.value {
                    return keep(y);
                }
                Ok(vec![self.merge_fields(id, Some(&pb), &px, &py)])
            }
        }
    }

    /// `kept_side` still has the record (`line`); the other side deleted it.
    pub(super) fn deleted_on_one_side(
        &mut self,
        id: &str,
        base: Line<'a>,
        line: Line<'a>,
        kept_side: Side,
    ) -> Result<Vec<Out<'a>>, Unmergeable> {
        let input = if kept_side == Side::Ours { Input::Ours } else { Input::Theirs };
        if line.bytes == base.bytes {
            return Ok(Vec::new());
        }
        if same_value((Input::Base, base), (input, line))? {
            return Ok(Vec::new());
        }
        if self.options.policy == ConflictPolicy::Markers {
            self.conflicts += 1;
            let kept = Some(Cow::Borrowed(line.bytes));
            let (ours, theirs) = if kept_side == Side::Ours { (kept, None) } else { (None, kept) };
            return Ok(vec![Out::Conflict(Box::new(Conflict { ours, base: Some(Cow::Borrowed(base.bytes)), theirs }))]);
        }
        let deleter = if kept_side == Side::Ours { Side::Theirs } else { Side::Ours };
        self.reports.push(Report {
            id: id.to_owned(),
            resolution: Resolution {
                field: "(record)".into(),
                kept: kept_side,
                kept_value: "its modified record".into(),
                other_value: "the deletion".into(),
                reason: format!("{deleter} deleted it, {kept_side} changed it; a change is never lost"),
                kept_json: std::str::from_utf8(line.bytes).ok().map(str::to_owned),
                dropped_json: None,
            },
        });
        Ok(vec![Out::Line(Cow::Borrowed(line.bytes))])
    }

    pub(super) fn go_style(&self) -> bool {
        *self.go_style.get_or_init(|| crate::record::uses_go_escapes(self.ours_bytes))
    }

    pub(super) fn merge_fields(&mut self, id: &str, base: Option<&Parsed<'a>>, ours: &Parsed<'a>, theirs: &Parsed<'a>) -> Out<'a> {
        // The header (bd's `_dolt_commit` and friends) is bookkeeping: never a conflict for a human.
        let policy =
            if id == HEADER_KEY && self.options.policy == ConflictPolicy::Markers { ConflictPolicy::Newest } else { self.options.policy };
        let (winner, reason) = match policy {
            ConflictPolicy::Newest | ConflictPolicy::Markers => newest(ours, theirs),
            ConflictPolicy::Ours => (Side::Ours, "--conflict ours"),
            ConflictPolicy::Theirs => (Side::Theirs, "--conflict theirs"),
        };
        let base_entries = base.map(|b| b.obj.entries.as_slice()).unwrap_or(&[]);
        let go_style = self.go_style();
        let now = self.options.now;
        let run = |winner: Side| {
            let mut ctx = FieldCtx { winner, winner_reason: reason, go_style, comma: ours.obj.comma, open: 0, resolutions: Vec::new() };
            let mut entries = merge_entries(base_entries, &ours.obj.entries, &theirs.obj.entries, &mut ctx, "", true);
            let line = render_entries(&entries, ours.obj.colon, ours.obj.comma);
            // A record that equals neither side is newer than both (README, "The merge rules, in plain words").
            if line.as_bytes() != ours.bytes && line.as_bytes() != theirs.bytes {
                let value: Value = serde_json::from_str(&line).expect("rendered from validated values");
                // Volatile keys (heartbeats) and derived counts alone never make a record newer
                // than both sides.
                let (value, o, t) =
                    (field::without_unstamped(&value), field::without_unstamped(&ours.value), field::without_unstamped(&theirs.value));
                if !crate::conventions::same_record(&value, &o)
                    && !crate::conventions::same_record(&value, &t)
                    && stamp::bump_updated_at(&mut entries, &[updated_at_of(&ours.value), updated_at_of(&theirs.value)], now)
                {
                    return (render_entries(&entries, ours.obj.colon, ours.obj.comma), ctx);
                }
            }
            (line, ctx)
        };
        let (line, ctx) = run(winner);
        if policy == ConflictPolicy::Markers && ctx.open > 0 {
            self.conflicts += 1;
            let (other_line, _) = run(if winner == Side::Ours { Side::Theirs } else { Side::Ours });
            let (ours_line, theirs_line) = if winner == Side::Ours { (line, other_line) } else { (other_line, line) };
            return Out::Conflict(Box::new(Conflict {
                ours: Some(Cow::Owned(ours_line.into_bytes())),
                base: base.map(|b| Cow::Borrowed(b.bytes)),
                theirs: Some(Cow::Owned(theirs_line.into_bytes())),
            }));
        }
        self.reports.extend(ctx.resolutions.into_iter().map(|resolution| Report { id: id.to_owned(), resolution }));
        if line.as_bytes() == ours.bytes {
            Out::Line(Cow::Borrowed(ours.bytes))
        } else {
            Out::Line(Cow::Owned(line.into_bytes()))
        }
    }

    /// An id on several lines: merge its lines as a set of exact lines. A line is matched
    /// across the inputs by its value (a copy another writer only re-formatted is the same line,
    /// README "Equal"), and what is kept is written in ours' bytes when ours has it, byte-identical
    /// repeats once. A line that is not UTF-8 is not guessed about (the line fallback) unless all
    /// three inputs hold it as it is. Hash sets throughout: thousands of copies cost thousands of
    /// steps, not millions.
    pub(super) fn merge_duplicates(&mut self, id: &str) -> Result<Vec<Out<'a>>, Unmergeable> {
        let (b, o, t) = (self.b.lines_of(id), self.o.lines_of(id), self.t.lines_of(id));
        let bytes_of = |ls: &[Line<'a>]| -> FxHashSet<&'a [u8]> { ls.iter().map(|l| l.bytes).collect() };
        let (bb, ob, tb) = (bytes_of(&b), bytes_of(&o), bytes_of(&t));
        for (input, lines) in [(Input::Base, &b), (Input::Ours, &o), (Input::Theirs, &t)] {
            for l in lines {
                if std::str::from_utf8(l.bytes).is_err() && !(bb.contains(l.bytes) && ob.contains(l.bytes) && tb.contains(l.bytes)) {
                    return Err(Unmergeable { input, line: l.number, problem: LineProblem::InvalidUtf8 });
                }
            }
        }
        // A line's value as compact JSON with sorted keys (the raw bytes when it does not parse).
        let value_of = |l: &Line<'a>| -> Cow<'a, [u8]> {
            match serde_json::from_slice::<Value>(l.bytes) {
                Ok(v) => Cow::Owned(v.to_string().into_bytes()),
                Err(_) => Cow::Borrowed(l.bytes),
            }
        };
        let values = |ls: &[Line<'a>]| -> Vec<Cow<'a, [u8]>> { ls.iter().map(value_of).collect() };
        let (bv, ov, tv) = (values(&b), values(&o), values(&t));
        fn set<'v>(vs: &'v [Cow<'_, [u8]>]) -> FxHashSet<&'v [u8]> {
            vs.iter().map(AsRef::as_ref).collect()
        }
        let (bs, os, ts) = (set(&bv), set(&ov), set(&tv));
        let mut seen: FxHashSet<&'a [u8]> = FxHashSet::default();
        let mut kept: Vec<&'a [u8]> = Vec::new();
        for (l, v) in o.iter().zip(&ov) {
            if (ts.contains(v.as_ref()) || !bs.contains(v.as_ref())) && seen.insert(l.bytes) {
                kept.push(l.bytes);
            }
        }
        for (l, v) in t.iter().zip(&tv) {
            if !os.contains(v.as_ref()) && !bs.contains(v.as_ref()) && seen.insert(l.bytes) {
                kept.push(l.bytes);
            }
        }
        let numbers = |name: &str, ls: &[Line<'a>]| -> Option<String> {
            (ls.len() > 1).then(|| format!("{name} lines {}", ls.iter().map(|l| l.number.to_string()).collect::<Vec<_>>().join(", ")))
        };
        let places: Vec<String> = [numbers("base", &b), numbers("ours", &o), numbers("theirs", &t)].into_iter().flatten().collect();
        self.warnings.push(Warning::RepeatedId { id: id.to_owned(), places: places.join("; ") });
        Ok(kept.into_iter().map(|l| Out::Line(Cow::Borrowed(l))).collect())
    }

    /// The two sides' `updated_at` values of a record on one line (absent sides left out).
    pub(super) fn sides_updated_at(&self, id: &str) -> Vec<Option<String>> {
        sides_updated_at(self.o, self.t, id)
    }

    /// Takes what another merger gathered over the keys after this one's (a later part of the
    /// same walk), whose items start at `offset` in the joined list.
    pub(super) fn absorb(&mut self, other: Merger<'m, 'a>) {
        self.reports.extend(other.reports);
        self.warnings.extend(other.warnings);
        self.conflicts += other.conflicts;
        self.touched.extend(other.touched);
        self.mass_deletion |= other.mass_deletion;
        self.collided.extend(other.collided);
    }

    /// An id ours and theirs hold for two different issues: both records between conflict
    /// markers for now, and the id noted, so the merge settles it the way br does (re-keying the
    /// inputs and merging again: [`super::join`]). Only when no free id can be minted does this
    /// stand, and then nothing is lost either.
    pub(super) fn two_issues(&mut self, id: &str, ours: Line<'a>, theirs: Line<'a>) -> Vec<Out<'a>> {
        self.collided.push(id.to_owned());
        self.conflicts += 1;
        vec![Out::Conflict(Box::new(Conflict {
            ours: Some(Cow::Borrowed(ours.bytes)),
            base: None,
            theirs: Some(Cow::Borrowed(theirs.bytes)),
        }))]
    }
}

/// Whether two different lines of one id are two issues: their `created_at` are two instants.
/// The first `"created_at"` of each line is compared as bytes first (the writers put the
/// record's own before any nested one), so a record changed in place costs a search, not a parse.
fn two_creations(x: &[u8], y: &[u8]) -> bool {
    fn first(line: &[u8]) -> Option<&[u8]> {
        let at = memchr::memmem::find(line, b"\"created_at\"")?;
        let rest = &line[at..];
        Some(&rest[..rest.len().min(64)])
    }
    match (first(x), first(y)) {
        (Some(a), Some(b)) if a == b => false,
        (None, None) => false,
        _ => {
            let created = |line: &[u8]| super::collisions::Facts::of(line).map(|f| f.created);
            matches!((created(x), created(y)), (Some(a), Some(b)) if a != b)
        }
    }
}

/// A record's `updated_at`, when it is a string.
pub(crate) fn updated_at_of(value: &Value) -> Option<String> {
    value.get("updated_at").and_then(Value::as_str).map(str::to_owned)
}

/// The side whose record has the later `updated_at`; a tie goes to the record that sorts greater
/// as compact JSON with sorted keys, so swapping the sides never changes the answer.
pub(super) fn newest(ours: &Parsed<'_>, theirs: &Parsed<'_>) -> (Side, &'static str) {
    let stamp = |p: &Parsed<'_>| p.value.get("updated_at").and_then(Value::as_str).map(str::to_owned);
    let order = match (stamp(ours), stamp(theirs)) {
        (Some(a), Some(b)) => timestamp::compare(&a, &b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    };
    match order {
        std::cmp::Ordering::Greater => (Side::Ours, "ours has the newer updated_at"),
        std::cmp::Ordering::Less => (Side::Theirs, "theirs has the newer updated_at"),
        std::cmp::Ordering::Equal => {
            // Compact JSON with sorted keys (serde_json's map is ordered by key here).
            let (ours_text, theirs_text) = (ours.value.to_string(), theirs.value.to_string());
            if ours_text >= theirs_text {
                (Side::Ours, "same updated_at; tie broken by record content")
            } else {
                (Side::Theirs, "same updated_at; tie broken by record content")
            }
        }
    }
}

/// The `updated_at` of the record `id` in ours and in theirs (`ours`, `theirs`), where each has it
/// on one line: what a change the merge makes to the record is stamped past.
pub(super) fn sides_updated_at(ours: &Indexed<'_>, theirs: &Indexed<'_>, id: &str) -> Vec<Option<String>> {
    let stamp = |bytes: &[u8]| {
        RawObject::parse(bytes).ok().and_then(|o| o.get("updated_at").and_then(crate::record::parse_json_str).map(Cow::into_owned))
    };
    [ours.single(id), theirs.single(id)].into_iter().flatten().map(|l| stamp(l.bytes)).collect()
}

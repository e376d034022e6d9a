//! Field-level rules for a record that both sides changed.
//!
//! Keys are merged one by one: a side that left a key as it was in base yields to the other side,
//! and only keys both sides changed differently need a rule. The rules are picked by the kind of
//! value (timestamps, sets of strings, sets of objects keyed by identity, nested objects,
//! multi-line text, the status group) so that as little as possible is left to the conflict
//! policy. Every value that comes out unchanged keeps the exact text of the side it came from.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use super::text::{merge_text_bounded, TextMerge};
use super::{Resolution, Side};
use crate::conventions::{array_order, identity, order_keys, prefer_comment_id};
use crate::record::{json_string, parse_json_str, render_entries, split_array, Entry, RawObject};
use crate::timestamp;

/// Fields decided together with `status`, so a closed issue always has `closed_at` and an open
/// one never does, and tombstones stay whole.
pub const STATUS_GROUP: &[&str] =
    &["status", "closed_at", "close_reason", "closed_by_session", "deleted_at", "deleted_by", "delete_reason", "original_type"];

/// Volatile fields (docs/trackers.md): values an agent rewrites on every heartbeat (bd 1.1+ writes
/// `heartbeat_at` and `lease_expires_at`). When both sides moved one, the later instant wins
/// silently: never a conflict, never a merge-log entry, and a record that differs from a side only
/// in these keys is not "merged from both sides" (no new `updated_at` stamp). This is the one list
/// of them; add a key here and every rule follows.
pub const VOLATILE: &[&str] = &["heartbeat_at", "lease_expires_at"];

/// What the field rules need to know while merging one record.
pub(crate) struct FieldCtx<'r> {
    /// The side the conflict policy picks for decisions the rules leave open.
    pub winner: Side,
    /// Why that side wins, for the report.
    pub winner_reason: &'r str,
    /// Escape `<`, `>`, `&` the way Go does when writing new strings.
    pub go_style: bool,
    /// The record's entry separator, for arrays built anew.
    pub comma: &'r str,
    /// Decisions left to the policy so far.
    pub open: usize,
    /// What the policy decided, one entry per decision.
    pub resolutions: Vec<Resolution>,
}

impl FieldCtx<'_> {
    fn pick(&mut self, field: &str, ours: Option<&str>, theirs: Option<&str>) -> Side {
        self.pick_whole(field, ours, theirs, (ours.map(str::to_owned), theirs.map(str::to_owned)))
    }

    /// Like `pick`, with its own reason (a value too large to merge by lines).
    fn pick_because(&mut self, field: &str, ours: Option<&str>, theirs: Option<&str>, reason: String) -> Side {
        let side = self.pick(field, ours, theirs);
        if let Some(last) = self.resolutions.last_mut() {
            last.reason = reason;
        }
        side
    }

    /// Like `pick`, with the whole values (ours, theirs) to log when they are more than the shown ones.
    fn pick_whole(&mut self, field: &str, ours: Option<&str>, theirs: Option<&str>, whole: (Option<String>, Option<String>)) -> Side {
        self.open += 1;
        let (kept, other, kept_json, dropped_json) = match self.winner {
            Side::Ours => (ours, theirs, whole.0, whole.1),
            Side::Theirs => (theirs, ours, whole.1, whole.0),
        };
        self.resolutions.push(Resolution {
            field: field.to_owned(),
            kept: self.winner,
            kept_value: excerpt(kept),
            other_value: excerpt(other),
            reason: self.winner_reason.to_owned(),
            kept_json,
            dropped_json,
        });
        self.winner
    }
}

fn excerpt(raw: Option<&str>) -> String {
    match raw {
        None => "(absent)".to_owned(),
        Some(s) => crate::record::printable(s, 45),
    }
}

/// The entry for `key`; the last one when a key is repeated (as Go's encoding/json reads it).
fn find<'e, 'a>(entries: &'e [Entry<'a>], key: &str) -> Option<&'e Entry<'a>> {
    entries.iter().rfind(|e| e.key == key)
}

/// Where each key's last entry is (as [`find`] reads a repeated key).
fn last_of<'e>(entries: &'e [Entry<'_>]) -> rustc_hash::FxHashMap<&'e str, usize> {
    entries.iter().enumerate().map(|(i, e)| (e.key.as_ref(), i)).collect()
}

fn parse(raw: &str) -> Value {
    serde_json::from_str(raw).expect("raw values are validated when the record is parsed")
}

/// Equal as JSON values (key order and escapes do not matter); absent equals only absent.
fn same(a: Option<&Entry<'_>>, b: Option<&Entry<'_>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x.raw_value == y.raw_value || parse(&x.raw_value) == parse(&y.raw_value),
        _ => false,
    }
}

/// Merges the entries of one object. `top` is true for the record itself, where the status group
/// and `updated_at` rules apply. Keys keep ours' order; keys new from theirs go at the end.
pub(crate) fn merge_entries<'a>(
    base: &[Entry<'a>],
    ours: &[Entry<'a>],
    theirs: &[Entry<'a>],
    ctx: &mut FieldCtx<'_>,
    prefix: &str,
    top: bool,
) -> Vec<Entry<'a>> {
    let mut keys: Vec<&str> = Vec::with_capacity(ours.len() + 2);
    let mut seen: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
    for e in ours {
        if seen.insert(e.key.as_ref()) {
            keys.push(e.key.as_ref());
        }
    }
    let mut added: Vec<&str> = Vec::new();
    for e in theirs {
        if seen.insert(e.key.as_ref()) {
            added.push(e.key.as_ref());
        }
    }
    if top {
        keys = order_keys(&keys, &added);
    } else {
        keys.extend(added);
    }
    let group_side = if top { Some(status_group_side(base, ours, theirs, ctx)) } else { None };
    // The last entry of each key (as `find` reads it), looked up once per key.
    let (bi, oi, ti) = (last_of(base), last_of(ours), last_of(theirs));
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let (b, o, t) = (bi.get(key).map(|&i| &base[i]), oi.get(key).map(|&i| &ours[i]), ti.get(key).map(|&i| &theirs[i]));
        let chosen = match group_side {
            Some(side) if STATUS_GROUP.contains(&key) => match side {
                Side::Ours => o.cloned(),
                Side::Theirs => t.cloned(),
            },
            _ => merge_value(key, b, o, t, ctx, prefix, top),
        };
        out.extend(chosen);
    }
    out
}

/// Which side's status group wins, as one value.
fn status_group_side(base: &[Entry<'_>], ours: &[Entry<'_>], theirs: &[Entry<'_>], ctx: &mut FieldCtx<'_>) -> Side {
    let same_group = |x: &[Entry<'_>], y: &[Entry<'_>]| STATUS_GROUP.iter().all(|k| same(find(x, k), find(y, k)));
    if same_group(ours, base) {
        Side::Theirs
    } else if same_group(theirs, base) || same_group(ours, theirs) {
        Side::Ours
    } else {
        let raw = |x: &[Entry<'_>]| find(x, "status").map(|e| e.raw_value.to_string());
        let (o, t) = (raw(ours), raw(theirs));
        // The group is one value: the log keeps every key of it, so a restore puts back all of them.
        let group = |x: &[Entry<'_>]| {
            let kept: Vec<Entry<'_>> = STATUS_GROUP.iter().filter_map(|k| find(x, k).cloned()).collect();
            Some(render_entries(&kept, ":", ","))
        };
        ctx.pick_whole("status", o.as_deref(), t.as_deref(), (group(ours), group(theirs)))
    }
}

fn merge_value<'a>(
    key: &str,
    base: Option<&Entry<'a>>,
    ours: Option<&Entry<'a>>,
    theirs: Option<&Entry<'a>>,
    ctx: &mut FieldCtx<'_>,
    prefix: &str,
    top: bool,
) -> Option<Entry<'a>> {
    if same(ours, theirs) || (same(theirs, base) && !(key == "comments" && renames_comments_back(theirs, ours))) {
        return ours.cloned();
    }
    if same(ours, base) && !(key == "comments" && renames_comments_back(ours, theirs)) {
        return theirs.cloned();
    }
    if top && VOLATILE.contains(&key) {
        return later_volatile(ours, theirs).cloned();
    }
    let path = if prefix.is_empty() { key.to_owned() } else { format!("{prefix}.{key}") };
    let values = (base.map(|e| parse(&e.raw_value)), ours.map(|e| parse(&e.raw_value)), theirs.map(|e| parse(&e.raw_value)));

    if let (Some(o), Some(t)) = (ours, theirs) {
        if top && key == "updated_at" {
            if let (Some(Value::String(a)), Some(Value::String(b))) = (&values.1, &values.2) {
                return Some(if timestamp::compare(a, b).is_ge() { o.clone() } else { t.clone() });
            }
        }
    }
    if let Some(merged) = merge_arrays(key, &path, base, ours, theirs, &values, ctx) {
        return merged;
    }
    if let (Some(o), Some(t), Some(Value::Object(_)), Some(Value::Object(_))) = (ours, theirs, &values.1, &values.2) {
        let base_obj = match (&values.0, base) {
            (Some(Value::Object(_)), Some(b)) => RawObject::parse_str(&b.raw_value).ok(),
            _ => None,
        };
        if let (Ok(oo), Ok(to)) = (RawObject::parse_str(&o.raw_value), RawObject::parse_str(&t.raw_value)) {
            let bo = base_obj.map(|b| b.entries).unwrap_or_default();
            let merged = merge_entries(&bo, &oo.entries, &to.entries, ctx, &path, false);
            let raw = render_entries(&merged, oo.colon, oo.comma);
            return Some(rebuilt(o, raw));
        }
    }
    if let (Some(o), Some(Value::String(os)), Some(Value::String(ts))) = (ours, &values.1, &values.2) {
        let bs = match &values.0 {
            Some(Value::String(s)) => s.as_str(),
            _ => "",
        };
        if os.contains('\n') || ts.contains('\n') || bs.contains('\n') {
            match merge_text_bounded(bs, os, ts) {
                TextMerge::Merged(text) => {
                    let raw = json_string(&text, string_style(ctx.go_style, [ours, theirs, base]));
                    return Some(rebuilt(o, raw));
                }
                TextMerge::Conflict => {}
                TextMerge::TooLarge { lines: [b, o, t] } => {
                    // Decided whole, and the report (stderr, the merge log) says why.
                    let reason = format!(
                        "too large for a line merge ({b}, {o} and {t} lines in base, ours and theirs), so decided whole: {}",
                        ctx.winner_reason
                    );
                    let (ours_raw, theirs_raw) = (ours.map(|e| e.raw_value.as_ref()), theirs.map(|e| e.raw_value.as_ref()));
                    return match ctx.pick_because(&path, ours_raw, theirs_raw, reason) {
                        Side::Ours => ours.cloned(),
                        Side::Theirs => theirs.cloned(),
                    };
                }
            }
        }
    }
    match ctx.pick(&path, ours.map(|e| e.raw_value.as_ref()), theirs.map(|e| e.raw_value.as_ref())) {
        Side::Ours => ours.cloned(),
        Side::Theirs => theirs.cloned(),
    }
}

/// Both sides moved a volatile value: the later instant wins (instants compared across offsets;
/// values that are not timestamps by their JSON text, the greater wins). A side that dropped the
/// key yields to the side that holds a value: a lease one side released while the other extended it
/// stays held until the holder's next write says otherwise. Symmetric in the two sides.
fn later_volatile<'e, 'a>(ours: Option<&'e Entry<'a>>, theirs: Option<&'e Entry<'a>>) -> Option<&'e Entry<'a>> {
    let (Some(o), Some(t)) = (ours, theirs) else { return ours.or(theirs) };
    let order = match (parse(&o.raw_value), parse(&t.raw_value)) {
        (Value::String(a), Value::String(b)) => timestamp::compare(&a, &b),
        (a, b) => a.to_string().cmp(&b.to_string()),
    };
    Some(if order.is_ge() { o } else { t })
}

/// `value` without the keys that never make a record newer than a side, for "does the merged
/// record equal a side": its [`VOLATILE`] keys and the derived counts (`merge::derived`, which the
/// merge recomputes and which are no content a tracker imports).
pub(crate) fn without_unstamped(value: &Value) -> Cow<'_, Value> {
    let unstamped = || VOLATILE.iter().chain(&super::derived::COUNT_KEYS);
    match value {
        Value::Object(map) if unstamped().any(|k| map.contains_key(*k)) => {
            let mut map = map.clone();
            for k in unstamped() {
                map.remove(*k);
            }
            Cow::Owned(Value::Object(map))
        }
        _ => Cow::Borrowed(value),
    }
}

/// Whether `changed` writes a comment that `kept` holds under an id of a newer scheme (a clone
/// whose tracker was not upgraded wrote an upgraded comment back under its old id): then the
/// one-sided change is not taken whole, the comments merge as sets (docs/merge-rules.md).
fn renames_comments_back(kept: Option<&Entry<'_>>, changed: Option<&Entry<'_>>) -> bool {
    let (Some(k), Some(c)) = (kept, changed) else { return false };
    let (Value::Array(kept), Value::Array(changed)) = (parse(&k.raw_value), parse(&c.raw_value)) else { return false };
    let by_identity: HashMap<String, &Value> = kept.iter().map(|v| (identity("comments", v), v)).collect();
    changed.iter().any(|c| by_identity.get(&identity("comments", c)).is_some_and(|k| *k != c && prefer_comment_id(k, c)))
}

/// Keeps the key text of `like` with a new value.
fn rebuilt<'a>(like: &Entry<'a>, raw_value: String) -> Entry<'a> {
    Entry { key: like.key.clone(), raw_key: like.raw_key.clone(), raw_value: Cow::Owned(raw_value) }
}

/// Whether new string text should use Go's `\u003c` escapes: follow what the values show, else
/// the file's habit.
fn string_style<const N: usize>(file_default: bool, sides: [Option<&Entry<'_>>; N]) -> bool {
    for e in sides.into_iter().flatten() {
        let raw = e.raw_value.as_ref();
        if raw.contains("\\u003c") || raw.contains("\\u003e") || raw.contains("\\u0026") {
            return true;
        }
        if raw.contains(['<', '>', '&']) {
            return false;
        }
    }
    file_default
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum ElementKind {
    Empty,
    Strings,
    Objects,
    Mixed,
}

fn element_kind(v: Option<&Value>) -> Option<ElementKind> {
    match v {
        None => Some(ElementKind::Empty),
        Some(Value::Array(items)) if items.is_empty() => Some(ElementKind::Empty),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => Some(ElementKind::Strings),
        Some(Value::Array(items)) if items.iter().all(Value::is_object) => Some(ElementKind::Objects),
        Some(Value::Array(_)) => Some(ElementKind::Mixed),
        Some(_) => None,
    }
}

/// Set merge for arrays of strings or objects. `None` when the rule does not apply; `Some(None)`
/// when the merged set is empty and a side had dropped the key (Go's `omitempty`).
fn merge_arrays<'a>(
    key: &str,
    path: &str,
    base: Option<&Entry<'a>>,
    ours: Option<&Entry<'a>>,
    theirs: Option<&Entry<'a>>,
    values: &(Option<Value>, Option<Value>, Option<Value>),
    ctx: &mut FieldCtx<'_>,
) -> Option<Option<Entry<'a>>> {
    if !matches!(values.1, Some(Value::Array(_))) && !matches!(values.2, Some(Value::Array(_))) {
        return None;
    }
    let kinds = [element_kind(values.0.as_ref())?, element_kind(values.1.as_ref())?, element_kind(values.2.as_ref())?];
    let kind = kinds.iter().copied().filter(|k| *k != ElementKind::Empty).try_fold(ElementKind::Empty, |acc, k| {
        if acc == ElementKind::Empty || acc == k {
            Some(k)
        } else {
            None
        }
    })?;
    let elements = |e: Option<&Entry<'a>>| -> Vec<String> {
        e.and_then(|e| split_array(&e.raw_value)).unwrap_or_default().into_iter().map(str::to_owned).collect()
    };
    let (b, o, t) = (elements(base), elements(ours), elements(theirs));
    let merged = match kind {
        ElementKind::Strings | ElementKind::Empty => merge_string_sets(&b, &o, &t),
        ElementKind::Objects => merge_object_sets(key, path, &b, &o, &t, ctx)?,
        ElementKind::Mixed => return None,
    };
    if merged.is_empty() && (ours.is_none() || theirs.is_none()) {
        return Some(None);
    }
    let like = ours.or(theirs).expect("one side holds an array");
    let raw = format!("[{}]", merged.join(ctx.comma));
    Some(Some(rebuilt(like, raw)))
}

fn decoded(raw: &str) -> Cow<'_, str> {
    parse_json_str(raw).unwrap_or(Cow::Borrowed(raw))
}

/// Additions from both sides kept, a removal on either side sticks. Ours' order, then theirs'
/// additions; sorted if ours was sorted. The result is a set: a repeated element appears once.
fn merge_string_sets(base: &[String], ours: &[String], theirs: &[String]) -> Vec<String> {
    let b: Vec<Cow<'_, str>> = base.iter().map(|r| decoded(r)).collect();
    let o: Vec<Cow<'_, str>> = ours.iter().map(|r| decoded(r)).collect();
    let t: Vec<Cow<'_, str>> = theirs.iter().map(|r| decoded(r)).collect();
    let set = |v: &[Cow<'_, str>]| -> rustc_hash::FxHashSet<String> { v.iter().map(std::string::ToString::to_string).collect() };
    let (bs, os, ts) = (set(&b), set(&o), set(&t));
    let mut seen: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
    let mut out: Vec<(Cow<'_, str>, &String)> = Vec::new();
    for (s, raw) in o.iter().zip(ours) {
        if (ts.contains(s.as_ref()) || !bs.contains(s.as_ref())) && seen.insert(s.as_ref()) {
            out.push((s.clone(), raw));
        }
    }
    for (s, raw) in t.iter().zip(theirs) {
        if !os.contains(s.as_ref()) && !bs.contains(s.as_ref()) && seen.insert(s.as_ref()) {
            out.push((s.clone(), raw));
        }
    }
    let sorted = |v: &[Cow<'_, str>]| v.windows(2).all(|w| w[0] <= w[1]);
    let keep_sorted = if o.len() >= 2 { sorted(&o) } else { sorted(&t) };
    if keep_sorted {
        out.sort_by(|x, y| x.0.cmp(&y.0));
    }
    out.into_iter().map(|(_, raw)| raw.clone()).collect()
}

/// The elements of an object array by identity: raw text and parsed value.
type ElementsById = HashMap<String, (String, Value)>;

fn merge_object_sets(
    key: &str,
    path: &str,
    base: &[String],
    ours: &[String],
    theirs: &[String],
    ctx: &mut FieldCtx<'_>,
) -> Option<Vec<String>> {
    // identity -> (raw text, parsed value); a side repeating an identity is left to the policy.
    let index = |raws: &[String]| -> Option<(Vec<String>, ElementsById)> {
        let mut order = Vec::with_capacity(raws.len());
        let mut map = HashMap::with_capacity(raws.len());
        for raw in raws {
            let value = parse(raw);
            let id = identity(key, &value);
            if map.insert(id.clone(), (raw.clone(), value)).is_some() {
                return None;
            }
            order.push(id);
        }
        Some((order, map))
    };
    let (_, b) = index(base)?;
    let (o_order, o) = index(ours)?;
    let (t_order, t) = index(theirs)?;
    let mut out = Vec::new();
    for id in &o_order {
        let (o_raw, o_val) = &o[id];
        match (b.get(id), t.get(id)) {
            // Theirs deleted an element ours left alone: it stays deleted.
            (Some((_, b_val)), None) if b_val == o_val => {}
            (_, None) => out.push(o_raw.clone()),
            // One comment under two ids (a side upgraded its tracker): the newer id scheme, silently.
            (_, Some((t_raw, t_val))) if key == "comments" && t_val != o_val => {
                out.push(if prefer_comment_id(o_val, t_val) { o_raw.clone() } else { t_raw.clone() });
            }
            (b_elem, Some((t_raw, t_val))) => {
                if t_val == o_val || b_elem.is_some_and(|(_, bv)| bv == t_val) {
                    out.push(o_raw.clone());
                } else if b_elem.is_some_and(|(_, bv)| bv == o_val) {
                    out.push(t_raw.clone());
                } else {
                    let empty = String::from("{}");
                    let b_raw = b_elem.map(|(r, _)| r).unwrap_or(&empty);
                    let (bo, oo, to) =
                        (RawObject::parse_str(b_raw).ok()?, RawObject::parse_str(o_raw).ok()?, RawObject::parse_str(t_raw).ok()?);
                    let merged = merge_entries(&bo.entries, &oo.entries, &to.entries, ctx, &format!("{path}[{id}]"), false);
                    out.push(render_entries(&merged, oo.colon, oo.comma));
                }
            }
        }
    }
    for id in &t_order {
        if o.contains_key(id) {
            continue;
        }
        let (t_raw, t_val) = &t[id];
        match b.get(id) {
            Some((_, b_val)) if b_val == t_val => {} // ours deleted it, theirs left it alone
            _ => out.push(t_raw.clone()),
        }
    }
    let values =
        |order: &[String], map: &HashMap<String, (String, Value)>| -> Vec<Value> { order.iter().map(|id| map[id].1.clone()).collect() };
    if let Some(order) = array_order(key, &values(&o_order, &o), &values(&t_order, &t)) {
        let mut keyed: Vec<(Value, String)> = out.into_iter().map(|raw| (parse(&raw), raw)).collect();
        keyed.sort_by(|x, y| order(&x.0, &y.0));
        out = keyed.into_iter().map(|(_, raw)| raw).collect();
    }
    Some(out)
}

//! What changed in issues, field by field: the report behind `bd-merge diff`, `bd-sync diff`,
//! `bd-sync log` and the git diff text conversion.
//!
//! A beads line is 1-10 KB of JSON, so a line diff shows a whole record replaced by another and a
//! reviewer cannot see that only `status` went from `open` to `closed`. Here each issue is
//! compared as JSON values: scalars old -> new, labels and dependencies as set additions and
//! removals, comments added or removed, multi-line text as a line diff. A record whose values are
//! equal but whose bytes differ is "re-formatted", never a change. Which ids changed at all comes
//! from [`crate::diff`], the byte-exact id diff the notifier uses.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::diff::{changes, Snapshot};
use crate::record::{escaped, RawObject};

/// How one issue differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum IssueChange {
    /// In the new file only.
    Added {
        /// Issue id.
        id: String,
        /// Its title.
        title: Option<String>,
    },
    /// In the old file only.
    Removed {
        /// Issue id.
        id: String,
        /// Its title.
        title: Option<String>,
    },
    /// Different bytes, equal values (key order, spacing, escapes).
    Reformatted {
        /// Issue id.
        id: String,
    },
    /// Different values.
    Changed {
        /// Issue id.
        id: String,
        /// Its (new) title.
        title: Option<String>,
        /// Each field that differs, in the new record's key order, then removed fields.
        fields: Vec<FieldChange>,
    },
}

impl IssueChange {
    /// The issue's id.
    pub fn id(&self) -> &str {
        match self {
            IssueChange::Added { id, .. }
            | IssueChange::Removed { id, .. }
            | IssueChange::Reformatted { id }
            | IssueChange::Changed { id, .. } => id,
        }
    }
}

/// How one field differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FieldChange {
    /// A value replaced (`null` for absent).
    Scalar {
        /// The field.
        field: String,
        /// Before.
        old: Value,
        /// After.
        new: Value,
    },
    /// Elements added to and removed from an array (labels, dependencies, comments).
    Set {
        /// The field.
        field: String,
        /// New elements.
        added: Vec<Value>,
        /// Elements gone.
        removed: Vec<Value>,
    },
    /// Multi-line text, as a line diff.
    Text {
        /// The field.
        field: String,
        /// The changed lines, with a little context.
        lines: Vec<TextLine>,
        /// The values were too large to diff by lines within the bound (docs/merge-rules.md, "Linear work"):
        /// `lines` are the whole old value removed and the whole new one added.
        #[serde(skip)]
        whole: bool,
    },
}

/// One line of a text diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextLine {
    /// `+`, `-` or ` ` (context).
    pub op: char,
    /// The line, without its newline.
    pub text: String,
}

/// The multi-line values that were too large to diff by lines and are shown whole, as
/// `(id, field)`, for the binaries to name on stderr.
pub fn shown_whole(changes: &[IssueChange]) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    for change in changes {
        if let IssueChange::Changed { id, fields, .. } = change {
            for f in fields {
                if let FieldChange::Text { field, whole: true, .. } = f {
                    out.push((id.as_str(), field.as_str()));
                }
            }
        }
    }
    out
}

/// Fields compared as sets of elements.
const SET_FIELDS: &[&str] = &["labels", "dependencies", "comments"];

fn parse(line: &[u8]) -> Option<(Vec<String>, serde_json::Map<String, Value>)> {
    let obj = RawObject::parse(line).ok()?;
    let order = obj.entries.iter().map(|e| e.key.to_string()).collect();
    let map = serde_json::from_slice(line).ok()?;
    Some((order, map))
}

fn title(line: &[u8]) -> Option<String> {
    parse(line).and_then(|(_, m)| m.get("title").and_then(Value::as_str).map(str::to_owned))
}

/// Compares one issue's old and new line (`None`: absent). `None` when the bytes are equal.
pub fn diff_issue(id: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> Option<IssueChange> {
    let id = id.to_owned();
    match (old, new) {
        (None, None) => None,
        (None, Some(n)) => Some(IssueChange::Added { id, title: title(n) }),
        (Some(o), None) => Some(IssueChange::Removed { id, title: title(o) }),
        (Some(o), Some(n)) if o == n => None,
        (Some(o), Some(n)) => {
            let (Some((_, old)), Some((order, new))) = (parse(o), parse(n)) else {
                // Not JSON on one side: the whole line is the change.
                let text = |b: &[u8]| Value::String(String::from_utf8_lossy(b).into_owned());
                return Some(IssueChange::Changed {
                    id,
                    title: None,
                    fields: vec![FieldChange::Scalar { field: "(line)".into(), old: text(o), new: text(n) }],
                });
            };
            if old == new {
                return Some(IssueChange::Reformatted { id });
            }
            let mut keys: Vec<&str> = order.iter().map(String::as_str).collect();
            keys.extend(old.keys().map(String::as_str).filter(|k| !new.contains_key(*k)));
            let mut seen = std::collections::HashSet::new();
            let fields = keys.into_iter().filter(|k| seen.insert(*k)).filter_map(|k| field_change(k, old.get(k), new.get(k))).collect();
            Some(IssueChange::Changed { id, title: new.get("title").and_then(Value::as_str).map(str::to_owned), fields })
        }
    }
}

fn field_change(field: &str, old: Option<&Value>, new: Option<&Value>) -> Option<FieldChange> {
    if old == new {
        return None;
    }
    let null = Value::Null;
    let (o, n) = (old.unwrap_or(&null), new.unwrap_or(&null));
    let elements = |v: &Value| -> Option<Vec<Value>> {
        match v {
            Value::Array(a) => Some(a.clone()),
            Value::Null => Some(Vec::new()),
            _ => None,
        }
    };
    if SET_FIELDS.contains(&field) {
        if let (Some(a), Some(b)) = (elements(o), elements(n)) {
            // Compared as compact JSON text (serde_json sorts object keys): one set each, not a
            // scan of one array per element of the other.
            let texts = |v: &[Value]| -> std::collections::HashSet<String> { v.iter().map(Value::to_string).collect() };
            let (a_texts, b_texts) = (texts(&a), texts(&b));
            let added: Vec<Value> = b.iter().filter(|x| !a_texts.contains(&x.to_string())).cloned().collect();
            let removed: Vec<Value> = a.iter().filter(|x| !b_texts.contains(&x.to_string())).cloned().collect();
            if !added.is_empty() || !removed.is_empty() {
                return Some(FieldChange::Set { field: field.to_owned(), added, removed });
            }
            // Same elements in another order.
        }
    }
    let multiline = |v: &Value| v.as_str().is_some_and(|s| s.contains('\n'));
    if (multiline(o) || multiline(n)) && (o.is_string() || o.is_null()) && (n.is_string() || n.is_null()) {
        let (a, b) = (o.as_str().unwrap_or(""), n.as_str().unwrap_or(""));
        let (a_lines, b_lines): (Vec<&str>, Vec<&str>) = (a.split_inclusive('\n').collect(), b.split_inclusive('\n').collect());
        if !crate::merge::text::line_diff_fits(&a_lines, &b_lines) {
            let line = |op: char| move |l: &&str| TextLine { op, text: l.trim_end_matches('\n').to_owned() };
            let lines = a_lines.iter().map(line('-')).chain(b_lines.iter().map(line('+'))).collect();
            return Some(FieldChange::Text { field: field.to_owned(), lines, whole: true });
        }
        let diff = similar::TextDiff::from_lines(a, b);
        let mut lines = Vec::new();
        for group in diff.grouped_ops(1) {
            for op in group {
                for change in diff.iter_changes(&op) {
                    let op = match change.tag() {
                        similar::ChangeTag::Delete => '-',
                        similar::ChangeTag::Insert => '+',
                        similar::ChangeTag::Equal => ' ',
                    };
                    lines.push(TextLine { op, text: change.value().trim_end_matches('\n').to_owned() });
                }
            }
        }
        return Some(FieldChange::Text { field: field.to_owned(), lines, whole: false });
    }
    Some(FieldChange::Scalar { field: field.to_owned(), old: o.clone(), new: n.clone() })
}

/// Every issue that differs between two files, new file order first, then removed issues. An id
/// on several lines is compared by its first line.
pub fn diff_files(old: Vec<u8>, new: Vec<u8>) -> Result<Vec<IssueChange>, crate::diff::SnapshotError> {
    let old = Snapshot::parse(old, false, None)?;
    let new = Snapshot::parse(new, false, None)?;
    Ok(diff_snapshots(&old, &new))
}

/// [`diff_files`] on snapshots already taken.
pub fn diff_snapshots(old: &Snapshot, new: &Snapshot) -> Vec<IssueChange> {
    let ids = changes(old, new);
    ids.ids().iter().filter_map(|id| diff_issue(id, old.lines(id).next(), new.lines(id).next())).collect()
}

/// `bd-merge diff --json`: the two files and what differs.
#[derive(Debug, Clone, Serialize)]
pub struct FileDiff {
    /// The old file, as given.
    pub old: String,
    /// The new file, as given.
    pub new: String,
    /// Each issue that differs.
    pub issues: Vec<IssueChange>,
}

/// Colours for the human report.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// ANSI colours (a terminal, `NO_COLOR` unset).
    pub color: bool,
}

impl Style {
    /// Colour as [`crate::color::stdout`] decides (`--color`, else `NO_COLOR` and a terminal).
    pub fn for_stdout() -> Style {
        Style { color: crate::color::stdout() }
    }

    fn paint(self, code: &str, text: &str) -> String {
        crate::color::paint(self.color, code, text)
    }
}

/// A value as a person reads it: strings without quotes, the rest as compact JSON; control
/// characters escaped ([`escaped`]), so a value is one line that cannot drive a terminal.
pub fn show_value(v: &Value) -> String {
    match v {
        Value::String(s) => escaped(s).into_owned(),
        Value::Null => "(none)".into(),
        other => escaped(&other.to_string()).into_owned(),
    }
}

/// A string as it is (to be split into lines, each then escaped), any other value as
/// [`show_value`] shows it.
fn raw_text(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::String(s) => std::borrow::Cow::Borrowed(s),
        other => std::borrow::Cow::Owned(show_value(other)),
    }
}

/// An array element as a person reads it: a dependency as `type target`, a comment as
/// `#id author: text`, a label as itself.
fn show_element(field: &str, v: &Value) -> String {
    let s = |k: &str| v.get(k).map(show_value).unwrap_or_default();
    match field {
        "dependencies" => format!("{} {}", v.get("type").map(show_value).unwrap_or_else(|| "blocks".into()), s("depends_on_id")),
        "comments" => {
            let text = raw_text(v.get("text").unwrap_or(&Value::Null));
            let first = escaped(text.lines().next().unwrap_or(""));
            let more = if text.lines().count() > 1 { " ..." } else { "" };
            format!("#{} {}: {first}{more}", s("id"), s("author"))
        }
        _ => show_value(v),
    }
}

/// The human report: one block per issue. Ids, field names and values are escaped
/// ([`escaped`]): nothing from the data drives a terminal or starts a line of its own.
pub fn render(changes: &[IssueChange], style: Style) -> String {
    let mut out = String::new();
    for change in changes {
        let id = escaped(change.id());
        let quoted = |t: &Option<String>| t.as_deref().map(|t| format!(" {t:?}")).unwrap_or_default();
        match change {
            IssueChange::Added { title, .. } => {
                let _ = writeln!(out, "{}", style.paint("32", &format!("+ {id}{} (added)", quoted(title))));
            }
            IssueChange::Removed { title, .. } => {
                let _ = writeln!(out, "{}", style.paint("31", &format!("- {id}{} (removed)", quoted(title))));
            }
            IssueChange::Reformatted { .. } => {
                let _ = writeln!(out, "= {id} (re-formatted, same values)");
            }
            IssueChange::Changed { title, fields, .. } => {
                let _ = writeln!(out, "{}", style.paint("1", &format!("~ {id}{}", quoted(title))));
                for f in fields {
                    let (FieldChange::Scalar { field, .. } | FieldChange::Set { field, .. } | FieldChange::Text { field, .. }) = f;
                    let name = escaped(field);
                    match f {
                        FieldChange::Scalar { old, new, .. } => {
                            let _ = writeln!(
                                out,
                                "    {name}: {} -> {}",
                                style.paint("31", &show_value(old)),
                                style.paint("32", &show_value(new))
                            );
                        }
                        FieldChange::Set { added, removed, .. } => {
                            let mut parts: Vec<String> =
                                added.iter().map(|v| style.paint("32", &format!("+{}", show_element(field, v)))).collect();
                            parts.extend(removed.iter().map(|v| style.paint("31", &format!("-{}", show_element(field, v)))));
                            let _ = writeln!(out, "    {name}: {}", parts.join("  "));
                        }
                        FieldChange::Text { lines, .. } => {
                            let _ = writeln!(out, "    {name}:");
                            for l in lines {
                                let text = format!("{}{}", l.op, escaped(&l.text));
                                let painted = match l.op {
                                    '+' => style.paint("32", &text),
                                    '-' => style.paint("31", &text),
                                    _ => text,
                                };
                                let _ = writeln!(out, "      {}", painted.trim_end());
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The text conversion for git (`diff.beads.textconv`): each issue as one line per field,
/// prefixed with its id (`bd-12 status: open`), arrays one element per line, multi-line text one
/// line per line (`bd-12 description| ...`). git's own line diff of this shows which fields
/// changed, in `git diff`, `git log -p` and `git show` alike; re-formatted records convert to the
/// same text and show no change. Lines that are not issues are passed through. Everything from
/// the data is escaped ([`escaped`]): git pages this text to a terminal.
pub fn textconv(content: &[u8]) -> String {
    let mut out = String::with_capacity(content.len() + content.len() / 4);
    for line in content.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let Some((order, map)) = parse(line).filter(|(_, m)| m.get("id").is_some_and(Value::is_string) && m.get("_type").is_none()) else {
            out.push_str(&escaped(&String::from_utf8_lossy(line)));
            out.push('\n');
            continue;
        };
        let id = map.get("id").map(show_value).unwrap_or_default();
        let _ = writeln!(out, "{id}");
        for key in order.iter().filter(|k| *k != "id") {
            let Some(v) = map.get(key) else { continue };
            let name = escaped(key);
            match v {
                Value::Array(items) if SET_FIELDS.contains(&key.as_str()) => {
                    for item in items {
                        if key == "comments" {
                            let head =
                                format!("#{} {} {}", show_value(&item["id"]), show_value(&item["author"]), show_value(&item["created_at"]));
                            let _ = writeln!(out, "{id} comment {head}");
                            for l in raw_text(&item["text"]).lines().map(escaped) {
                                let _ = writeln!(out, "{id} comment {head}| {l}");
                            }
                        } else {
                            let _ = writeln!(out, "{id} {name}: {}", show_element(key, item));
                        }
                    }
                }
                Value::String(s) if s.contains('\n') => {
                    for l in s.lines() {
                        let _ = writeln!(out, "{id} {name}| {}", escaped(l));
                    }
                }
                other => {
                    let _ = writeln!(out, "{id} {name}: {}", show_value(other));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_field_change() {
        let old = concat!(
            r#"{"id":"a","title":"T","status":"open","labels":["x","y"],"#,
            r#""description":"one\ntwo\nthree","dependencies":[{"depends_on_id":"b","type":"blocks"}]}"#
        )
        .as_bytes();
        let new = concat!(
            r#"{"id":"a","title":"T","status":"closed","labels":["y","z"],"#,
            r#""description":"one\n2\nthree","dependencies":[{"depends_on_id":"b","#,
            r#""type":"blocks"}],"assignee":"ann"}"#
        )
        .as_bytes();
        let Some(IssueChange::Changed { fields, .. }) = diff_issue("a", Some(old), Some(new)) else { panic!("changed") };
        let names: Vec<String> = fields
            .iter()
            .map(|f| match f {
                FieldChange::Scalar { field, .. } | FieldChange::Set { field, .. } | FieldChange::Text { field, .. } => field.clone(),
            })
            .collect();
        assert_eq!(names, ["status", "labels", "description", "assignee"]);
        assert_eq!(fields[1], FieldChange::Set { field: "labels".into(), added: vec!["z".into()], removed: vec!["x".into()] });
        let FieldChange::Text { lines, .. } = &fields[2] else { panic!("text") };
        let ops: String = lines.iter().map(|l| l.op).collect();
        assert_eq!(ops, " -+ ");
    }

    #[test]
    fn equal_values_in_other_bytes_are_reformatted() {
        let old = br#"{"id":"a","title":"<b>","n":1}"#;
        let new = br#"{"title":"\u003cb\u003e", "id":"a","n":1}"#;
        assert_eq!(diff_issue("a", Some(old), Some(new)), Some(IssueChange::Reformatted { id: "a".into() }));
        assert_eq!(textconv(old), textconv(new));
    }
}

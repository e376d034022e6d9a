//! How an issue record maps to cache rows and back.
//!
//! Import decodes a record's common fields into columns, its labels, dependencies and comments
//! into rows of their own ([`IssueRows`]), and keeps the line itself as the merge base. Export
//! renders an edited issue by patching that stored line with whatever differs in the rows
//! ([`render_issue`]): key order, unknown keys and untouched values keep their exact text. The two
//! directions live together so that a change to one is seen next to the other; the round-trip
//! property (store then render is byte-identical; an SQL edit renders into exactly its fields) is
//! tested below.

use anyhow::{Context, Result};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::record::{json_string, parse_json_str, render_entries, split_array, Entry, RawObject};

/// Columns of `issues` decoded from the record's fields of the same name, in table order.
pub const COLUMNS: [&str; 12] = [
    "title",
    "status",
    "priority",
    "issue_type",
    "assignee",
    "owner",
    "created_at",
    "created_by",
    "updated_at",
    "closed_at",
    "close_reason",
    "external_ref",
];

/// A column value decoded from a record's raw JSON value text: a JSON string as TEXT, an integer
/// as INTEGER, `null` or absent as NULL, anything else as its JSON text.
pub fn column_value(raw: Option<&str>) -> SqlValue {
    let Some(raw) = raw else { return SqlValue::Null };
    match raw.as_bytes().first() {
        Some(b'"') => parse_json_str(raw).map(|s| SqlValue::Text(s.into_owned())).unwrap_or_else(|| SqlValue::Text(raw.to_owned())),
        Some(b'n') if raw == "null" => SqlValue::Null,
        Some(b'-' | b'0'..=b'9') => match raw.parse::<i64>() {
            Ok(i) => SqlValue::Integer(i),
            Err(_) => SqlValue::Text(raw.to_owned()),
        },
        _ => SqlValue::Text(raw.to_owned()),
    }
}

/// The decoded columns of one issue, one value per name in [`COLUMNS`].
#[derive(Debug, Clone, PartialEq)]
pub struct IssueColumns {
    values: [SqlValue; COLUMNS.len()],
}

impl IssueColumns {
    /// The columns of a record.
    pub fn from_record(obj: &RawObject<'_>) -> IssueColumns {
        IssueColumns { values: COLUMNS.map(|c| column_value(obj.get(c))) }
    }

    /// Reads the columns from a row whose first [`COLUMNS`]`.len()` values are the columns, in order.
    pub fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<IssueColumns> {
        let mut values = COLUMNS.map(|_| SqlValue::Null);
        for (i, v) in values.iter_mut().enumerate() {
            *v = row.get(i)?;
        }
        Ok(IssueColumns { values })
    }

    /// `(name, value)` pairs in table order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &SqlValue)> {
        COLUMNS.iter().copied().zip(self.values.iter())
    }

    /// The value of one column.
    pub fn get(&self, name: &str) -> Option<&SqlValue> {
        COLUMNS.iter().position(|c| *c == name).map(|i| &self.values[i])
    }
}

/// One element of an issue's `dependencies`.
#[derive(Debug, Clone, PartialEq)]
pub struct DependencyRow {
    /// The issue depended on.
    pub depends_on_id: String,
    /// `blocks`, `parent-child`, `related`, ...; `blocks` when the element has no type.
    pub kind: String,
    /// When the dependency was added.
    pub created_at: SqlValue,
    /// Who added it.
    pub created_by: SqlValue,
    /// The element's JSON text.
    pub raw: String,
}

/// One element of an issue's `comments`.
#[derive(Debug, Clone, PartialEq)]
pub struct CommentRow {
    /// The comment's (machine-local, numeric) id.
    pub comment_id: SqlValue,
    /// Who wrote it.
    pub author: SqlValue,
    /// What it says.
    pub text: SqlValue,
    /// When.
    pub created_at: SqlValue,
    /// The element's JSON text.
    pub raw: String,
}

/// Every row one record turns into.
#[derive(Debug, Clone, PartialEq)]
pub struct IssueRows {
    /// The `issues` columns.
    pub columns: IssueColumns,
    /// `labels`, in file order.
    pub labels: Vec<String>,
    /// `dependencies`, in file order.
    pub dependencies: Vec<DependencyRow>,
    /// `comments`, in file order.
    pub comments: Vec<CommentRow>,
    /// Why bd's ready list leaves the issue out although it is open: `pinned`, `ephemeral`, or
    /// `defer:<defer_until>`.
    pub ready_exclusion: Option<String>,
}

/// The `ready_exclusion` of a record (see [`IssueRows::ready_exclusion`]).
fn ready_exclusion(obj: &RawObject<'_>) -> Option<String> {
    if obj.get("pinned") == Some("true") {
        Some("pinned".to_owned())
    } else if obj.get("ephemeral") == Some("true") {
        Some("ephemeral".to_owned())
    } else {
        text_of(obj, "defer_until").map(|t| format!("defer:{t}"))
    }
}

/// The strings of an array-of-strings field (other elements skipped; absent: empty).
pub(crate) fn string_array(obj: &RawObject<'_>, key: &str) -> Vec<String> {
    obj.get(key)
        .and_then(split_array)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| parse_json_str(e).map(std::borrow::Cow::into_owned))
        .collect()
}

fn text_of(obj: &RawObject<'_>, key: &str) -> Option<String> {
    match column_value(obj.get(key)) {
        SqlValue::Text(s) => Some(s),
        _ => None,
    }
}

impl IssueRows {
    /// Decodes a record.
    pub fn from_record(obj: &RawObject<'_>) -> IssueRows {
        let elements = |key: &str| obj.get(key).and_then(split_array).unwrap_or_default();
        let dependencies = elements("dependencies")
            .into_iter()
            .filter_map(|e| {
                let d = RawObject::parse_trusted(e)?;
                Some(DependencyRow {
                    depends_on_id: text_of(&d, "depends_on_id").unwrap_or_default(),
                    kind: if d.get("type").is_some() { text_of(&d, "type").unwrap_or_default() } else { "blocks".to_owned() },
                    created_at: column_value(d.get("created_at")),
                    created_by: column_value(d.get("created_by")),
                    raw: e.to_owned(),
                })
            })
            .collect();
        let comments = elements("comments")
            .into_iter()
            .filter_map(|e| {
                let c = RawObject::parse_trusted(e)?;
                Some(CommentRow {
                    comment_id: column_value(c.get("id")),
                    author: column_value(c.get("author")),
                    text: column_value(c.get("text")),
                    created_at: column_value(c.get("created_at")),
                    raw: e.to_owned(),
                })
            })
            .collect();
        IssueRows {
            columns: IssueColumns::from_record(obj),
            labels: string_array(obj, "labels"),
            dependencies,
            comments,
            ready_exclusion: ready_exclusion(obj),
        }
    }
}

/// Replaces an issue's rows. `raw` is stored as the merge base; `rows` may come from another line
/// (a three-way merge result).
pub(crate) fn store_issue(tx: &Transaction<'_>, id: &str, raw: &str, line_hash: i64, rows: &IssueRows, is_new: bool) -> Result<()> {
    static INSERT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = INSERT.get_or_init(|| {
        format!(
            "INSERT OR REPLACE INTO issues (id, {}, raw, line_hash, ready_exclusion) VALUES (?1, {}, ?{}, ?{}, ?{})",
            COLUMNS.join(", "),
            (2..2 + COLUMNS.len()).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", "),
            COLUMNS.len() + 2,
            COLUMNS.len() + 3,
            COLUMNS.len() + 4
        )
    });
    let mut st = tx.prepare_cached(sql)?;
    let mut values: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(COLUMNS.len() + 3);
    values.push(&id);
    values.extend(rows.columns.values.iter().map(|v| v as &dyn rusqlite::ToSql));
    values.push(&raw);
    values.push(&line_hash);
    values.push(&rows.ready_exclusion);
    st.execute(values.as_slice())?;
    if !is_new {
        remove_children(tx, id)?;
    }
    if !rows.labels.is_empty() {
        let mut st = tx.prepare_cached("INSERT OR IGNORE INTO labels (issue_id, label, position) VALUES (?1, ?2, ?3)")?;
        for (i, l) in rows.labels.iter().enumerate() {
            st.execute(params![id, l, i as i64])?;
        }
    }
    if !rows.dependencies.is_empty() {
        let mut st = tx.prepare_cached(
            "INSERT OR IGNORE INTO dependencies (issue_id, depends_on_id, type, created_at, created_by, position, raw) VALUES \
                (?1,?2,?3,?4,?5,?6,?7)",
        )?;
        for (i, d) in rows.dependencies.iter().enumerate() {
            st.execute(params![id, d.depends_on_id, d.kind, d.created_at, d.created_by, i as i64, d.raw])?;
        }
    }
    if !rows.comments.is_empty() {
        let mut st = tx.prepare_cached(
            "INSERT INTO comments (issue_id, comment_id, author, text, created_at, position, raw) VALUES (?1,?2,?3,?4,?5,?6,?7)",
        )?;
        for (i, c) in rows.comments.iter().enumerate() {
            st.execute(params![id, c.comment_id, c.author, c.text, c.created_at, i as i64, c.raw])?;
        }
    }
    Ok(())
}

/// Deletes an issue's labels, dependencies and comments.
pub(crate) fn remove_children(tx: &Transaction<'_>, id: &str) -> Result<()> {
    for sql in [
        "DELETE FROM labels WHERE issue_id = ?1",
        "DELETE FROM dependencies WHERE issue_id = ?1",
        "DELETE FROM comments WHERE issue_id = ?1",
    ] {
        tx.prepare_cached(sql)?.execute([id])?;
    }
    Ok(())
}

/// Stores a line as an issue's synced state: the new merge base with rows decoded from it.
pub(crate) fn store_line(tx: &Transaction<'_>, id: &str, line: &str) -> Result<()> {
    let obj = RawObject::parse_str(line).with_context(|| format!("line of {id} is not valid"))?;
    store_issue(tx, id, line, super::line_hash(line.as_bytes()), &IssueRows::from_record(&obj), false)
}

/// Renders a dirty issue: its stored line patched with the cache's current values. `None` when the
/// issue was deleted through SQL.
pub fn render_issue(conn: &Connection, id: &str, go_style: bool) -> Result<Option<String>> {
    let sql = format!("SELECT {}, raw FROM issues WHERE id = ?1", COLUMNS.join(", "));
    let row: Option<(IssueColumns, Option<String>)> =
        conn.prepare_cached(&sql)?.query_row([id], |r| Ok((IssueColumns::from_row(r)?, r.get(COLUMNS.len())?))).optional()?;
    let Some((columns, raw)) = row else {
        return Ok(None);
    };
    let raw = raw.unwrap_or_else(|| "{}".to_owned());
    let obj = RawObject::parse_str(&raw).with_context(|| format!("stored line of {id} is not valid"))?;
    let mut entries: Vec<Entry<'_>> = obj.entries.clone();
    let (colon, comma) = (obj.colon, obj.comma);

    if column_value(obj.get("id")) != SqlValue::Text(id.to_owned()) {
        set(&mut entries, "id", Some(json_string(id, go_style)), go_style);
        if let Some(pos) = entries.iter().position(|e| e.key == "id") {
            let e = entries.remove(pos);
            entries.insert(0, e);
        }
    }
    for (name, value) in columns.iter() {
        if column_value(obj.get(name)) != *value {
            set(&mut entries, name, encode(value, go_style), go_style);
        }
    }

    let labels: Vec<String> = {
        let mut st = conn.prepare_cached("SELECT label FROM labels WHERE issue_id = ?1 ORDER BY position, rowid")?;
        let rows = st.query_map([id], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    if let Some(text) = patched_labels(&obj, &labels, comma, go_style) {
        set(&mut entries, "labels", text, go_style);
    }

    let deps = child_elements(
        conn,
        "SELECT depends_on_id, type, created_at, created_by, raw FROM dependencies WHERE issue_id = ?1 ORDER BY position, rowid",
        id,
        &["depends_on_id", "type", "created_at", "created_by"],
        ("issue_id", 0),
        (colon, comma, go_style),
    )?;
    patch_array(&mut entries, &obj, "dependencies", deps, comma, go_style);
    let comments = child_elements(
        conn,
        "SELECT comment_id, author, text, created_at, raw FROM comments WHERE issue_id = ?1 ORDER BY position, rowid",
        id,
        &["id", "author", "text", "created_at"],
        ("issue_id", 1),
        (colon, comma, go_style),
    )?;
    patch_array(&mut entries, &obj, "comments", comments, comma, go_style);

    Ok(Some(render_entries(&entries, colon, comma)))
}

/// The `labels` array after the cache's label rows (`labels`) changed, patched element by element
/// so that what the edit did not touch keeps its text: elements that are not strings, and every
/// repeat of a label still present, stay where they are; labels removed go; labels added follow
/// (in id order when the array was sorted). `None` when the labels did not change; `Some(None)`
/// when the array becomes empty (the key is left out).
fn patched_labels(obj: &RawObject<'_>, labels: &[String], comma: &str, go_style: bool) -> Option<Option<String>> {
    let old: Vec<&str> = obj.get("labels").and_then(split_array).unwrap_or_default();
    let old_strings: Vec<Option<std::borrow::Cow<'_, str>>> = old.iter().map(|e| parse_json_str(e)).collect();
    let present = |l: &str| old_strings.iter().any(|s| s.as_deref() == Some(l));
    let kept: Vec<&str> =
        old.iter().zip(&old_strings).filter(|(_, s)| s.as_deref().is_none_or(|s| labels.iter().any(|l| l == s))).map(|(e, _)| *e).collect();
    let mut added: Vec<&String> = labels.iter().filter(|l| !present(l)).collect();
    added.dedup();
    if kept.len() == old.len() && added.is_empty() {
        return None;
    }
    let strings: Vec<&str> = old_strings.iter().flatten().map(std::convert::AsRef::as_ref).collect();
    let sorted = old_strings.iter().all(Option::is_some) && strings.windows(2).all(|w| w[0] <= w[1]);
    let mut elements: Vec<String> = kept.iter().map(std::string::ToString::to_string).collect();
    if sorted {
        let mut all: Vec<String> = kept.iter().filter_map(|e| parse_json_str(e).map(std::borrow::Cow::into_owned)).collect();
        all.extend(added.iter().map(|l| (*l).clone()));
        all.sort();
        // Keep the kept elements' own text (escapes) for labels already there.
        elements = all
            .iter()
            .map(|l| {
                kept.iter()
                    .find(|e| parse_json_str(e).as_deref() == Some(l.as_str()))
                    .map_or_else(|| json_string(l, go_style), std::string::ToString::to_string)
            })
            .collect();
    } else {
        elements.extend(added.iter().map(|l| json_string(l, go_style)));
    }
    Some((!elements.is_empty()).then(|| format!("[{}]", elements.join(comma))))
}

/// The JSON texts of an issue's dependencies or comments: each row's stored element text, or for
/// a row added or edited through SQL, an object built from its columns (`fields`, in order, with
/// the issue id inserted as `issue_key.0` at position `issue_key.1`). The query's last column is
/// the stored text.
fn child_elements(
    conn: &Connection,
    sql: &str,
    id: &str,
    fields: &[&str],
    issue_key: (&str, usize),
    (colon, comma, go_style): (&str, &str, bool),
) -> Result<Vec<String>> {
    let mut st = conn.prepare_cached(sql)?;
    let rows = st.query_map([id], |r| {
        if let Some(raw) = r.get::<_, Option<String>>(fields.len())? {
            return Ok(raw);
        }
        let mut values: Vec<(&str, SqlValue)> =
            fields.iter().enumerate().map(|(i, f)| Ok((*f, r.get::<_, SqlValue>(i)?))).collect::<rusqlite::Result<_>>()?;
        values.insert(issue_key.1, (issue_key.0, SqlValue::Text(id.to_owned())));
        Ok(object(&values, colon, comma, go_style))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn patch_array(entries: &mut Vec<Entry<'_>>, obj: &RawObject<'_>, key: &str, elements: Vec<String>, comma: &str, go_style: bool) {
    let old: Vec<&str> = obj.get(key).and_then(split_array).unwrap_or_default();
    if old.iter().copied().eq(elements.iter().map(String::as_str)) {
        return;
    }
    let text = (!elements.is_empty()).then(|| format!("[{}]", elements.join(comma)));
    set(entries, key, text, go_style);
}

/// A JSON object of the non-null fields, in the given order.
fn object(fields: &[(&str, SqlValue)], colon: &str, comma: &str, go_style: bool) -> String {
    let entries: Vec<Entry<'static>> =
        fields.iter().filter_map(|(k, v)| encode(v, go_style).map(|raw| Entry::new(k, raw, go_style))).collect();
    render_entries(&entries, colon, comma)
}

/// Replaces (in place), adds (where the record's writer puts the key), or (with `None`) removes
/// an entry.
///
/// A record that repeats a key is read by its last occurrence (as bd does), so that is the one
/// replaced; removing a key removes every occurrence (an earlier one would otherwise come back).
fn set(entries: &mut Vec<Entry<'_>>, key: &str, raw: Option<String>, go_style: bool) {
    let pos = entries.iter().rposition(|e| e.key == key);
    match (pos, raw) {
        (Some(i), Some(raw)) => entries[i].raw_value = std::borrow::Cow::Owned(raw),
        (Some(_), None) => entries.retain(|e| e.key != key),
        (None, Some(raw)) => {
            let keys: Vec<&str> = entries.iter().map(|e| e.key.as_ref()).collect();
            let at = crate::conventions::insert_position(&keys, key);
            entries.insert(at, Entry::new(key, raw, go_style));
        }
        (None, None) => {}
    }
}

/// A column value as JSON text; `None` for NULL (the key is left out).
fn encode(value: &SqlValue, go_style: bool) -> Option<String> {
    match value {
        SqlValue::Null => None,
        SqlValue::Integer(i) => Some(i.to_string()),
        SqlValue::Real(f) => Some(serde_json::Number::from_f64(*f).map(|n| n.to_string()).unwrap_or_else(|| "null".into())),
        SqlValue::Text(s) => Some(json_string(s, go_style)),
        SqlValue::Blob(b) => Some(json_string(&String::from_utf8_lossy(b), go_style)),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rusqlite::Connection;
    use serde_json::{json, Value};

    use super::*;
    use crate::cache::{with_guard, Cache, OpenMode, Paths};

    fn cache(dir: &std::path::Path) -> Cache {
        let paths = Paths { file: dir.join("issues.jsonl"), db: dir.join("cache.db") };
        Cache::open(&paths, OpenMode::write(std::time::Duration::from_secs(5))).expect("cache")
    }

    fn store(conn: &mut Connection, line: &str) {
        with_guard(conn, |tx| {
            let obj = RawObject::parse_str(line).expect("valid");
            store_issue(tx, "x-1", line, crate::cache::line_hash(line.as_bytes()), &IssueRows::from_record(&obj), true)
        })
        .expect("store");
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![Just(String::new()), "[a-z <>&\"\\\\é\u{1F600}\n\t]{1,24}"]
    }

    prop_compose! {
        fn record()(
            title in text(),
            status in prop_oneof![Just("open"), Just("closed"), Just("in_progress")],
            priority in 0i64..5,
            assignee in proptest::option::of("[a-z]{1,8}"),
            labels in proptest::collection::btree_set("[a-z]{1,6}", 0..4),
            deps in proptest::collection::vec(("[a-z]{1,4}-[0-9]{1,3}", prop_oneof![Just("blocks"), Just("related")]), 0..3),
            comments in proptest::collection::vec(text(), 0..3),
            unknown in proptest::option::of(text()),
            keys_reversed in any::<bool>(),
        ) -> String {
            let mut fields: Vec<(&str, Value)> = vec![
                ("id", json!("x-1")),
                ("title", json!(title)),
                ("status", json!(status)),
                ("priority", json!(priority)),
                ("created_at", json!("2025-01-01T00:00:00Z")),
                ("updated_at", json!("2025-01-02T00:00:00.5Z")),
            ];
            if let Some(a) = assignee { fields.push(("assignee", json!(a))); }
            if !labels.is_empty() { fields.push(("labels", json!(labels))); }
            if !deps.is_empty() {
                let mut seen = std::collections::BTreeSet::new();
                let deps: Vec<Value> = deps.into_iter().filter(|d| seen.insert(d.clone()))
                    .map(|(on, t)| json!({"issue_id": "x-1", "depends_on_id": on, "type": t})).collect();
                fields.push(("dependencies", Value::Array(deps)));
            }
            if !comments.is_empty() {
                let cs: Vec<Value> = comments.into_iter().enumerate()
                    .map(|(i, t)| json!({"id": i + 1, "issue_id": "x-1", "author": "a", "text": t,
                        "created_at": "2025-01-01T00:00:00Z"})).collect();
                fields.push(("comments", Value::Array(cs)));
            }
            if let Some(u) = unknown { fields.push(("custom", json!({"note": u, "n": [1, 2.5, null]}))); }
            if keys_reversed { fields[1..].reverse(); }
            let body: Vec<String> = fields.iter().map(|(k, v)| format!("{}:{}", json!(k), v)).collect();
            format!("{{{}}}", body.join(","))
        }
    }

    /// An SQL edit and the field it changes, with the new value.
    fn edit() -> impl Strategy<Value = (String, &'static str, Value)> {
        prop_oneof![
            "[a-zA-Z <é]{1,12}".prop_map(|t| (format!("UPDATE issues SET title = '{t}'"), "title", json!(t))),
            (0i64..9).prop_map(|p| (format!("UPDATE issues SET priority = {p}"), "priority", json!(p))),
            Just(("UPDATE issues SET assignee = 'zed'".to_owned(), "assignee", json!("zed"))),
            Just(("UPDATE issues SET assignee = NULL".to_owned(), "assignee", Value::Null)),
            Just(("UPDATE issues SET status = 'blocked'".to_owned(), "status", json!("blocked"))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn a_stored_record_renders_back_byte_for_byte(line in record()) {
            let dir = tempfile::tempdir().expect("tmp");
            let mut cache = cache(dir.path());
            store(&mut cache.conn, &line);
            prop_assert_eq!(render_issue(&cache.conn, "x-1", false).expect("render"), Some(line));
        }

        #[test]
        fn an_sql_edit_renders_into_exactly_the_changed_fields(line in record(), (sql, field, value) in edit()) {
            let dir = tempfile::tempdir().expect("tmp");
            let mut cache = cache(dir.path());
            store(&mut cache.conn, &line);
            cache.conn.execute_batch(&sql).expect("edit");
            let rendered = render_issue(&cache.conn, "x-1", false).expect("render").expect("present");
            let before: serde_json::Map<String, Value> = serde_json::from_str(&line).expect("json");
            let after: serde_json::Map<String, Value> = serde_json::from_str(&rendered).expect("rendered json");
            let changed_to = |v: &Value| if v.is_null() { None } else { Some(v.clone()) };
            prop_assert_eq!(after.get(field).cloned(), changed_to(&value), "{}", rendered);
            let same_value = before.get(field).cloned() == changed_to(&value);
            for key in before.keys().chain(after.keys()) {
                if key == field {
                    continue;
                }
                if key == "updated_at" && !same_value {
                    prop_assert_ne!(before.get(key), after.get(key), "an edit bumps updated_at");
                    continue;
                }
                prop_assert_eq!(before.get(key), after.get(key), "{} changed: {}", key, rendered);
            }
        }
    }
}

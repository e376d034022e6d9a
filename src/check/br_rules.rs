//! The lines br 0.7.6's import refuses, found before br meets them.
//!
//! `br sync --import-only` (and the automatic import every br command runs) refuses a whole file
//! for one line it does not accept, and imports nothing: a value past its length, a label with a
//! space, a `closed_at` before `created_at`, a dependency on the issue itself. A merge, a repair
//! or a hand edit can write such a line, and `check` must say so, naming the line and br's own
//! words. The rules are br 0.7.6's (its validator, its import's repairs and passes, its relation
//! checks; docs/trackers.md, "Lines br refuses", says where), held to the real br by a
//! differential test (`br_check::check_reports_exactly_the_lines_br_refuses_to_import`). Lines git conflict markers, invalid JSON
//! and repeated ids are reported by `check`'s own findings; a file in bd 1.0's shape (header and
//! `_type` lines) is bd's, not br's, and is left to bd.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{Finding, FindingKind};
use crate::jsonl::Jsonl;
use crate::timestamp::{self, Instant};

/// The fields that must not hold a NUL character (br's validator).
const NO_NUL: [&str; 13] = [
    "title",
    "description",
    "design",
    "acceptance_criteria",
    "prerequisites",
    "notes",
    "status",
    "issue_type",
    "assignee",
    "owner",
    "created_by",
    "external_ref",
    "source_system",
];

/// Optional string fields (a wrong type is refused; `null` is absent).
const STRINGS: [&str; 21] = [
    "description",
    "design",
    "acceptance_criteria",
    "prerequisites",
    "notes",
    "assignee",
    "owner",
    "created_by",
    "close_reason",
    "closed_by_session",
    "bypass_reason",
    "external_ref",
    "source_system",
    "source_repo",
    "source_repo_path",
    "agent_context",
    "deleted_by",
    "delete_reason",
    "original_type",
    "compacted_at_commit",
    "sender",
];

/// Optional timestamps.
const TIMES: [&str; 5] = ["closed_at", "due_at", "defer_until", "deleted_at", "compacted_at"];

/// Optional 32-bit integers.
const INTS: [&str; 3] = ["estimated_minutes", "compaction_level", "original_size"];

/// Booleans that may not be `null`.
const BOOLS: [&str; 3] = ["ephemeral", "pinned", "is_template"];

/// The statuses and types br knows (others are custom, at most 50 characters).
const STATUSES: [&str; 9] = ["open", "in_progress", "inprogress", "blocked", "deferred", "draft", "closed", "tombstone", "pinned"];
const TYPES: [&str; 7] = ["task", "bug", "feature", "epic", "chore", "docs", "question"];

/// Statuses br's import turns into `closed`.
const CLOSED_ALIASES: [&str; 5] = ["done", "complete", "completed", "finished", "resolved"];

/// Whether `content` is bd 1.0's export (a header line, `_type` lines): then br's rules do not
/// apply.
fn is_bd_export(content: &[u8]) -> bool {
    memchr::memmem::find(content, b"\"_type\"").is_some() || memchr::memmem::find(content, b"\"_schema\"").is_some()
}

/// A timestamp as br reads one (chrono's RFC 3339: `T`, `t` or a space, `Z`, `z` or an offset).
fn instant(v: &Value) -> Option<Instant> {
    timestamp::parse(v.as_str()?)
}

/// An i32 the way serde reads one into an `i32` (an integer in range; `2.0` is not one).
fn i32_of(v: &Value) -> Option<i32> {
    v.as_i64().and_then(|n| i32::try_from(n).ok())
}

/// What br says about one issue line (its JSON value), in br's order: the first reason that
/// stops its import. `None` when br takes the line.
fn refusal(obj: &Map<String, Value>) -> Option<String> {
    let labels = match parse_refusal(obj) {
        Ok(labels) => labels,
        Err(reason) => return Some(reason),
    };
    let errors = validation_errors(obj, labels);
    (!errors.is_empty()).then(|| errors.join(", "))
}

/// The first stage of br's import: reading the line into its issue type (serde), which stops at
/// the first field missing or of the wrong type. The line's labels when it passes.
fn parse_refusal(obj: &Map<String, Value>) -> Result<&[Value], String> {
    // Required fields and types (serde, while parsing).
    for key in ["id", "title"] {
        match obj.get(key) {
            None => return Err(format!("missing field `{key}`")),
            Some(Value::String(_)) => {}
            Some(_) => return Err(format!("{key}: not a string")),
        }
    }
    for key in ["created_at", "updated_at"] {
        match obj.get(key) {
            None => return Err(format!("missing field `{key}`")),
            Some(v) if instant(v).is_none() => return Err(format!("{key}: not an RFC 3339 date and time")),
            Some(_) => {}
        }
    }
    for key in ["status", "issue_type"] {
        if obj.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!("{key}: not a string"));
        }
    }
    if obj.get("priority").is_some_and(|v| i32_of(v).is_none()) {
        return Err("priority: not a 32-bit integer".to_owned());
    }
    for key in BOOLS {
        if obj.get(key).is_some_and(|v| !v.is_boolean()) {
            return Err(format!("{key}: not true or false"));
        }
    }
    for key in STRINGS {
        if obj.get(key).is_some_and(|v| !(v.is_string() || v.is_null())) {
            return Err(format!("{key}: not a string"));
        }
    }
    for key in TIMES {
        if obj.get(key).is_some_and(|v| !v.is_null() && instant(v).is_none()) {
            return Err(format!("{key}: not an RFC 3339 date and time"));
        }
    }
    for key in INTS {
        if obj.get(key).is_some_and(|v| !v.is_null() && i32_of(v).is_none()) {
            return Err(format!("{key}: not a 32-bit integer"));
        }
    }
    if obj.get("bypassed_policy").is_some_and(|v| !(v.is_boolean() || v.is_null())) {
        return Err("bypassed_policy: not true or false".to_owned());
    }
    if obj.get("policy_gates_fired").is_some_and(|v| !(v.is_null() || v.as_array().is_some_and(|a| a.iter().all(Value::is_string)))) {
        return Err("policy_gates_fired: not a list of strings".to_owned());
    }
    let list = |key: &str| -> Result<&[Value], String> {
        match obj.get(key) {
            None => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(_) => Err(format!("{key}: not a list")),
        }
    };
    let labels = list("labels")?;
    if labels.iter().any(|l| !l.is_string()) {
        return Err("labels: not a list of strings".to_owned());
    }
    let deps = list("dependencies")?;
    for d in deps {
        let Some(d) = d.as_object() else { return Err("dependencies: an element is not an object".to_owned()) };
        for key in ["issue_id", "depends_on_id", "type"] {
            if !d.get(key).is_some_and(Value::is_string) {
                return Err(format!("dependencies: `{key}` missing or not a string"));
            }
        }
        if d.get("created_at").is_none_or(|v| instant(v).is_none()) {
            return Err("dependencies: `created_at` missing or not an RFC 3339 date and time".to_owned());
        }
        for key in ["created_by", "metadata", "thread_id"] {
            if d.get(key).is_some_and(|v| !(v.is_string() || v.is_null())) {
                return Err(format!("dependencies: `{key}` not a string"));
            }
        }
    }
    let comments = list("comments")?;
    for c in comments {
        let Some(c) = c.as_object() else { return Err("comments: an element is not an object".to_owned()) };
        if c.get("id").is_none_or(|v| v.as_i64().is_none()) {
            return Err("comments: `id` missing or not an integer".to_owned());
        }
        for key in ["issue_id", "author", "text"] {
            if !c.get(key).is_some_and(Value::is_string) {
                return Err(format!("comments: `{key}` missing or not a string"));
            }
        }
        if c.get("created_at").is_none_or(|v| instant(v).is_none()) {
            return Err("comments: `created_at` missing or not an RFC 3339 date and time".to_owned());
        }
    }
    Ok(labels)
}

/// The second stage: br's validator, after its repairs; all of a line's errors (br joins them with
/// `, `).
fn validation_errors(obj: &Map<String, Value>, labels: &[Value]) -> Vec<String> {
    let text = |key: &str| obj.get(key).and_then(Value::as_str);
    let id = text("id").unwrap_or_default();
    let mut errors: Vec<String> = Vec::new();
    if id.trim().is_empty() {
        errors.push("id: cannot be empty".to_owned());
    }
    if id.len() > 105 {
        errors.push("id: exceeds 105 characters".to_owned());
    }
    if !id.is_empty() && crate::merge::collisions::parse_id(id).is_none() {
        errors.push("id: invalid format (expected prefix-hash)".to_owned());
    }
    let title = text("title").unwrap_or_default();
    if title.trim().is_empty() {
        errors.push("title: cannot be empty".to_owned());
    } else if title.chars().count() > 500 {
        errors.push("title: exceeds 500 characters".to_owned());
    }
    for key in NO_NUL {
        if text(key).is_some_and(|t| t.contains('\0')) {
            errors.push(format!("{key}: cannot contain NUL bytes"));
        }
    }
    let status = text("status").map(str::to_lowercase);
    let closed_alias = status.as_deref().is_some_and(|s| CLOSED_ALIASES.contains(&s.trim()));
    if let Some(s) = status.as_deref().filter(|s| !STATUSES.contains(s) && !closed_alias) {
        if s.chars().count() > 50 {
            errors.push("status: custom status exceeds 50 characters".to_owned());
        }
    }
    if let Some(t) = text("issue_type").map(str::to_lowercase).filter(|t| !TYPES.contains(&t.as_str())) {
        if t.chars().count() > 50 {
            errors.push("issue_type: custom issue type exceeds 50 characters".to_owned());
        }
    }
    for key in ["assignee", "owner", "created_by"] {
        if text(key).is_some_and(|t| t.chars().count() > 200) {
            errors.push(format!("{key}: exceeds 200 characters"));
        }
    }
    if let Some(r) = text("external_ref").map(str::trim).filter(|r| !r.is_empty()) {
        if r.len() > 200 {
            errors.push("external_ref: exceeds 200 characters".to_owned());
        }
        if r.chars().any(char::is_whitespace) {
            errors.push("external_ref: cannot contain whitespace".to_owned());
        }
    }
    if text("source_system").is_some_and(|t| t.chars().count() > 200) {
        errors.push("source_system: exceeds 200 characters".to_owned());
    }
    let mut sorted: Vec<&str> = labels.iter().filter_map(Value::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() > 64 {
        errors.push("labels: exceeds 64 labels".to_owned());
    }
    for (i, label) in sorted.iter().enumerate() {
        if label.is_empty() {
            errors.push(format!("labels: label at index {i}: cannot be empty"));
        } else if label.len() > 50 {
            errors.push(format!("labels: label at index {i}: exceeds 50 characters"));
        } else if !label.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':')) {
            errors.push(format!("labels: label at index {i}: invalid characters (only alphanumeric, hyphen, underscore, colon allowed)"));
        }
    }
    if let Some(p) = obj.get("priority").and_then(i32_of) {
        if !(0..=4).contains(&p) {
            errors.push("priority: must be 0-4".to_owned());
        }
    }
    if let Some(m) = obj.get("estimated_minutes").and_then(i32_of) {
        if m < 0 {
            errors.push("estimated_minutes: cannot be negative".to_owned());
        } else if m > 525_960 {
            errors.push("estimated_minutes: exceeds maximum (525960 minutes / ~1 year)".to_owned());
        }
    }
    // A closed (or tombstone) issue without `closed_at` gets `updated_at` as its `closed_at`.
    let terminal = closed_alias || matches!(status.as_deref(), Some("closed" | "tombstone"));
    if terminal {
        let created = obj.get("created_at").and_then(instant);
        let closed = obj.get("closed_at").filter(|v| !v.is_null()).or_else(|| obj.get("updated_at")).and_then(instant);
        if let (Some(created), Some(closed)) = (created, closed) {
            if closed < created {
                errors.push("closed_at: cannot be before created_at".to_owned());
            }
        }
    }
    errors
}

/// The relation checks br makes while it writes (ephemeral issues are not written, so not
/// checked): comments and dependencies of the issue `id`.
fn relation_refusal(obj: &Map<String, Value>, id: &str) -> Option<String> {
    let empty = Vec::new();
    let comments = obj.get("comments").and_then(Value::as_array).unwrap_or(&empty);
    // (Two comments of one issue under one id: `check`'s duplicate-comment-id.)
    for c in comments {
        let issue_id = c.get("issue_id").and_then(Value::as_str).unwrap_or_default();
        if issue_id != id {
            return Some(format!("comment.issue_id: comment issue_id '{issue_id}' does not match import issue '{id}'"));
        }
    }
    let deps = obj.get("dependencies").and_then(Value::as_array).unwrap_or(&empty);
    for (i, d) in deps.iter().enumerate() {
        let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or_default();
        if text("issue_id") != id {
            return Some(format!("dependency.issue_id: dependency issue_id '{}' does not match import issue '{id}'", text("issue_id")));
        }
        if text("depends_on_id") == id {
            return Some(format!("Issue cannot depend on itself: {id}"));
        }
        if let Some(m) = d.get("metadata").and_then(Value::as_str).filter(|m| !m.trim().is_empty()) {
            if serde_json::from_str::<Value>(m).is_err() {
                return Some(format!("dependencies[{i}].metadata: dependency metadata must be valid JSON"));
            }
        }
        let kind = text("type").to_lowercase().replace('_', "-");
        if kind == "parent-child" {
            for (field, end) in [("issue_id", text("issue_id")), ("depends_on_id", text("depends_on_id"))] {
                if end.starts_with("external:") {
                    return Some(format!("{field}: parent-child dependencies must link local issues: {end}"));
                }
            }
        }
    }
    for c in comments {
        let author = c.get("author").and_then(Value::as_str).unwrap_or_default();
        let body = c.get("text").and_then(Value::as_str).unwrap_or_default();
        if body.trim().is_empty() {
            return Some("content: cannot be empty".to_owned());
        }
        if body.contains('\0') {
            return Some("content: cannot contain NUL bytes".to_owned());
        }
        if author.trim().is_empty() {
            return Some("author: cannot be empty".to_owned());
        }
        if author.len() > 200 {
            return Some("author: exceeds 200 characters".to_owned());
        }
    }
    // Values br stores and reads back otherwise: the import's own check rolls it back.
    for key in ["agent_context", "source_repo"] {
        if obj.get(key).and_then(Value::as_str) == Some("") {
            return Some(format!("{key}: an empty string, which br reads back as absent (its import's check fails)"));
        }
    }
    None
}

/// Every issue line of `content` br 0.7.6 refuses to import, one finding each, in file order;
/// lines that are not JSON objects and repeated ids are `check`'s other findings. Nothing for
/// bd 1.0's export shape.
pub fn refused_lines(content: &[u8]) -> Vec<Finding> {
    if is_bd_export(content) {
        return Vec::new();
    }
    let file = Jsonl::split(content);
    let mut findings = Vec::new();
    let mut external_refs: HashMap<String, usize> = HashMap::new();
    for line in &file.lines {
        let Ok(text) = std::str::from_utf8(line.bytes) else { continue };
        let say = |reason: String| -> Finding {
            let id = serde_json::from_str::<Value>(text.trim()).ok().and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned));
            Finding::new(
                FindingKind::BrRefuses,
                id.as_deref(),
                vec![line.number],
                format!(
                    "br 0.7.6 refuses to import this line, and with it the whole file: {}; edit the line (br then imports the file again)",
                    crate::record::printable(&reason, 300)
                ),
            )
        };
        // Whitespace br's later pass does not strip (it reads `trim_ascii`, not `trim`).
        if text.trim() != text.trim_ascii() {
            findings.push(say("the line is padded with whitespace br does not strip (no-break space, line separator, ...)".to_owned()));
            continue;
        }
        // Not an object: `check`'s own finding (malformed-line); a repeated key is its
        // duplicate-key (the value read here is the last, as br's own parser refuses it).
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(text.trim()) else { continue };
        if let Some(reason) = refusal(&obj) {
            findings.push(say(reason));
            continue;
        }
        let id = obj.get("id").and_then(Value::as_str).unwrap_or_default();
        let ephemeral = obj.get("ephemeral").and_then(Value::as_bool) == Some(true) || id.contains("-wisp-");
        if ephemeral {
            continue;
        }
        if let Some(r) = obj.get("external_ref").and_then(Value::as_str).map(str::trim).filter(|r| !r.is_empty()) {
            if let Some(first) = external_refs.insert(r.to_owned(), line.number) {
                findings.push(say(format!("Duplicate external_ref: {r} (also on line {first})")));
                continue;
            }
        }
        if let Some(reason) = relation_refusal(&obj, id) {
            findings.push(say(reason));
        }
    }
    findings
}

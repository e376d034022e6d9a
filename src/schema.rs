//! JSON Schemas (draft 2020-12) of every `--json` output, for `bd-sync schema [COMMAND]`, so a
//! program can validate what it reads, as `br schema` allows. They describe the shapes in
//! docs/json.md (shapes version [`JSON_VERSION`]); a test checks real outputs against the keys
//! they require.

use serde_json::{json, Value};

/// The version of the JSON shapes (docs/json.md).
pub const JSON_VERSION: u32 = 2;

/// The commands that have a schema, in the order `bd-sync schema` prints them.
pub const COMMANDS: &[&str] = &[
    "ready",
    "blocked",
    "show",
    "status",
    "check",
    "import",
    "export",
    "install",
    "uninstall",
    "diff",
    "log",
    "log-commits",
    "context",
    "error",
];

fn links() -> Value {
    json!({"type": "array", "items": {"type": "object", "required": ["commit", "time", "how", "subject"], "properties": {
        "commit": {"type": "string"}, "time": {"type": "integer"}, "how": {"enum": ["trailer", "mention"]},
        "subject": {"type": "string"}}}})
}

fn ids() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn issue(extra: Value) -> Value {
    let mut props = json!({
        "id": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "design": {"type": "string"},
        "acceptance_criteria": {"type": "string"},
        "notes": {"type": "string"},
        "status": {"type": "string"},
        "priority": {"type": ["integer", "string"]},
        "issue_type": {"type": "string"},
        "assignee": {"type": ["string", "null"]},
        "labels": {"type": "array", "items": {"type": "string"}},
        "dependencies": {"type": "array", "items": {"type": "object", "properties": {
            "issue_id": {"type": "string"}, "depends_on_id": {"type": "string"}, "type": {"type": "string"}}}},
        "comments": {"type": "array", "items": {"type": "object", "properties": {
            "id": {}, "author": {"type": "string"}, "text": {"type": "string"}, "created_at": {"type": "string"}}}},
        "created_at": {"type": "string"},
        "updated_at": {"type": "string"},
        "closed_at": {"type": ["string", "null"]},
        "blocked_by": ids(),
    });
    if let (Some(map), Value::Object(more)) = (props.as_object_mut(), extra) {
        map.extend(more);
    }
    json!({"type": "object", "required": ["id"], "properties": props, "additionalProperties": true})
}

fn change() -> Value {
    json!({"type": "object", "required": ["change", "id"], "properties": {
        "change": {"enum": ["added", "removed", "reformatted", "changed"]},
        "id": {"type": "string"},
        "title": {"type": ["string", "null"]},
        "fields": {"type": "array", "items": {"type": "object", "required": ["kind", "field"], "properties": {
            "kind": {"enum": ["scalar", "set", "text"]}, "field": {"type": "string"}}}}}})
}

fn import_report() -> Value {
    json!({"type": "object", "required": ["noop", "added", "changed", "removed"], "properties": {
        "noop": {"type": "boolean"}, "added": ids(), "changed": ids(), "removed": ids(),
        "skipped": {"type": "array"}, "duplicate_ids": ids(), "merged": ids(), "conflicts": {"type": "array"},
        "repeated_keys": {"type": "array", "items": {"type": "integer"}}, "other_records": {"type": "integer"}}})
}

fn actions() -> Value {
    json!({"type": "object", "required": ["dry_run", "actions"], "properties": {
        "dry_run": {"type": "boolean"},
        "actions": {"type": "array", "items": {"type": "object", "required": ["what", "path", "change"], "properties": {
            "what": {"type": "string"}, "path": {"type": "string"},
            "change": {"enum": ["created", "added", "updated", "unchanged", "removed", "deleted", "absent", "refused"]},
            "warning": {"type": "string"}}}},
        "import": {"anyOf": [import_report(), {"type": "null"}]}}})
}

/// The schema of `command`'s `--json` output, or `None` for a command without one.
pub fn schema(command: &str) -> Option<Value> {
    let body = match command {
        "ready" => json!({"type": "array", "items": issue(json!({
            "parent": {"anyOf": [{"type": "null"}, {"type": "object", "required": ["id"], "properties": {
                "id": {"type": "string"}, "title": {"type": ["string", "null"]}}}]},
            "blocks": ids(), "unblocks": ids()}))}),
        "blocked" => json!({"type": "array", "items": issue(json!({}))}),
        "show" => json!({"type": "array", "items": issue(json!({
            "blocks": ids(), "children": ids(), "dirty": {"type": "boolean"}, "commits": links()}))}),
        "status" => {
            json!({"type": "object", "required": ["cache_exists", "file", "db", "schema_version", "issues", "dirty"], "properties": {
            "cache_exists": {"type": "boolean"}, "file": {"type": "string"}, "db": {"type": "string"},
            "schema_version": {"type": "integer"}, "issues": {"type": "integer"},
            "by_status": {"type": "object", "additionalProperties": {"type": "integer"}},
            "dirty": {"type": "integer"}, "file_changed_since_sync": {"type": "boolean"},
            "synced_at_unix": {"type": ["integer", "null"]}}})
        }
        "check" => json!({"type": "object", "required": ["file", "findings", "errors", "warnings"], "properties": {
            "file": {"type": "string"},
            "findings": {"type": "array", "items": {"type": "object", "required": ["kind", "severity", "message"], "properties": {
                "kind": {"type": "string"}, "severity": {"enum": ["error", "warning"]}, "id": {"type": "string"},
                "lines": {"type": "array", "items": {"type": "integer"}}, "message": {"type": "string"}}}},
            "errors": {"type": "integer"}, "warnings": {"type": "integer"}, "external_references": {"type": "integer"},
            "by_kind": {"type": "object", "additionalProperties": {"type": "integer"}}}}),
        "import" => import_report(),
        "export" => json!({"type": "object", "properties": {
            "written": ids(), "removed": ids(), "unchanged": {"type": "boolean"},
            "import": {"anyOf": [import_report(), {"type": "null"}]},
            "snapshot": {"type": "string"}, "issues": {"type": "integer"}}}),
        "install" | "uninstall" => actions(),
        "diff" => json!({"type": "object", "required": ["old", "new", "issues"], "properties": {
            "old": {"type": "string"}, "new": {"type": "string"}, "issues": {"type": "array", "items": change()}}}),
        "log" => {
            json!({"type": "array", "items": {"type": "object", "required": ["commit", "author", "date", "subject", "change"],
                "properties": {
            "commit": {"type": "string"}, "author": {"type": "string"}, "email": {"type": "string"},
            "date": {"type": "string"}, "subject": {"type": "string"}, "change": change()}}})
        }
        "log-commits" => links(),
        "context" => {
            let text = json!({"type": ["string", "null"]});
            json!({"type": "array", "items": {"type": "object", "required": ["task", "checkpoints", "commits", "files", "dependencies",
                "next"], "properties": {
            "task": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "title": text, "status": text,
                "priority": {"type": ["integer", "string", "null"]}, "assignee": text, "description": text, "acceptance_criteria": text}},
            "checkpoints": {"type": "array", "items": {"type": "object", "required": ["text"], "properties": {
                "created_at": text, "author": text, "text": {"type": "string"}}}},
            "commits": links(),
            "files": {"type": "object", "required": ["committed", "uncommitted"], "properties": {"committed": ids(), "uncommitted": ids()}},
            "dependencies": {"type": "object", "required": ["blocked_by", "blocks"], "properties": {
                "parent": {"anyOf": [{"type": "null"}, {"type": "object", "required": ["id"]}]}, "blocked_by": ids(), "blocks": ids()}},
            "next": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"},
                "title": text}}},
            "suggested": {"type": "boolean", "description": "present (true) when nothing was asked for and nothing is in progress for the \
                actor: the next ready issue, suggested"}}}})
        }
        // What every `--json` command writes on stdout when it fails (the exit code unchanged).
        "error" => json!({"type": "object", "required": ["error"], "properties": {
            "error": {"type": "object", "required": ["kind", "message", "fix"], "properties": {
                "kind": {"enum": ["error", "not-found", "ambiguous", "usage"]}, "message": {"type": "string"},
                "fix": {"type": ["string", "null"]}}}}}),
        _ => return None,
    };
    let mut out = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": format!("bd-sync {command} --json"),
        "x-beads-git-json-version": JSON_VERSION,
    });
    if let (Some(map), Value::Object(body)) = (out.as_object_mut(), body) {
        map.extend(body);
    }
    Some(out)
}

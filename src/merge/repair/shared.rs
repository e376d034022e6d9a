//! What `resolve` and `dedupe` share: finding the file in its repository, and logging every
//! field a merge against an empty base decided.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::super::{Labels, Report, Resolution, Side};
use crate::git::run as git;

/// The repository-relative path of `path` and the work tree it is in.
pub(super) fn in_repository(path: &Path) -> Result<(PathBuf, String)> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let top = PathBuf::from(
        git(dir, &["rev-parse", "--show-toplevel"]).with_context(|| format!("{} is not in a git repository", path.display()))?,
    );
    let absolute = std::path::absolute(path).with_context(|| format!("resolving {}", path.display()))?;
    let canonical_top = std::fs::canonicalize(&top).unwrap_or(top.clone());
    let canonical_dir = std::fs::canonicalize(absolute.parent().unwrap_or(Path::new("/"))).unwrap_or_default();
    let rel_dir = canonical_dir.strip_prefix(&canonical_top).with_context(|| format!("{} is outside {}", path.display(), top.display()))?;
    let rel = rel_dir.join(absolute.file_name().context("a file name")?);
    Ok((top, rel.to_string_lossy().replace('\\', "/")))
}

/// Without a base, every field on which a copy differs from the merged record was decided, even
/// where the field rules (not the policy) decided it: a value one copy lacks is kept, a set takes
/// both copies' members. Each such field not already reported is logged against that copy, so
/// `bd-merge review` lists it and `--restore` can put the copy's value back (`updated_at` is left
/// out: the merge stamps it).
/// Only `overridden[from..]` (the reports of this record's merge) count as already reported.
pub(super) fn log_every_difference(copies: &[&[u8]], merged: &[u8], lines: &[usize], overridden: &mut Vec<(Report, Labels)>, from: usize) {
    let Ok(serde_json::Value::Object(merged)) = serde_json::from_slice::<serde_json::Value>(merged) else { return };
    let id = merged.get("id").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
    let reported: std::collections::HashSet<String> =
        overridden[from.min(overridden.len())..].iter().map(|(r, _)| r.resolution.field.clone()).collect();
    for (copy, &line) in copies.iter().zip(lines) {
        let Ok(serde_json::Value::Object(copy)) = serde_json::from_slice::<serde_json::Value>(copy) else { continue };
        let fields: Vec<&String> = merged.keys().chain(copy.keys().filter(|k| !merged.contains_key(*k))).collect();
        for field in fields {
            let (kept, dropped) = (merged.get(field), copy.get(field));
            let skip = field == "updated_at"
                || reported.contains(field)
                || (reported.contains("status") && super::super::field::STATUS_GROUP.contains(&field.as_str()));
            if kept == dropped || skip {
                continue;
            }
            let json = |v: Option<&serde_json::Value>| v.map(serde_json::Value::to_string);
            let excerpt = |v: &Option<String>| v.as_deref().map_or_else(|| "(absent)".to_owned(), |t| crate::record::printable(t, 45));
            let (kept_json, dropped_json) = (json(kept), json(dropped));
            let resolution = Resolution {
                field: field.clone(),
                kept: Side::Ours,
                kept_value: excerpt(&kept_json),
                other_value: excerpt(&dropped_json),
                reason: "no base: the copies were merged field by field against an empty base".to_owned(),
                kept_json,
                dropped_json,
            };
            let labels = Labels { ours: "the merged copies".to_owned(), theirs: format!("the copy on line {line}") };
            overridden.push((Report { id: id.clone(), resolution }, labels));
        }
    }
}

/// A record line's `updated_at`.
pub(super) fn updated_at_in(line: &[u8]) -> Option<String> {
    crate::record::RawObject::parse(line).ok()?.get("updated_at").and_then(crate::record::parse_json_str).map(std::borrow::Cow::into_owned)
}

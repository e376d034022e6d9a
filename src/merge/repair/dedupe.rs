//! `dedupe`: every id that stands on several lines merged into one record, by redoing the merge
//! that produced the copies when the repository still holds it, else field by field against an
//! empty base; copies that are different issues under one id split to the ids br gives them.

use std::path::Path;

use super::super::producing::{self, Made, NoHistory};
use super::super::{collisions, comments, merge, MergeOptions, Rename, Report, Side, Warning};
use super::shared::{in_repository, log_every_difference, updated_at_in};
use super::types::{DedupeRun, Deduped, History};
use crate::jsonl::{self, Jsonl};
use crate::merge::Labels;
use crate::record::{record_key, Key};

/// Merges every id that stands on several lines into one record, field by field (against an
/// empty base, so what the copies disagree on goes to the policy, `newest` by default); identical
/// repeats collapse. The record stays where its first copy was. Copies of one id with different
/// `created_at` are different issues (created under one id in two clones): the earliest creation
/// keeps the id and each later one gets the id br 0.7.6 would give it ([`collisions::mint`]: the
/// next free child number for `P.N`, a fresh hash id of the same prefix for a root id). The
/// result gives no two comments one id and keeps derived counts true. Returns the new content and
/// what was done; a copy that is not a valid record leaves that id's lines as they are.
pub fn dedupe(content: &[u8], options: &MergeOptions) -> (Vec<u8>, Vec<Deduped>, Vec<Warning>) {
    let mut warnings = Vec::new();
    let mut options = MergeOptions { partial: true, ..options.clone() };
    if options.now.is_none() {
        match crate::timestamp::merge_now() {
            Ok(now) => options.now = Some(now),
            Err(e) => warnings.push(Warning::Note(e.to_string())),
        }
    }
    let file = Jsonl::split(content);
    let keys: Vec<Option<String>> =
        file.lines.iter().map(|l| record_key(l.bytes).ok().map(|k| Key::into_string_key(k).into_owned())).collect();
    let mut groups: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        if let Some(k) = k {
            groups.entry(k.as_str()).or_default().push(i);
        }
    }
    let ctx = DedupeCtx { file: &file, keys: &keys, options: &options, go_style: crate::record::uses_go_escapes(content) };
    let mut replace: std::collections::HashMap<usize, Vec<Vec<u8>>> = std::collections::HashMap::new();
    let mut done = Vec::new();
    let mut movers = Vec::new();
    let mut ids: Vec<(&str, &Vec<usize>)> = groups.iter().filter(|(_, v)| v.len() > 1).map(|(k, v)| (*k, v)).collect();
    ids.sort_by_key(|(_, v)| v[0]);
    for (id, indexes) in ids {
        let Some((merged_lines, deduped, mut moving)) = ctx.one_id(id, indexes, &mut warnings) else {
            continue;
        };
        for m in &mut moving {
            (m.line, m.done) = (indexes[0], done.len());
        }
        movers.append(&mut moving);
        replace.insert(indexes[0], merged_lines);
        for &i in &indexes[1..] {
            replace.insert(i, Vec::new());
        }
        done.push(deduped);
    }
    ctx.move_later_issues(movers, &mut replace, &mut done, &mut warnings);
    let mut lines: Vec<Vec<u8>> = file
        .lines
        .iter()
        .enumerate()
        .flat_map(|(i, l)| match replace.get(&i) {
            Some(merged) => merged.clone(),
            None => vec![l.bytes.to_vec()],
        })
        .collect();
    let renumbered = give_comments_distinct_ids(&mut lines, options.now);
    if renumbered > 0 {
        warnings.push(Warning::Note(format!("{renumbered} comment(s) shared an id with another comment and were given new ids")));
    }
    let mut out = if done.is_empty() && renumbered == 0 {
        content.to_vec()
    } else {
        let mut out = Vec::with_capacity(content.len());
        jsonl::write_lines(&mut out, file.layout, lines.iter().map(Vec::as_slice)).expect("writing to a Vec cannot fail");
        out
    };
    // Derived counts follow what is written (and stale ones elsewhere are made true).
    if let Some(fixed) = super::super::derived::recompute_file(&out) {
        warnings.push(Warning::Note("derived counts (dependency_count, dependent_count, comment_count, parent) recomputed".to_owned()));
        out = fixed;
    }
    (out, done, warnings)
}

/// `bd-merge dedupe` of the file at `path` holding `content`: when ids stand on several lines,
/// looks for the merge commit that produced the file ([`producing::find`]) and, when the file is
/// still that commit's, writes the parents' three-way merge (then merges any copies the parents
/// already had); otherwise merges the copies against an empty base ([`dedupe`]) and says why in
/// [`DedupeRun::history`]. Nothing is written: see `merge_log::record_dedupe` for the merge log.
pub fn dedupe_with_history(path: &Path, content: &[u8], options: &MergeOptions) -> DedupeRun {
    let (out, done, warnings) = dedupe(content, options);
    let fallback = |history, out, warnings, done: Vec<Deduped>| DedupeRun {
        content: out,
        done: done.clone(),
        warnings,
        history,
        history_reports: Vec::new(),
        history_renames: Vec::new(),
        copies_merged: done,
        policy: options.policy,
    };
    if done.is_empty() {
        return fallback(History::NotNeeded, out, warnings, done);
    }
    let found = match in_repository(path) {
        Err(_) => Err(NoHistory::NotARepository),
        Ok((top, rel)) => producing::find(&top, &rel, Made::CopiesOfIds, content),
    };
    let found = match found {
        Ok(found) => found,
        Err(why) => return fallback(History::Missing(why), out, warnings, done),
    };
    let mut merge_options = options.clone();
    merge_options.markers.ours.clone_from(&found.labels.ours);
    merge_options.markers.theirs.clone_from(&found.labels.theirs);
    if merge_options.now.is_none() {
        merge_options.now = crate::timestamp::merge_now().ok();
    }
    let merged = match merge(&found.base, &found.ours, &found.theirs, &merge_options) {
        Ok(m) if m.conflicts == 0 && m.written_twice.is_empty() => m,
        Ok(_) => {
            let reason = "the merge left records it could not write as one line".to_owned();
            return fallback(History::Missing(NoHistory::Unmergeable { commit: found.commit.clone(), reason }), out, warnings, done);
        }
        Err(u) => {
            let reason = u.to_string();
            return fallback(History::Missing(NoHistory::Unmergeable { commit: found.commit.clone(), reason }), out, warnings, done);
        }
    };
    // Copies the parents already had (older tools) are still merged as copies.
    let (content, copies_merged, mut more) = dedupe(&merged.to_vec(), options);
    let mut warnings: Vec<Warning> = merged.warnings.clone();
    warnings.append(&mut more);
    DedupeRun {
        content,
        done,
        warnings,
        history: History::used(&found),
        history_reports: merged.reports.clone(),
        history_renames: merged.renames.clone(),
        copies_merged,
        policy: options.policy,
    }
}

/// What every id's dedupe reads: the file, each line's key, the merge options, the file's escapes.
struct DedupeCtx<'c> {
    file: &'c Jsonl<'c>,
    keys: &'c [Option<String>],
    options: &'c MergeOptions,
    go_style: bool,
}

impl DedupeCtx<'_> {
    /// Merges the copies of one id (on lines `indexes`) into the lines that replace them, or
    /// `None` (with a warning) when a copy is not a record that can be merged.
    fn one_id(&self, id: &str, indexes: &[usize], warnings: &mut Vec<Warning>) -> Option<(Vec<Vec<u8>>, Deduped, Vec<Mover>)> {
        let file = self.file;
        // Each distinct copy once, with the line it first stands on.
        let mut first_line: rustc_hash::FxHashMap<&[u8], usize> = rustc_hash::FxHashMap::default();
        let mut distinct: Vec<&[u8]> = Vec::new();
        for &i in indexes {
            if let std::collections::hash_map::Entry::Vacant(v) = first_line.entry(file.lines[i].bytes) {
                v.insert(file.lines[i].number);
                distinct.push(file.lines[i].bytes);
            }
        }
        let label = crate::record::key_label(id).into_owned();
        let numbers: Vec<usize> = indexes.iter().map(|&i| file.lines[i].number).collect();
        let unmergeable = || format!("{label} (lines {numbers:?}): a copy is not a record that can be merged; left as it is");
        let Some(issues) = issues_among(&distinct) else {
            warnings.push(Warning::Note(unmergeable()));
            return None;
        };
        let mut merged_lines = Vec::with_capacity(issues.len());
        let mut overridden = Vec::new();
        let line_of = |copy: &[u8]| first_line.get(copy).copied().unwrap_or(0);
        for copies in &issues {
            let numbers: Vec<usize> = copies.iter().map(|c| line_of(c)).collect();
            match merge_copies(copies, self.options, &numbers, &mut overridden) {
                Some(line) => merged_lines.push(line),
                None => {
                    warnings.push(Warning::Note(unmergeable()));
                    return None;
                }
            }
        }
        let first_lines: Vec<usize> = issues.iter().map(|copies| copies.first().map(|c| line_of(c)).unwrap_or(0)).collect();
        let movers = (1..merged_lines.len())
            .map(|k| Mover {
                id: id.to_owned(),
                created: collisions::Facts::of(&merged_lines[k]).map(|f| f.created),
                at: k,
                line: 0,
                done: 0,
                labels: Labels {
                    ours: format!("the copy on line {}", first_lines[0]),
                    theirs: format!("the copy on line {}", first_lines[k]),
                },
            })
            .collect();
        Some((merged_lines, Deduped { id: label, lines: numbers, copies: distinct.len(), overridden, renamed: Vec::new() }, movers))
    }

    /// Gives each later issue under a repeated id the id br would mint for it: earliest-created
    /// first over the whole file (br's order), over every id of the file and those handed out
    /// before; the first (earliest created) copy of each id keeps it.
    fn move_later_issues(
        &self,
        mut movers: Vec<Mover>,
        replace: &mut std::collections::HashMap<usize, Vec<Vec<u8>>>,
        done: &mut [Deduped],
        warnings: &mut Vec<Warning>,
    ) {
        if movers.is_empty() {
            return;
        }
        movers.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
        let mut taken = collisions::Taken::new(self.keys.iter().flatten().cloned());
        for m in movers {
            let Some(line) = replace.get_mut(&m.line).and_then(|lines| lines.get_mut(m.at)) else { continue };
            let label = crate::record::key_label(&m.id).into_owned();
            let Some(to) = collisions::Facts::of(line).and_then(|facts| collisions::mint(&m.id, &facts, &taken)) else {
                warnings.push(Warning::Note(format!(
                    "{label}: its copies are different issues, but no free id can be minted for the later one (an id the tracker cannot \
                        parse, or every candidate taken); left as they are"
                )));
                continue;
            };
            taken.insert(to.clone());
            if let Some(text) = collisions::rename_record(line, &m.id, &to, self.go_style) {
                *line = text.into_bytes();
            }
            warnings.push(Warning::Note(format!(
                "{label}: its copies are different issues (created at different times); the later one is now {}",
                crate::record::key_label(&to)
            )));
            if let Some(d) = done.get_mut(m.done) {
                d.renamed.push((Rename { from: m.id, to, side: Side::Theirs }, m.labels));
            }
        }
    }
}

/// A later issue under a repeated id, waiting for its new id.
struct Mover {
    id: String,
    /// Its creation (br's order).
    created: Option<crate::timestamp::Instant>,
    /// Where its line is: `replace[line][at]`, and its id's entry in `done`.
    at: usize,
    line: usize,
    done: usize,
    labels: Labels,
}

/// Gives comments that share an id with another comment, file-wide, new ids (as the merge driver
/// writes them); returns how many were renumbered.
fn give_comments_distinct_ids(lines: &mut [Vec<u8>], now: Option<crate::timestamp::Instant>) -> usize {
    let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
    let changes = comments::shared_comment_ids(&refs, || 0);
    let mut by_line: std::collections::HashMap<usize, Vec<&comments::Renumbering>> = std::collections::HashMap::new();
    for (line, change) in &changes {
        by_line.entry(*line).or_default().push(change);
    }
    let mut renumbered = Vec::new();
    for (i, mine) in by_line {
        let stamps = vec![updated_at_in(&lines[i])];
        if let Some(text) = comments::apply_renumbering(&lines[i], &mine, &stamps, now) {
            renumbered.push((i, text.into_bytes()));
        }
    }
    for (i, text) in renumbered {
        lines[i] = text;
    }
    changes.len()
}

/// The distinct copies of one id grouped by issue: one group, unless the copies were created at
/// different times (then one group per creation, earliest first). `None` when a copy is not a
/// record.
fn issues_among<'c>(copies: &[&'c [u8]]) -> Option<Vec<Vec<&'c [u8]>>> {
    let values: Vec<serde_json::Value> = copies.iter().map(|c| serde_json::from_slice(c).ok()).collect::<Option<_>>()?;
    // Two copies are one issue when their creation is the same instant (the same text, when one
    // does not parse); a copy without `created_at` belongs to the first issue. Grouped through a
    // map of creations, not by comparing each copy with every issue found so far.
    #[derive(PartialEq, Eq, Hash)]
    enum Created {
        At(i64, u32),
        Text(String),
    }
    let created = |v: &serde_json::Value| -> Option<Created> {
        let text = v.get("created_at")?.as_str()?;
        Some(crate::timestamp::parse(text).map_or_else(|| Created::Text(text.to_owned()), |t| Created::At(t.seconds, t.nanos)))
    };
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut by_creation: rustc_hash::FxHashMap<Created, usize> = rustc_hash::FxHashMap::default();
    let mut first_has_none = false;
    for (i, value) in values.iter().enumerate() {
        let key = created(value);
        if groups.is_empty() {
            first_has_none = key.is_none();
            if let Some(key) = key {
                by_creation.insert(key, 0);
            }
            groups.push(vec![i]);
            continue;
        }
        let group = match key {
            _ if first_has_none => Some(0),
            None => Some(0),
            Some(key) => match by_creation.get(&key) {
                Some(&g) => Some(g),
                None => {
                    by_creation.insert(key, groups.len());
                    None
                }
            },
        };
        match group {
            Some(g) => groups[g].push(i),
            None => groups.push(vec![i]),
        }
    }
    groups.sort_by(|a, b| collisions::concurrent_creation(&values[a[0]], &values[b[0]]).unwrap_or(std::cmp::Ordering::Equal));
    Some(groups.into_iter().map(|g| g.into_iter().map(|i| copies[i]).collect()).collect())
}

/// The copies of one issue merged into one line (against an empty base); what the merge of each
/// copy into the ones before it dropped goes to `overridden`, labelled with the copies' lines.
fn merge_copies(copies: &[&[u8]], options: &MergeOptions, lines: &[usize], overridden: &mut Vec<(Report, Labels)>) -> Option<Vec<u8>> {
    let mut acc = copies[0].to_vec();
    // Only this issue's reports count as already decided below (`overridden` holds earlier
    // issues' too: reading all of them per issue made many issues under one id quadratic).
    let start = overridden.len();
    for (k, next) in copies[1..].iter().enumerate() {
        // The copies merged so far named by their first and last line, never listed one by one
        // (a list per step is quadratic in the number of copies).
        let labels = Labels {
            ours: match k {
                0 => format!("the copy on line {}", lines[0]),
                1 => format!("the copies on lines {}, {}", lines[0], lines[1]),
                _ => format!("the {} copies on lines {} to {}", k + 1, lines[0], lines[k]),
            },
            theirs: format!("the copy on line {}", lines[k + 1]),
        };
        let (mut a, mut b) = (acc.clone(), next.to_vec());
        a.push(b'\n');
        b.push(b'\n');
        match merge(b"", &a, &b, options) {
            Ok(m) if m.conflicts == 0 => {
                overridden.extend(m.reports.iter().map(|r| (r.clone(), labels.clone())));
                let mut out = m.to_vec();
                while out.last().is_some_and(|c| *c == b'\n' || *c == b'\r') {
                    out.pop();
                }
                acc = out;
            }
            _ => return None,
        }
    }
    log_every_difference(copies, &acc, lines, overridden, start);
    Some(acc)
}

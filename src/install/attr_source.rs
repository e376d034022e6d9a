//! Which line of which attributes file decides the `merge` attribute of the issues file.
//!
//! `git check-attr` says what the attribute is, never where it comes from, so advice built on it
//! loops: `check` says "not merged with merge=beads: run `bd-sync install`", install finds its
//! own lines present and changes nothing, and a `merge=union` in `.git/info/attributes` (which
//! outranks every `.gitattributes`) keeps winning. This module walks the files in git's order of
//! precedence (`$GIT_DIR/info/attributes`, then `.gitattributes` from the file's own directory up
//! to the top, then `core.attributesFile`), and in each the last line that matches the path and
//! sets, unsets or unspecifies `merge` (the `binary` macro unsets it), so a finding can name
//! `.git/info/attributes:3` and a person can remove that line.

use std::path::{Path, PathBuf};

/// The line that decides an attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrSource {
    /// The attributes file.
    pub file: PathBuf,
    /// The line number (from 1).
    pub line: usize,
    /// What it says for `merge`: `merge=union`, `-merge`, `!merge`, `merge` or `binary`.
    pub setting: String,
}

/// The line that decides `merge` for `rel` (a path relative to the work tree `top`, with `/`),
/// or `None` when no file names it. `git_dir` is the common git dir (where `info/` lives).
pub fn merge_source(top: &Path, git_dir: &Path, rel: &str) -> Option<AttrSource> {
    let mut files: Vec<(PathBuf, String)> = vec![(git_dir.join("info/attributes"), rel.to_owned())];
    // .gitattributes of the file's directory, then each parent, up to the top.
    let parts: Vec<&str> = rel.split('/').collect();
    for depth in (0..parts.len()).rev() {
        let dir = parts[..depth].join("/");
        let sub = parts[depth..].join("/");
        files.push((top.join(&dir).join(".gitattributes"), sub));
    }
    if let Some(global) = crate::git::run(top, &["config", "--path", "--get", "core.attributesFile"]).ok().filter(|s| !s.is_empty()) {
        files.push((PathBuf::from(global), rel.to_owned()));
    }
    files.into_iter().find_map(|(file, sub)| last_setting(&file, &sub))
}

/// The last line of `file` that matches `rel` (relative to the file's directory) and says
/// something about `merge`.
fn last_setting(file: &Path, rel: &str) -> Option<AttrSource> {
    let content = crate::safe_fs::read_regular(file, crate::safe_fs::SMALL_FILE_LIMIT).ok().flatten()?;
    let text = String::from_utf8_lossy(&content);
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let Some(pattern) = words.next().filter(|p| !p.starts_with('#')) else { continue };
        let setting = words.rfind(|w| is_merge_setting(w));
        if let Some(setting) = setting.filter(|_| pattern_matches(pattern, rel)) {
            found = Some(AttrSource { file: file.to_path_buf(), line: i + 1, setting: setting.to_owned() });
        }
    }
    found
}

fn is_merge_setting(word: &str) -> bool {
    matches!(word, "merge" | "-merge" | "!merge" | "binary") || word.starts_with("merge=")
}

/// gitattributes pattern matching, enough for the lines that name an issues file: a pattern
/// without `/` matches the file name at any depth; one with `/` matches the whole relative path
/// (a leading `/` anchors it); `*` and `?` stay within a path component, `**` crosses them.
fn pattern_matches(pattern: &str, rel: &str) -> bool {
    let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
    if pattern.contains('/') {
        glob(pattern.as_bytes(), rel.as_bytes())
    } else {
        glob(pattern.as_bytes(), rel.rsplit('/').next().unwrap_or(rel).as_bytes())
    }
}

/// A linear-time wildcard match (`*`, `**`, `?`, `[...]`, `\` escapes), by the usual
/// backtracking-to-the-last-star method: never exponential in the pattern.
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize, bool)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == b'*' {
            let double = p.get(pi + 1) == Some(&b'*');
            pi += if double { 2 } else { 1 };
            star = Some((pi, si, double));
            continue;
        }
        if pi < p.len() {
            if let Some((len, ok)) = one(&p[pi..], s[si]) {
                if ok {
                    pi += len;
                    si += 1;
                    continue;
                }
            }
        }
        match star {
            Some((sp, ss, double)) if double || s[ss] != b'/' => {
                pi = sp;
                si = ss + 1;
                star = Some((sp, ss + 1, double));
            }
            _ => return false,
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Matches one pattern item at the start of `p` against `c`: its length and whether it matched.
fn one(p: &[u8], c: u8) -> Option<(usize, bool)> {
    match p[0] {
        b'?' => Some((1, c != b'/')),
        b'\\' => p.get(1).map(|&e| (2, e == c)),
        b'[' => {
            let end = p.iter().skip(1).position(|&b| b == b']')? + 1;
            let set = &p[1..end];
            let (negate, set) = match set.first() {
                Some(b'!' | b'^') => (true, &set[1..]),
                _ => (false, set),
            };
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == b'-' {
                    hit |= (set[i]..=set[i + 2]).contains(&c);
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            Some((end + 1, hit != negate && c != b'/'))
        }
        other => Some((1, other == c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_gitattributes_does_for_issues_files() {
        for (p, s, want) in [
            (".beads/issues.jsonl", ".beads/issues.jsonl", true),
            ("/.beads/issues.jsonl", ".beads/issues.jsonl", true),
            ("*.jsonl", ".beads/issues.jsonl", true),
            ("issues.jsonl", ".beads/issues.jsonl", true),
            (".beads/*", ".beads/issues.jsonl", true),
            ("*/issues.jsonl", ".beads/issues.jsonl", true),
            ("**/issues.jsonl", ".beads/issues.jsonl", true),
            ("*.json", ".beads/issues.jsonl", false),
            ("*", ".beads/issues.jsonl", true),
            ("[ib]ssues.jsonl", ".beads/issues.jsonl", true),
            ("[!i]ssues.jsonl", ".beads/issues.jsonl", false),
            ("other/*", ".beads/issues.jsonl", false),
        ] {
            assert_eq!(pattern_matches(p, s), want, "{p} vs {s}");
        }
    }
}

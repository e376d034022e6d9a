//! Every link in the documentation leads somewhere. The README is short and sends its reader to
//! `docs/`, and the pages send each other to headings: a renamed heading or a moved page would
//! otherwise leave a link that works nowhere but in its author's memory. Each relative link in
//! README.md, CONTRIBUTING.md, SECURITY.md and `docs/*.md` must name a file inside the repository,
//! and each `#anchor` a heading of its target, spelled as GitHub spells it (lowercase, spaces to
//! `-`, other punctuation dropped, `-1`, `-2` ... for a repeated heading).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// A link as written: the line it is on (from 1) and its target (`path`, `path#anchor`, `#anchor`).
#[derive(Debug)]
struct Link {
    line: usize,
    target: String,
}

/// Yields each line with its number (from 1) and whether it is inside a fenced code block (the
/// fence lines themselves count as inside), where a `](` is code, not a link.
fn prose_lines(markdown: &str) -> impl Iterator<Item = (usize, &str, bool)> {
    let mut fence: Option<&str> = None;
    markdown.lines().enumerate().map(move |(i, line)| {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        let inside = match (fence, marker) {
            (None, Some(m)) => {
                fence = Some(m);
                true
            }
            (Some(open), Some(m)) if open == m && trimmed.trim_end() == m => {
                fence = None;
                true
            }
            (Some(_), _) => true,
            (None, None) => false,
        };
        (i + 1, line, inside)
    })
}

/// The text of LINE outside inline code spans (a span opened by N backticks closes at the next run
/// of exactly N), with each span replaced by a space. A run that never closes is text.
fn outside_code(line: &str) -> String {
    let mut out = String::new();
    // The run that opened the current span, and what followed it so far.
    let mut open: Option<(usize, String)> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '`' {
            match &mut open {
                Some((_, inside)) => inside.push(c),
                None => out.push(c),
            }
            continue;
        }
        let mut run = 1;
        while chars.peek() == Some(&'`') {
            chars.next();
            run += 1;
        }
        match &mut open {
            None => open = Some((run, String::new())),
            Some((n, _)) if *n == run => {
                open = None;
                out.push(' ');
            }
            Some((_, inside)) => inside.push_str(&"`".repeat(run)),
        }
    }
    if let Some((n, inside)) = open {
        out.push_str(&"`".repeat(n));
        out.push_str(&inside);
    }
    out
}

/// The inline links (`[text](target)`, images too) and link definitions (`[name]: target`) of a
/// markdown text, outside code.
fn links(markdown: &str) -> Vec<Link> {
    let mut found = Vec::new();
    for (line_no, line, in_fence) in prose_lines(markdown) {
        if in_fence {
            continue;
        }
        let prose = outside_code(line);
        let trimmed = prose.trim_start();
        if trimmed.starts_with('[') {
            if let Some((_, rest)) = trimmed.split_once("]: ") {
                found.push(Link { line: line_no, target: first_word(rest) });
                continue;
            }
        }
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let mut depth = 0usize;
            let mut end = after.len();
            for (i, c) in after.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' if depth == 0 => {
                        end = i;
                        break;
                    }
                    ')' => depth -= 1,
                    _ => {}
                }
            }
            found.push(Link { line: line_no, target: first_word(&after[..end]) });
            rest = &after[end..];
        }
    }
    found
}

/// A link destination without its optional title (`path "title"`) or angle brackets.
fn first_word(destination: &str) -> String {
    let d = destination.trim();
    let d = d.strip_prefix('<').and_then(|d| d.split_once('>')).map_or(d, |(inside, _)| inside);
    d.split_whitespace().next().unwrap_or("").to_owned()
}

/// GitHub's anchor for a heading's text: inline markup reduced to its text, lowercase, every
/// character but letters, digits, `-`, `_` and spaces dropped, each space a `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](url)` in a heading anchors as its text.
    while let Some(open) = rest.find('[') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.split_once("](").and_then(|(label, tail)| tail.split_once(')').map(|(_, tail)| (label, tail))) {
            Some((label, tail)) => {
                text.push_str(label);
                rest = tail;
            }
            None => {
                text.push('[');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a markdown text's ATX headings (`#` to `######`) give, a repeated one numbered as
/// GitHub numbers it.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line, in_fence) in prose_lines(markdown) {
        if in_fence {
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        let Some(text) = line.get(hashes..).and_then(|t| t.strip_prefix(' ')) else { continue };
        if !(1..=6).contains(&hashes) {
            continue;
        }
        let text = text.trim_end().trim_end_matches('#');
        let base = slug(text);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// PATH with `.` and `..` resolved by their names alone (no file system), or `None` when a `..`
/// climbs above where the path started.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// What is wrong with the links of FILE (a path under ROOT, the repository's top): one line per
/// broken link, `file:line: target: why`. Links with a scheme (`https:`, `mailto:`) are not
/// followed.
fn broken_links(root: &Path, file: &Path) -> Vec<String> {
    let shown = file.strip_prefix(root).unwrap_or(file).display().to_string();
    let markdown = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => return vec![format!("{shown}: cannot read it: {e}")],
    };
    let dir = file.parent().and_then(|d| d.strip_prefix(root).ok()).unwrap_or(Path::new(""));
    let mut broken = Vec::new();
    for link in links(&markdown) {
        let target = link.target.as_str();
        let scheme =
            target.split_once(':').is_some_and(|(s, _)| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)));
        if scheme {
            continue;
        }
        let mut fail = |why: String| broken.push(format!("{shown}:{}: {target}: {why}", link.line));
        let (path, anchor) = target.split_once('#').map_or((target, None), |(p, a)| (p, Some(a)));
        let relative = if path.is_empty() {
            file.strip_prefix(root).map(Path::to_path_buf).ok()
        } else if let Some(from_top) = path.strip_prefix('/') {
            normalize(Path::new(from_top))
        } else {
            normalize(&dir.join(path))
        };
        let Some(relative) = relative else {
            fail("leads outside the repository".to_owned());
            continue;
        };
        let resolved = root.join(&relative);
        if !resolved.exists() {
            fail(format!("no such file ({})", relative.display()));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if resolved.extension().is_some_and(|e| e == "md") {
            let headings = std::fs::read_to_string(&resolved).map(|t| anchors(&t)).unwrap_or_default();
            if !headings.contains(anchor) {
                fail(format!("no heading of {} has the anchor #{anchor}", relative.display()));
            }
        } else if !is_line_anchor(anchor) {
            fail(format!("{} is not markdown: only line anchors (#L10, #L10-L20) work there", relative.display()));
        }
    }
    broken
}

/// `L10` or `L10-L20`: the anchors GitHub gives lines of a file it shows as code.
fn is_line_anchor(anchor: &str) -> bool {
    let line = |s: &str| s.strip_prefix('L').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    match anchor.split_once('-') {
        Some((from, to)) => line(from) && line(to),
        None => line(anchor),
    }
}

/// The documentation files whose links are checked.
fn documentation(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "SECURITY.md"].iter().map(|f| root.join(f)).collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("read docs/")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

#[test]
fn every_link_in_the_readme_and_the_docs_leads_to_a_file_and_a_heading_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = documentation(root);
    assert!(files.iter().any(|f| f.ends_with("docs/README.md")), "the docs index is checked: {files:?}");
    let checked: usize = files.iter().map(|f| std::fs::read_to_string(f).map(|t| links(&t).len()).unwrap_or(0)).sum();
    assert!(checked > 50, "the scan found the links ({checked})");
    let broken: Vec<String> = files.iter().flat_map(|f| broken_links(root, f)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_checker_reports_a_missing_file_a_missing_anchor_and_a_link_out_of_the_repository() {
    let root = tempfile::tempdir().expect("temp dir");
    let docs = root.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir docs");
    std::fs::write(
        docs.join("guide.md"),
        "# Guide\n\n## When git says CONFLICT\n\n## Setting `-C` and `--json`: flags\n\n## Usage\n\n## Usage\n",
    )
    .expect("write guide");
    std::fs::write(root.path().join("notes.txt"), "notes\n").expect("write notes");
    let page = "# Page\n\n\
        Good: [a](docs/guide.md), [b](docs/guide.md#when-git-says-conflict), [c](#page),\n\
        [d](docs/guide.md#setting--c-and---json-flags), [e](docs/guide.md#usage-1), [f](notes.txt#L3),\n\
        [g](https://example.com/missing.md#nowhere), [h](<docs/guide.md> \"title\").\n\n\
        Code is not a link: `[x](missing.md)`, and in a fence:\n\n```md\n[y](missing.md)\n```\n\n\
        Broken: [one](docs/missing.md), [two](docs/guide.md#when-git-says-conflicts),\n\
        [three](../outside.md), [four](#nowhere), [five](notes.txt#notes)\n";
    let file = root.path().join("README.md");
    std::fs::write(&file, page).expect("write README");
    let broken = broken_links(root.path(), &file);
    let expected = [
        "README.md:13: docs/missing.md: no such file (docs/missing.md)",
        "README.md:13: docs/guide.md#when-git-says-conflicts: no heading of docs/guide.md has the anchor #when-git-says-conflicts",
        "README.md:14: ../outside.md: leads outside the repository",
        "README.md:14: #nowhere: no heading of README.md has the anchor #nowhere",
        "README.md:14: notes.txt#notes: notes.txt is not markdown: only line anchors (#L10, #L10-L20) work there",
    ];
    assert_eq!(broken, expected, "found: {broken:#?}");
}

#[test]
fn anchors_follow_githubs_slugs() {
    assert_eq!(
        slug("When the driver did not run: `bd-merge resolve` and `dedupe`"),
        "when-the-driver-did-not-run-bd-merge-resolve-and-dedupe"
    );
    assert_eq!(
        slug("bd 1.0.4 and later (Dolt database, JSONL export off): `--source-cmd`"),
        "bd-104-and-later-dolt-database-jsonl-export-off---source-cmd"
    );
    assert_eq!(slug("husky (v9)"), "husky-v9");
    assert_eq!(slug("See [the cache](cache.md) first"), "see-the-cache-first");
    let doc = "# A\n## A\n```\n# not a heading\n```\n### A ###\n#hashtag\n";
    let expected: BTreeSet<String> = ["a", "a-1", "a-2"].into_iter().map(str::to_owned).collect();
    assert_eq!(anchors(doc), expected);
}

/// Where a comment or a page cites a document the repository does not hold: the product
/// specification by section, or a tracker issue by number (its rules belong in `docs/`, linked by
/// path). `text` is one file's content; the lines (from 1) that do.
fn outside_citations(text: &str, markdown: bool) -> Vec<usize> {
    // Spelled in parts, so this file does not cite what it looks for.
    let spec = ["SP", "EC §"].concat();
    let spec_file = ["SP", "EC.md"].concat();
    let issue_number = |line: &str| {
        let lower = line.to_ascii_lowercase();
        lower.match_indices("issue ").any(|(at, word)| {
            let rest = &lower[at + word.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            digits >= 2 && !rest[digits..].starts_with('.')
        })
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let comment = markdown || ["//", "#", "/*", "*"].iter().any(|c| line.trim_start().starts_with(c));
            line.contains(&spec) || line.contains(&spec_file) || (comment && issue_number(line))
        })
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn the_repository_cites_no_document_outside_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = documentation(root);
    files.push(root.join("CHANGELOG.md"));
    let mut dirs =
        vec![root.join("src"), root.join("tests"), root.join("benches"), root.join("hooks"), root.join("scripts"), root.join(".ci")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() && !path.ends_with("snapshots") && !path.ends_with("fixtures") {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| ["rs", "sh", "py", "md", "cjs"].iter().any(|x| e == *x)) {
                files.push(path);
            }
        }
    }
    let mut found = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        let markdown = file.extension().is_some_and(|e| e == "md");
        for line in outside_citations(&text, markdown) {
            found.push(format!("{}:{line}", file.strip_prefix(root).unwrap_or(file).display()));
        }
    }
    assert!(found.is_empty(), "cite the page in docs/ that states the rule instead:\n{}", found.join("\n"));
}

#[test]
fn the_citation_check_catches_a_planted_case() {
    let spec = ["SP", "EC §12"].concat();
    assert_eq!(outside_citations(&format!("x\n// merged as ever ({spec})\n"), false), [2]);
    assert_eq!(outside_citations("// fixed in issue 45 item 2\nlet s = \"Issue 13.\";\n", false), [1]);
    assert_eq!(outside_citations("## Round 2 (issue 27)\n", true), [1]);
    assert!(outside_citations("// one issue 2 lines\nlet text = \"issue 45\";\n", false).is_empty());
}

//! One issue record: its id and the exact text of its JSON object, split into key/value spans.
//!
//! Byte stability is the whole point of this module. A record is never turned into a generic
//! JSON tree and printed again; instead a line is scanned into `(key, raw value text)` entries so a
//! changed record can be rebuilt with every untouched value (and the key order, escapes and
//! timestamp strings) exactly as it was read. Finding a record's id takes a fast path for the
//! shape every beads writer produces (`{"id":"..."` first), so records nobody changed are never
//! parsed at all.

use std::borrow::Cow;

/// Why a line cannot be used as an issue record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineProblem {
    /// Leftover git conflict markers (`<<<<<<<`, `=======`, `|||||||`, `>>>>>>>`).
    #[error("leftover conflict marker")]
    ConflictMarker,
    /// The bytes are not UTF-8.
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// Not valid JSON; the text is serde_json's description (with the column).
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    /// Valid JSON, but not an object.
    #[error("not a JSON object")]
    NotAnObject,
    /// An object without a string `"id"` (nor another identity: see [`record_key`]).
    #[error("no string \"id\" field")]
    MissingId,
    /// A valid record that is not an issue: bd 1.0's header line, a memory line, or another
    /// `_type` (see [`record_key`]).
    #[error("not an issue (a header, memory or other record kind)")]
    NotAnIssue,
}

/// True for a character that must not reach a terminal raw: C0 and C1 controls (ESC, BEL, CR,
/// newline, CSI U+009B, NEL U+0085, ...), DEL, the Unicode line and paragraph separators, and the
/// bidirectional overrides that make text read otherwise than it is.
pub fn is_unprintable(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text safe to print on a terminal: control characters (ESC, BEL, C1 controls, ...) from a
/// user's file are shown as `\u{1b}` escapes instead of being sent raw, so a crafted line
/// cannot drive the terminal. At most `max` characters, then `...`.
pub fn printable(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max.saturating_mul(2)));
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push_str("...");
            break;
        }
        push_printable(&mut out, c);
    }
    out
}

fn push_printable(out: &mut String, c: char) {
    if is_unprintable(c) {
        out.push_str(&format!("\\u{{{:x}}}", c as u32));
    } else {
        out.push(c);
    }
}

/// One value from the data (an id, a title, a path, a commit subject) as it may be printed in
/// human-readable output: every [`is_unprintable`] character escaped, newlines included, so a
/// value is always one line and can neither drive a terminal nor forge a row. Borrowed (no copy)
/// when there is nothing to escape. Every binary prints data through this, [`printable`] or
/// [`printable_lines`].
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unprintable) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        push_printable(&mut out, c);
    }
    Cow::Owned(out)
}

/// A whole diagnostic message of several lines (an error chain, a report): like [`escaped`] but
/// keeps the newlines that separate its lines.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && is_unprintable(c)) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.split('\n').map(escaped).collect::<Vec<_>>().join("\n"))
}

/// A path for a message: lossy UTF-8, escaped as [`escaped`] does.
pub fn escaped_path(path: &std::path::Path) -> String {
    escaped(&path.to_string_lossy()).into_owned()
}

/// True when a line starts with one of git's conflict markers (any marker size of 7 or more).
pub fn is_conflict_marker(line: &[u8]) -> bool {
    for &c in b"<=>|" {
        let run = line.iter().take_while(|&&b| b == c).count();
        if run >= 7 && (line.len() == run || line[run] == b' ' || line[run] == b'\t') {
            return true;
        }
    }
    false
}

/// The identity of a record line (docs/merge-rules.md, "Record kinds"): an issue's `id`, or one of the other
/// kinds bd 1.0 writes beside issues.
///
/// The merge and the index key their maps by one string per record
/// ([`into_string_key`](Key::into_string_key)): an issue by its id, any other kind by a string
/// that cannot be an issue id because it starts with NUL. That encoding is known only to this
/// module: everything else asks [`is_issue_key`], [`kind_rank`] and [`key_label`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key<'a> {
    /// An issue (no `_type`, or `_type:"issue"`), by its `id`.
    Issue(Cow<'a, str>),
    /// bd 1.0's header line (`_schema`, no `id`).
    Header,
    /// A memory (`{"_type":"memory","key":...}`), by its key.
    Memory(String),
    /// Any other `_type`, by its `id` (or `key`).
    Other {
        /// The `_type`.
        kind: String,
        /// Its `id`, else its `key`.
        key: String,
    },
}

impl<'a> Key<'a> {
    /// The key as one string (issues: the id itself; other kinds: a string starting with NUL).
    pub fn into_string_key(self) -> Cow<'a, str> {
        match self {
            Key::Issue(id) => id,
            Key::Header => Cow::Borrowed(HEADER_KEY),
            Key::Memory(k) => Cow::Owned(format!("\0memory\0{k}")),
            Key::Other { kind, key } => Cow::Owned(format!("\0{kind}\0{key}")),
        }
    }
}

/// Whether a string key ([`Key::into_string_key`]) is an issue's id (not a header, memory or
/// other record kind).
pub fn is_issue_key(key: &str) -> bool {
    !key.starts_with('\0')
}

/// The key of bd 1.0's header line.
pub const HEADER_KEY: &str = "\0";

/// The order bd writes keys in: the header, issues, memories, other kinds; by key within a kind.
pub fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    kind_rank(a).cmp(&kind_rank(b)).then_with(|| a.cmp(b))
}

/// Where a record kind goes in a file bd writes: the header first, then issues, then memories,
/// then other kinds.
pub fn kind_rank(key: &str) -> u8 {
    if key == HEADER_KEY {
        0
    } else if is_issue_key(key) {
        1
    } else if key.starts_with("\0memory\0") {
        2
    } else {
        3
    }
}

/// A key as a person reads it: the issue id, `(header)`, `memory <key>`, `<type> <id>`
/// (escaped as [`escaped`] does).
pub fn key_label(key: &str) -> Cow<'_, str> {
    if key == HEADER_KEY {
        return Cow::Borrowed("(header)");
    }
    match key.strip_prefix('\0').and_then(|rest| rest.split_once('\0')) {
        Some((kind, k)) => Cow::Owned(format!("{} {}", escaped(kind), printable(k, 80))),
        None => escaped(key),
    }
}

/// Reads `{"id":"<plain string>"` at the start of `rest`, without parsing the rest of the line.
fn leading_id(rest: &[u8]) -> Option<&str> {
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    if rest[end] == b'"' && matches!(rest.get(end + 1), Some(b',' | b'}')) {
        let id = std::str::from_utf8(&rest[..end]).ok()?;
        if !id.bytes().any(|b| b < 0x20) {
            return Some(id);
        }
    }
    None
}

/// The identity of a record line, borrowed when possible.
///
/// Fast paths read `{"id":"...` and bd 1.0's `{"_type":"issue","id":"...` without parsing the
/// rest of the line; anything else is fully parsed and validated.
pub fn record_key(line: &[u8]) -> Result<Key<'_>, LineProblem> {
    for prefix in [&b"{\"id\":\""[..], b"{\"_type\":\"issue\",\"id\":\""] {
        if let Some(id) = line.strip_prefix(prefix).and_then(leading_id) {
            return Ok(Key::Issue(Cow::Borrowed(id)));
        }
    }
    let object = RawObject::parse(line)?;
    let text = |k: &str| object.get(k).and_then(parse_json_str).map(Cow::into_owned);
    match text("_type").as_deref() {
        None | Some("issue") => match object.id() {
            Ok(id) => Ok(Key::Issue(Cow::Owned(id.into_owned()))),
            Err(_) if object.get("_schema").is_some() && object.get("id").is_none() => Ok(Key::Header),
            Err(e) => Err(e),
        },
        Some("memory") => text("key").map(Key::Memory).ok_or(LineProblem::MissingId),
        Some(kind) => text("id").or_else(|| text("key")).map(|key| Key::Other { kind: kind.to_owned(), key }).ok_or(LineProblem::MissingId),
    }
}

/// The id of an issue line, borrowed when possible; [`LineProblem::NotAnIssue`] for the other
/// record kinds (see [`record_key`]).
pub fn record_id(line: &[u8]) -> Result<Cow<'_, str>, LineProblem> {
    match record_key(line)? {
        Key::Issue(id) => Ok(id),
        Key::Header | Key::Memory(_) | Key::Other { .. } => Err(LineProblem::NotAnIssue),
    }
}

/// A JSON object as `(key, raw value)` entries in their original order.
#[derive(Debug, Clone)]
pub struct RawObject<'a> {
    /// The entries, in the order they appear.
    pub entries: Vec<Entry<'a>>,
    /// The text between a key and its value (`:` for compact writers, `: ` for others).
    pub colon: &'a str,
    /// The text between two entries (`,` or `, `).
    pub comma: &'a str,
}

/// One `key: value` of an object, with the original text of both.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// The decoded key.
    pub key: Cow<'a, str>,
    /// The key as written, quotes included.
    pub raw_key: Cow<'a, str>,
    /// The value as written.
    pub raw_value: Cow<'a, str>,
}

impl Entry<'_> {
    /// An entry whose key needs no escaping beyond what `write_json_string` does.
    pub fn new(key: &str, raw_value: String, go_style: bool) -> Entry<'static> {
        let mut raw_key = String::with_capacity(key.len() + 2);
        write_json_string(&mut raw_key, key, go_style);
        Entry { key: Cow::Owned(key.to_owned()), raw_key: Cow::Owned(raw_key), raw_value: Cow::Owned(raw_value) }
    }

    /// An owned copy, detached from the line it was read from.
    pub fn into_owned(self) -> Entry<'static> {
        Entry {
            key: Cow::Owned(self.key.into_owned()),
            raw_key: Cow::Owned(self.raw_key.into_owned()),
            raw_value: Cow::Owned(self.raw_value.into_owned()),
        }
    }
}

impl<'a> RawObject<'a> {
    /// Parses and validates one line as a JSON object.
    pub fn parse(line: &'a [u8]) -> Result<RawObject<'a>, LineProblem> {
        if is_conflict_marker(line) {
            return Err(LineProblem::ConflictMarker);
        }
        let text = std::str::from_utf8(line).map_err(|_| LineProblem::InvalidUtf8)?;
        Self::parse_str(text)
    }

    /// Parses and validates a JSON object held in a string.
    pub fn parse_str(text: &'a str) -> Result<RawObject<'a>, LineProblem> {
        // serde_json validates (and gives good messages); the scanner below then only splits.
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| LineProblem::InvalidJson(e.to_string()))?;
        let mut s = Scanner { text, pos: 0 };
        s.skip_ws();
        if s.peek() != Some(b'{') {
            return Err(LineProblem::NotAnObject);
        }
        Ok(s.object())
    }

    /// Splits JSON text that was already validated (a value inside a validated record) without
    /// validating it again. Not an object: `None`.
    pub fn parse_trusted(text: &'a str) -> Option<RawObject<'a>> {
        let mut s = Scanner { text, pos: 0 };
        s.skip_ws();
        (s.peek() == Some(b'{')).then(|| s.object())
    }

    /// The value text of the entry named `key`; when a key is repeated, the last one counts, as
    /// in Go's encoding/json (bd) and serde_json.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.iter().rfind(|e| e.key == key).map(|e| e.raw_value.as_ref())
    }

    /// Keys that appear more than once in this object.
    pub fn repeated_keys(&self) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::with_capacity(self.entries.len());
        let mut repeated = Vec::new();
        for e in &self.entries {
            if seen.contains(&e.key.as_ref()) {
                if !repeated.contains(&e.key.as_ref()) {
                    repeated.push(e.key.as_ref());
                }
            } else {
                seen.push(e.key.as_ref());
            }
        }
        repeated
    }

    /// The string `id` of this record (the last `id` when repeated).
    pub fn id(&self) -> Result<Cow<'a, str>, LineProblem> {
        let entry = self.entries.iter().rfind(|e| e.key == "id").ok_or(LineProblem::MissingId)?;
        match &entry.raw_value {
            Cow::Borrowed(raw) => parse_json_str(raw).ok_or(LineProblem::MissingId),
            Cow::Owned(raw) => parse_json_str(raw).map(|c| Cow::Owned(c.into_owned())).ok_or(LineProblem::MissingId),
        }
    }

    /// Writes the object back: entries in order, with this object's separators.
    pub fn render(&self) -> String {
        render_entries(&self.entries, self.colon, self.comma)
    }
}

/// Writes `{k:v,...}` with the given separators.
pub fn render_entries(entries: &[Entry<'_>], colon: &str, comma: &str) -> String {
    let len: usize = entries.iter().map(|e| e.raw_key.len() + e.raw_value.len() + 2).sum();
    let mut out = String::with_capacity(len + 2);
    out.push('{');
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push_str(comma);
        }
        out.push_str(&e.raw_key);
        out.push_str(colon);
        out.push_str(&e.raw_value);
    }
    out.push('}');
    out
}

/// Decodes a raw JSON string literal, borrowing when it has no escapes.
pub fn parse_json_str(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') && !inner.contains('"') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
}

/// Splits a raw JSON array (already validated) into its element texts.
pub fn split_array(raw: &str) -> Option<Vec<&str>> {
    let mut s = Scanner { text: raw, pos: 0 };
    s.skip_ws();
    if s.peek() != Some(b'[') {
        return None;
    }
    s.pos += 1;
    let mut out = Vec::new();
    loop {
        s.skip_ws();
        match s.peek() {
            Some(b']') | None => return Some(out),
            Some(b',') => s.pos += 1,
            _ => {
                let start = s.pos;
                s.skip_value();
                out.push(&raw[start..s.pos]);
            }
        }
    }
}

/// Appends `value` as a JSON string literal. `go_style` escapes `<`, `>`, `&`, U+2028 and U+2029
/// as `\u003c` etc., as Go's encoding/json (and so `bd`) does.
pub fn write_json_string(out: &mut String, value: &str, go_style: bool) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' if go_style => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Whether new strings written into this file should use Go's `\u003c` escapes: yes when the
/// file already has them, or has no `<`, `>`, `&` at all (Go `bd` is the common writer); no when
/// it holds those characters raw.
pub fn uses_go_escapes(content: &[u8]) -> bool {
    has_go_escapes(content) || memchr::memchr3(b'<', b'>', b'&', content).is_none()
}

/// Whether `content` holds `\u003c`, `\u003e` or `\u0026` (half of [`uses_go_escapes`], for a
/// file read in blocks of whole lines).
pub fn has_go_escapes(content: &[u8]) -> bool {
    [&b"\\u003c"[..], b"\\u003e", b"\\u0026"].iter().any(|p| memchr::memmem::find(content, p).is_some())
}

/// A JSON string literal for `value` (see [`write_json_string`]).
pub fn json_string(value: &str, go_style: bool) -> String {
    let mut s = String::with_capacity(value.len() + 2);
    write_json_string(&mut s, value, go_style);
    s
}

/// Splits already-validated JSON text into spans. It never needs to report errors.
struct Scanner<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn object(&mut self) -> RawObject<'a> {
        self.pos += 1; // '{'
        let mut entries = Vec::new();
        let (mut colon, mut comma) = (":", ",");
        let mut first = true;
        loop {
            let sep_start = self.pos;
            self.skip_ws();
            match self.peek() {
                Some(b'}') | None => break,
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                    if first {
                        comma = &self.text[sep_start..self.pos];
                        first = false;
                    }
                    continue;
                }
                _ => {}
            }
            let key_start = self.pos;
            self.skip_string();
            let raw_key = &self.text[key_start..self.pos];
            let colon_start = self.pos;
            self.skip_ws();
            self.pos += 1; // ':'
            self.skip_ws();
            if entries.is_empty() {
                colon = &self.text[colon_start..self.pos];
            }
            let value_start = self.pos;
            self.skip_value();
            let raw_value = &self.text[value_start..self.pos];
            let key = parse_json_str(raw_key).unwrap_or(Cow::Borrowed(""));
            entries.push(Entry { key, raw_key: Cow::Borrowed(raw_key), raw_value: Cow::Borrowed(raw_value) });
        }
        RawObject { entries, colon, comma }
    }

    fn skip_string(&mut self) {
        let bytes = self.text.as_bytes();
        self.pos += 1;
        while let Some(i) = memchr::memchr2(b'"', b'\\', &bytes[self.pos..]) {
            self.pos += i;
            if bytes[self.pos] == b'\\' {
                self.pos += 2;
            } else {
                self.pos += 1;
                return;
            }
        }
        self.pos = bytes.len();
    }

    fn skip_value(&mut self) {
        let bytes = self.text.as_bytes();
        match self.peek() {
            Some(b'"') => self.skip_string(),
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                while let Some(b) = self.peek() {
                    match b {
                        b'"' => {
                            self.skip_string();
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.pos += 1;
                                return;
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
            }
            _ => {
                while self.pos < bytes.len() && !matches!(bytes[self.pos], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    self.pos += 1;
                }
            }
        }
    }
}

/// The first line of `content` whose record id is `id`, found by its `"id":"..."` text (then
/// confirmed, so a mention elsewhere never counts).
pub fn line_of<'a>(content: &'a [u8], id: &str) -> Option<&'a [u8]> {
    let needle = serde_json::to_string(id).ok()?;
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    for at in finder.find_iter(content) {
        let start = content[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let end = content[at..].iter().position(|&b| b == b'\n').map_or(content.len(), |i| at + i);
        let line = &content[start..end];
        if record_id(line).is_ok_and(|found| found == id) {
            return Some(line);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_and_slow_id_paths_agree() {
        assert_eq!(record_id(br#"{"id":"bd-1","title":"x"}"#).expect("test input is valid"), "bd-1");
        assert_eq!(record_id(br#"{ "title":"x", "id" : "bd-\u0031"}"#).expect("test input is valid"), "bd-1");
        assert_eq!(record_id(br#"{"id":1}"#), Err(LineProblem::MissingId));
        assert_eq!(record_id(br#"{"_type":"issue","id":"bd-1","title":"x"}"#).expect("test input is valid"), "bd-1");
        assert_eq!(record_key(br#"{"_type":"memory","key":"k1","value":"v"}"#), Ok(Key::Memory("k1".into())));
        assert_eq!(record_key(br#"{"_schema":"beads-jsonl/1","_dolt_commit":"abc"}"#), Ok(Key::Header));
        assert_eq!(record_key(br#"{"_type":"event","id":"e1"}"#), Ok(Key::Other { kind: "event".into(), key: "e1".into() }));
        assert_eq!(record_id(br#"{"_type":"memory","key":"k1"}"#), Err(LineProblem::NotAnIssue));
        assert_eq!(record_key(br#"{"_type":"memory","value":"v"}"#), Err(LineProblem::MissingId));
        assert_eq!(record_id(br"[1]"), Err(LineProblem::NotAnObject));
        assert_eq!(record_id(b"<<<<<<< ours"), Err(LineProblem::ConflictMarker));
        // The fast path reads only the id; the content is validated when a merge needs it.
        assert_eq!(record_id(br#"{"id":"x","#).expect("test input is valid"), "x");
        assert!(matches!(RawObject::parse(br#"{"id":"x","#), Err(LineProblem::InvalidJson(_))));
        assert!(matches!(record_id(br#"{"id":"x\"#), Err(LineProblem::InvalidJson(_))));
    }

    #[test]
    fn object_round_trips_with_its_separators() {
        let line = r#"{"id": "a", "n": [1, {"x": "}"}], "s": "q\"\\"}"#;
        let obj = RawObject::parse_str(line).expect("test input is valid");
        assert_eq!(obj.entries.len(), 3);
        assert_eq!(obj.render(), line);
        assert_eq!(split_array(r#"[ "a" , {"b":[1]} ,3]"#).expect("test input is valid"), vec![r#""a""#, r#"{"b":[1]}"#, "3"]);
    }

    #[test]
    fn control_characters_are_never_printed_raw() {
        assert_eq!(printable("a\u{1b}]0;PWNED\u{7}b", 80), "a\\u{1b}]0;PWNED\\u{7}b");
        assert_eq!(printable("\u{9b}31m", 80), "\\u{9b}31m");
        assert_eq!(printable("abcdef", 3), "abc...");
        assert_eq!(escaped("a\nb\u{2028}c\u{202e}"), "a\\u{a}b\\u{2028}c\\u{202e}");
        assert!(matches!(escaped("plain ünïcode"), Cow::Borrowed(_)));
        assert_eq!(printable_lines("one\u{1b}[2J\ntwo\r"), "one\\u{1b}[2J\ntwo\\u{d}");
    }

    #[test]
    fn go_style_escapes() {
        assert_eq!(json_string("a<b>&\n", true), r#""a\u003cb\u003e\u0026\n""#);
        assert_eq!(json_string("a<b>&", false), r#""a<b>&""#);
    }
}

//! RFC 3339 timestamps compared as instants.
//!
//! Beads files mix writers: Go `bd` writes the local offset (`-08:00`) with a varying number of
//! fractional digits, other tools write UTC `Z`. Comparing the strings would pick the wrong
//! "later" edit across offsets (the old Go driver lost whole issues that way on UTC machines), so
//! merges compare parsed instants and still write back the original string.

use std::cmp::Ordering;

/// A point in time: seconds since the Unix epoch (UTC) and nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant {
    /// Whole seconds since 1970-01-01T00:00:00Z.
    pub seconds: i64,
    /// Nanoseconds within the second.
    pub nanos: u32,
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`; `t`, `z` and a space separator are accepted.
pub fn parse(text: &str) -> Option<Instant> {
    let b = text.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = b.get(r)?;
        if !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(s).ok()?.parse().ok()
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut i = 19;
    let mut nanos: u32 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start).min(9)..9 {
            nanos *= 10;
        }
    }
    let offset_seconds = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            let off = oh * 3600 + om * 60;
            if *sign == b'-' { -off } else { off }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    Some(Instant { seconds, nanos })
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Orders two timestamp strings by instant; the same instant written two ways (or unparseable
/// text on both sides) falls back to the byte order of the strings, so the result never depends
/// on which side is which.
pub fn compare(a: &str, b: &str) -> Ordering {
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_compared_as_instants() {
        let pst = parse("2025-11-02T21:58:07.295058-08:00").expect("test input is valid");
        let utc = parse("2025-11-03T05:58:07.295058Z").expect("test input is valid");
        assert_eq!(pst, utc);
        assert_eq!(compare("2025-11-03T01:00:00Z", "2025-11-02T21:00:00-08:00"), Ordering::Less);
        assert_eq!(parse("1970-01-01T00:00:00Z").expect("test input is valid").seconds, 0);
        assert_eq!(parse("2000-03-01T00:00:00.5+01:00").expect("test input is valid"), Instant { seconds: 951_865_200, nanos: 500_000_000 });
        assert!(parse("2025-13-01T00:00:00Z").is_none());
        assert!(parse("yesterday").is_none());
    }
}

//! RFC 3339 timestamps compared as instants.
//!
//! Beads files mix writers: Go `bd` writes the local offset (`-08:00`) with a varying number of
//! fractional digits, other tools write UTC `Z`. Comparing the strings would pick the wrong
//! "later" edit across offsets (the old Go driver lost whole issues that way on UTC machines), so
//! merges compare parsed instants and still write back the original string.

use std::cmp::Ordering;

/// A point in time: seconds since the Unix epoch (UTC) and nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
            if *sign == b'-' {
                -off
            } else {
                off
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    Some(Instant { seconds, nanos })
}

/// The written shape of a timestamp: separator, fraction digits and zone, so another instant can
/// be written the same way.
struct Format<'t> {
    separator: char,
    digits: usize,
    zone: &'t str,
    offset_seconds: i64,
}

fn format_of(text: &str) -> Option<Format<'_>> {
    parse(text)?;
    let b = text.as_bytes();
    let digits = if b[19] == b'.' { b[20..].iter().take_while(|c| c.is_ascii_digit()).count() } else { 0 };
    let zone = &text[19 + if digits > 0 { digits + 1 } else { 0 }..];
    let z = zone.as_bytes();
    let offset_seconds = match z[0] {
        b'Z' | b'z' => 0,
        sign => {
            let off = i64::from(z[1] - b'0') * 36_000
                + i64::from(z[2] - b'0') * 3_600
                + i64::from(z[4] - b'0') * 600
                + i64::from(z[5] - b'0') * 60;
            if sign == b'-' {
                -off
            } else {
                off
            }
        }
    };
    Some(Format { separator: b[10] as char, digits, zone, offset_seconds })
}

impl Format<'_> {
    /// One unit of the last digit, in nanoseconds (a second without a fraction).
    fn unit_nanos(&self) -> i128 {
        10_i128.pow(9 - self.digits.min(9) as u32)
    }

    /// Local time of `instant` in units of the last digit, truncated.
    fn units(&self, instant: Instant) -> i128 {
        (i128::from(instant.seconds + self.offset_seconds) * 1_000_000_000 + i128::from(instant.nanos)).div_euclid(self.unit_nanos())
    }

    /// Writes a local time given in units. A fraction that would end in `0` steps to the next
    /// unit that does not: writers that trim trailing zeros (Go's RFC3339Nano, chrono's AutoSi)
    /// would shorten it and so rewrite the line.
    fn write(&self, mut total: i128) -> Option<String> {
        while self.digits > 0 && total % 10 == 0 {
            total += 1;
        }
        let unit_nanos = self.unit_nanos();
        let local_nanos = total * unit_nanos;
        let seconds = i64::try_from(local_nanos.div_euclid(1_000_000_000)).ok()?;
        let fraction = local_nanos.rem_euclid(1_000_000_000) / unit_nanos;
        let (days, secs_of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
        let (year, month, day) = civil_from_days(days);
        if !(0..=9999).contains(&year) {
            return None;
        }
        let mut out = format!(
            "{year:04}-{month:02}-{day:02}{}{:02}:{:02}:{:02}",
            self.separator,
            secs_of_day / 3600,
            secs_of_day / 60 % 60,
            secs_of_day % 60
        );
        if self.digits > 0 {
            out.push('.');
            out.push_str(&format!("{fraction:0width$}", width = self.digits.min(9)));
            // Digits past nanoseconds carry no information; keep the string's width.
            out.extend(std::iter::repeat_n('0', self.digits.saturating_sub(9)));
        }
        out.push_str(self.zone);
        Some(out)
    }
}

/// The same timestamp one tick later, written in the same format: the same offset (or `Z`), the
/// same separator and the same number of fractional digits; a tick is one unit of the last digit
/// (a second when there is no fraction), or two when one tick would end the fraction in `0`, which
/// writers that trim trailing zeros would shorten. Importers that skip a record whose `updated_at` equals
/// the one they hold take a merged record stamped this way (docs/merge-rules.md, "Timestamps of merged records"). `None` for text that is
/// not a timestamp.
pub fn one_tick_after(text: &str) -> Option<String> {
    let format = format_of(text)?;
    format.write(format.units(parse(text)?) + 1)
}

/// `instant` written the way `like` is written (its offset, separator and number of fraction
/// digits), rounded up to the next unit of its last digit so the text is never earlier than the
/// instant. `None` when `like` is not a timestamp.
pub fn write_like(instant: Instant, like: &str) -> Option<String> {
    let format = format_of(like)?;
    let units = format.units(instant);
    let exact =
        units * format.unit_nanos() == i128::from(instant.seconds + format.offset_seconds) * 1_000_000_000 + i128::from(instant.nanos);
    format.write(if exact { units } else { units + 1 })
}

/// The `updated_at` of a record a merge wrote that equals neither side (docs/merge-rules.md, "Timestamps of
/// merged records"): one tick after the later of the two sides' stamps, written in that stamp's
/// format, and never earlier than `now`, the merge's own time (written in the same format).
/// Ticking the later side, not the merged value, keeps the record newer than both clones even when
/// one side moved its stamp backward; the clock keeps a commit merged twice (a rebase re-merge)
/// from getting the same stamp for other content. `None` when no side has a timestamp.
pub fn merge_stamp<'s>(sides: impl IntoIterator<Item = &'s str>, now: Option<Instant>) -> Option<String> {
    let later = sides.into_iter().filter(|s| parse(s).is_some()).max_by(|a, b| compare(a, b))?;
    let ticked = one_tick_after(later)?;
    match now.and_then(|now| write_like(now, later)) {
        Some(at_now) if compare(&at_now, &ticked).is_gt() => Some(at_now),
        _ => Some(ticked),
    }
}

/// `BD_MERGE_NOW` holds something other than an RFC 3339 instant (the text, escaped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("BD_MERGE_NOW={0}: not an RFC 3339 instant; write it like 2026-01-05T10:00:00Z, or unset it to use the clock")]
pub struct BadMergeNow(String);

/// The merge's own time: `BD_MERGE_NOW` (an RFC 3339 instant, so tests and fixtures are
/// reproducible) or else the system clock. An unparseable `BD_MERGE_NOW` is an error naming it.
pub fn merge_now() -> Result<Instant, BadMergeNow> {
    match std::env::var("BD_MERGE_NOW") {
        Ok(text) => parse(text.trim()).ok_or_else(|| BadMergeNow(crate::record::printable(&text, 60))),
        Err(_) => {
            let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            Ok(Instant { seconds: i64::try_from(since.as_secs()).unwrap_or(i64::MAX), nanos: since.subsec_nanos() })
        }
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
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

/// The fraction style of a file's timestamps, from a sample of them: `Some(n)` when every one has
/// exactly `n` fraction digits (`0`: none), `Some(-1)` when the widths vary (a writer that trims
/// trailing zeros, like Go's RFC3339Nano and chrono's AutoSi), `None` without samples. The cache's
/// `updated_at` trigger writes SQL edits' stamps in this style.
pub fn fraction_style<'a>(stamps: impl Iterator<Item = &'a str>) -> Option<i64> {
    let mut style = None;
    for stamp in stamps.take(256) {
        let Some(seconds_end) = stamp.get(19..).map(|_| 19) else { continue };
        let rest = &stamp[seconds_end..];
        let width = rest.strip_prefix('.').map(|f| f.bytes().take_while(u8::is_ascii_digit).count()).unwrap_or(0) as i64;
        style = match style {
            None => Some(width),
            Some(w) if w == width => Some(w),
            Some(_) => return Some(-1),
        };
    }
    style
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
        assert_eq!(
            parse("2000-03-01T00:00:00.5+01:00").expect("test input is valid"),
            Instant { seconds: 951_865_200, nanos: 500_000_000 }
        );
        assert!(parse("2025-13-01T00:00:00Z").is_none());
        assert!(parse("yesterday").is_none());
    }

    #[test]
    fn the_merge_stamp_ticks_the_later_side_and_never_precedes_now() {
        let now = |s: &str| parse(s);
        // The later side, not the first one given, in its own format.
        assert_eq!(
            merge_stamp(["2025-11-03T09:00:00.5-08:00", "2025-11-05T09:00:00.123456-08:00"], None).as_deref(),
            Some("2025-11-05T09:00:00.123457-08:00")
        );
        // A clock past both: now, in the later side's offset and width, never ending in 0.
        assert_eq!(
            merge_stamp(["2025-11-02T10:00:00.222222-08:00", "2025-11-02T09:00:00Z"], now("2025-11-23T21:00:00.5Z")).as_deref(),
            Some("2025-11-23T13:00:00.500001-08:00")
        );
        assert_eq!(merge_stamp(["2025-11-02T10:00:00Z"], now("2025-11-02T10:00:07.9Z")).as_deref(), Some("2025-11-02T10:00:08Z"));
        // A clock behind the sides changes nothing.
        assert_eq!(merge_stamp(["2025-11-02T10:00:00Z"], now("2000-01-01T00:00:00Z")).as_deref(), Some("2025-11-02T10:00:01Z"));
        assert_eq!(merge_stamp(["not a time"], None), None);
    }

    #[test]
    fn one_tick_keeps_the_format_and_carries() {
        let tick = |s: &str| one_tick_after(s).expect("test input is valid");
        assert_eq!(tick("2026-01-05T10:00:00Z"), "2026-01-05T10:00:01Z");
        assert_eq!(tick("2026-01-05T10:00:00.123Z"), "2026-01-05T10:00:00.124Z");
        assert_eq!(tick("2025-11-02T21:58:07.295058-08:00"), "2025-11-02T21:58:07.295059-08:00");
        assert_eq!(tick("2025-12-31T23:59:59.999999999+05:30"), "2026-01-01T00:00:00.000000001+05:30");
        assert_eq!(tick("2026-11-22T21:48:26.194150999Z"), "2026-11-22T21:48:26.194151001Z");
        assert_eq!(tick("2024-02-28T23:59:59Z"), "2024-02-29T00:00:00Z");
        assert_eq!(tick("2024-02-28 23:59:59.9-01:00"), "2024-02-29 00:00:00.1-01:00");
        assert!(one_tick_after("not a time").is_none());
        for s in ["2026-03-01T00:00:00.5Z", "1969-12-31T23:59:59.99-08:00", "2000-02-29T12:34:56.000001+14:00"] {
            assert!(parse(&tick(s)) > parse(s), "{s}");
        }
    }
}

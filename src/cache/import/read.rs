//! The reading half of the import's second pass: the file read again on its own thread, each
//! planned line checked against the first pass and decoded into batches for the writer.

use super::scan::{DuplicateLine, Plan, Scan};
use super::{Stop, BATCH_LINES};
use crate::cache::codec::IssueRows;
use crate::cache::line_hash;
use crate::jsonl::LineBlocks;
use crate::record::{LineProblem, RawObject};

/// The second pass reads its lines one by one, by offset, when they are at most one line in
/// this many of the file's.
const TARGETED_SHARE: usize = 64;

/// A decoded line: its rows, and whether it repeats a key.
pub(super) type Decoded = Result<(IssueRows, bool), LineProblem>;

pub(super) fn decode_line(text: &str) -> Decoded {
    RawObject::parse_str(text).map(|obj| (IssueRows::from_record(&obj), !obj.repeated_keys().is_empty()))
}

/// A planned line, read and decoded ahead of the write; its text is `range` of its batch's bytes.
pub(super) struct DecodedLine {
    pub(super) plan: usize,
    pub(super) range: std::ops::Range<usize>,
    pub(super) decoded: Decoded,
}

/// Planned lines handed to the writer together (at most [`BATCH_LINES`] of them, or a block's
/// worth of bytes): their texts in one buffer (handed back to the reader to be filled again, so
/// the import allocates no string per line), and their decoded rows.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) texts: String,
    pub(super) lines: Vec<DecodedLine>,
}

impl Batch {
    pub(super) fn text(&self, line: &DecodedLine) -> &str {
        &self.texts[line.range.clone()]
    }

    fn push(&mut self, plan: usize, text: &str) {
        let start = self.texts.len();
        self.texts.push_str(text);
        self.lines.push(DecodedLine { plan, range: start..self.texts.len(), decoded: decode_line(text) });
    }
}

/// The reading half of [`Write::stream`](super::write::Write), on its own thread: reads the file again, checks each
/// planned line against the first pass, decodes single-line plans into batches for the writer and
/// keeps the texts of ids on several lines.
pub(super) struct PlannedLines<'a> {
    pub(super) path: &'a std::path::Path,
    pub(super) block_size: usize,
    pub(super) scan: &'a Scan,
    pub(super) plans: &'a [Plan],
    /// The later lines of ids on several lines: (line number, plan, hash), sorted.
    pub(super) later: &'a [(usize, usize, i64)],
}

impl PlannedLines<'_> {
    pub(super) fn read(
        self,
        file: std::fs::File,
        send: &std::sync::mpsc::SyncSender<Batch>,
        recycled: &std::sync::mpsc::Receiver<Batch>,
    ) -> Result<Vec<DuplicateLine>, Stop> {
        // A few changed lines (a pull, a checkout) are read where the first pass found them: the
        // import then reads the file once, not twice. (What changed in the file between the
        // passes is caught as ever: each line read must have its hash, and the write checks the
        // descriptor's size, inode and time after the reads.)
        if (self.plans.len() + self.later.len()) * TARGETED_SHARE <= self.scan.line_count {
            return self.read_targeted(&file, send, recycled);
        }
        let (scan, plans) = (self.scan, self.plans);
        let mut copies = Vec::new();
        let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
        let mut blocks = LineBlocks::from_file(file, self.path, self.block_size);
        let fresh = || fresh_batch(recycled);
        let mut batch = fresh();
        // The plans' first lines come in plan order, which is line order.
        let mut firsts = plans.iter().enumerate().peekable();
        let mut laters = self.later.iter().peekable();
        while let Some(block) = blocks.next_block()? {
            hasher.update(block.bytes);
            for line in &block.lines {
                let first = firsts.next_if(|(_, p)| scan.first[p.at as usize].number == line.number);
                let wanted = first
                    .map(|(k, p)| (k, scan.first[p.at as usize].hash))
                    .or_else(|| laters.next_if(|n| n.0 == line.number).map(|&(_, k, hash)| (k, hash)));
                let Some((plan, hash)) = wanted else { continue };
                if line_hash(line.bytes) != hash {
                    return Err(Stop::FileChanged);
                }
                let text = std::str::from_utf8(line.bytes).map_err(|_| Stop::FileChanged)?;
                if plans[plan].action.is_none() {
                    copies.push((plan, line.number, text.to_owned()));
                } else {
                    batch.push(plan, text);
                }
                // A decoded row is about 500 bytes whatever its line's size: a batch is bounded by
                // lines too, so a block of tiny records stays small.
                if (batch.lines.len() >= BATCH_LINES || batch.texts.len() >= self.block_size)
                    && send.send(std::mem::replace(&mut batch, fresh())).is_err()
                {
                    return Ok(copies); // the writer stopped on an error of its own
                }
            }
        }
        if !batch.lines.is_empty() && send.send(batch).is_err() {
            return Ok(copies);
        }
        if hasher.digest() as i64 != scan.hash {
            return Err(Stop::FileChanged);
        }
        Ok(copies)
    }

    /// [`PlannedLines::read`] for a few lines: each read at its offset, in line order, checked
    /// and handed on as the whole-file pass hands them.
    fn read_targeted(
        self,
        file: &std::fs::File,
        send: &std::sync::mpsc::SyncSender<Batch>,
        recycled: &std::sync::mpsc::Receiver<Batch>,
    ) -> Result<Vec<DuplicateLine>, Stop> {
        let (scan, plans) = (self.scan, self.plans);
        // (line, plan, the line as the first pass saw it), in line order.
        let mut wanted: Vec<(usize, usize, super::scan::ScannedLine)> = plans
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let seen = scan.first[p.at as usize];
                (seen.number, k, seen)
            })
            .collect();
        // The later lines of ids on several lines (the plans decided after the read, as
        // `later` lists them), each id's lines walked once.
        for (k, p) in plans.iter().enumerate().filter(|(_, p)| p.action.is_none()) {
            wanted.extend(scan.lines(p.at).skip(1).map(|l| (l.number, k, *l)));
        }
        wanted.sort_unstable_by_key(|w| w.0);
        let mut copies = Vec::new();
        let fresh = || fresh_batch(recycled);
        let mut batch = fresh();
        let mut bytes = Vec::new();
        for (number, plan, seen) in wanted {
            bytes.resize(seen.len, 0);
            read_at(file, &mut bytes, seen.offset).map_err(|_| Stop::FileChanged)?;
            if line_hash(&bytes) != seen.hash {
                return Err(Stop::FileChanged);
            }
            let text = std::str::from_utf8(&bytes).map_err(|_| Stop::FileChanged)?;
            if plans[plan].action.is_none() {
                copies.push((plan, number, text.to_owned()));
            } else {
                batch.push(plan, text);
            }
            if batch.lines.len() >= BATCH_LINES && send.send(std::mem::replace(&mut batch, fresh())).is_err() {
                return Ok(copies); // the writer stopped on an error of its own
            }
        }
        if !batch.lines.is_empty() {
            let _ = send.send(batch); // an error: the writer stopped on an error of its own
        }
        Ok(copies)
    }
}

/// An empty batch: one the writer handed back, else a new one.
fn fresh_batch(recycled: &std::sync::mpsc::Receiver<Batch>) -> Batch {
    let mut batch: Batch = recycled.try_recv().unwrap_or_default();
    batch.texts.clear();
    batch.lines.clear();
    batch
}

/// Reads exactly `buf.len()` bytes at `offset`, leaving the descriptor's position alone (`pread`).
/// Elsewhere than unix: a clone of the descriptor, moved to the offset (the clone shares the
/// position, and the targeted pass is the only reader then).
fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    if crate::platform::unix_calls() {
        return std::os::unix::fs::FileExt::read_exact_at(file, buf, offset);
    }
    use std::io::{Read as _, Seek as _};
    let mut file = file.try_clone()?;
    file.seek(std::io::SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

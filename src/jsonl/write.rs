//! Writing lines back with a file's layout, and as runs of the file they came from: an unchanged
//! stretch of a large file goes to the kernel as one slice of its source (`writev`), never copied.

use std::io::Write;

use super::{Layout, BOM};

/// Writes lines with the given layout (BOM, line endings, final newline).
pub fn write_lines<'b>(w: &mut dyn Write, layout: Layout, lines: impl IntoIterator<Item = &'b [u8]>) -> std::io::Result<()> {
    if layout.bom {
        w.write_all(BOM)?;
    }
    let eol: &[u8] = if layout.crlf { b"\r\n" } else { b"\n" };
    let mut lines = lines.into_iter().peekable();
    while let Some(line) = lines.next() {
        w.write_all(line)?;
        if lines.peek().is_some() || layout.final_newline {
            w.write_all(eol)?;
        }
    }
    Ok(())
}

/// [`write_lines`], for lines most of which are slices of `source` (the file a merge read): a
/// run of lines that stand one after another in `source`, each followed there by the newline
/// this layout writes, goes out as one slice of `source`, and the slices in few `writev` calls,
/// so an unchanged stretch of a large file is handed to the kernel as it is, never copied into a
/// buffer first. The bytes written are exactly [`write_lines`]' bytes.
pub fn write_lines_from<'b>(
    w: &mut dyn Write,
    layout: Layout,
    source: &[u8],
    lines: impl IntoIterator<Item = &'b [u8]>,
) -> std::io::Result<()> {
    if layout.crlf {
        return write_lines(w, layout, lines);
    }
    if layout.bom {
        w.write_all(BOM)?;
    }
    // Where a slice lies in `source`, as an offset, if it does.
    let base = source.as_ptr() as usize;
    let offset = |piece: &[u8]| -> Option<usize> {
        let at = (piece.as_ptr() as usize).checked_sub(base)?;
        (at.checked_add(piece.len())? <= source.len()).then_some(at)
    };
    let mut slices: Vec<std::io::IoSlice<'_>> = Vec::new();
    // The run of `source` being gathered: [start, end), newlines included.
    let mut run: Option<(usize, usize)> = None;
    let mut lines = lines.into_iter().peekable();
    let mut pending: Vec<&[u8]> = Vec::new();
    while let Some(line) = lines.next() {
        let eol = lines.peek().is_some() || layout.final_newline;
        let in_source = offset(line).filter(|&at| eol && source.get(at + line.len()) == Some(&b'\n'));
        match (in_source, run) {
            (Some(at), Some((start, end))) if at == end => run = Some((start, at + line.len() + 1)),
            (Some(at), _) => {
                if let Some((start, end)) = run.take() {
                    pending.push(&source[start..end]);
                }
                run = Some((at, at + line.len() + 1));
            }
            (None, _) => {
                if let Some((start, end)) = run.take() {
                    pending.push(&source[start..end]);
                }
                pending.push(line);
                if eol {
                    pending.push(b"\n");
                }
            }
        }
        if pending.len() >= 1024 {
            slices.extend(pending.drain(..).map(std::io::IoSlice::new));
            write_all_vectored(w, &mut slices)?;
        }
    }
    if let Some((start, end)) = run {
        pending.push(&source[start..end]);
    }
    slices.extend(pending.drain(..).map(std::io::IoSlice::new));
    write_all_vectored(w, &mut slices)
}

/// Writes every slice (what the unstable `Write::write_all_vectored` does), then empties the list.
fn write_all_vectored(w: &mut dyn Write, slices: &mut Vec<std::io::IoSlice<'_>>) -> std::io::Result<()> {
    // An empty slice writes nothing, and a call of only empty ones would read as "wrote zero".
    slices.retain(|s| !s.is_empty());
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match w.write_vectored(rest) {
            Ok(0) => return Err(std::io::Error::new(std::io::ErrorKind::WriteZero, "failed to write the whole file")),
            Ok(n) => std::io::IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    slices.clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most three bytes a call, vectored or not.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.len().min(3);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
            let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
            self.write(first)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_written_as_runs_of_their_source_are_the_same_bytes() {
        let source = b"{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"c\"}x{\"id\":\"d\"}\n{\"id\":\"e\"}";
        let text = std::str::from_utf8(source).expect("utf8");
        let piece = |s: &str| {
            let at = text.find(s).expect("in source");
            &source[at..at + s.len()]
        };
        let (a, b, c, d, e) =
            (piece("{\"id\":\"a\"}"), piece("{\"id\":\"b\"}"), piece("{\"id\":\"c\"}"), piece("{\"id\":\"d\"}"), piece("{\"id\":\"e\"}"));
        let owned = b"{\"id\":\"new\"}".to_vec();
        let many: Vec<&[u8]> = (0..3000).flat_map(|_| [a, &owned[..], b]).collect();
        let orders: Vec<Vec<&[u8]>> = vec![vec![a, b, c, d, e], vec![b, a, &owned, c, e], vec![e, d], vec![c], vec![], many];
        for lines in &orders {
            for layout in [
                Layout::default(),
                Layout { final_newline: false, ..Layout::default() },
                Layout { bom: true, ..Layout::default() },
                Layout { crlf: true, ..Layout::default() },
            ] {
                let mut expected = Vec::new();
                write_lines(&mut expected, layout, lines.iter().copied()).expect("vec");
                let mut fast = Vec::new();
                write_lines_from(&mut fast, layout, source, lines.iter().copied()).expect("vec");
                assert_eq!(fast, expected, "{layout:?}");
                let mut slow = Trickle(Vec::new());
                write_lines_from(&mut slow, layout, source, lines.iter().copied()).expect("trickle");
                assert_eq!(slow.0, expected, "short writes, {layout:?}");
            }
        }
    }
}

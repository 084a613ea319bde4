//! Format detection from content (magic bytes, first token), never from the file name.

/// The input formats memtide reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// memtide JSONL v1 (native).
    Jsonl,
    /// PyTorch snapshot as a pickle.
    SnapshotPickle,
    /// PyTorch snapshot as JSON.
    SnapshotJson,
    /// Kineto Chrome trace JSON.
    Kineto,
    /// `export_memory_timeline` `.json` or `.raw.json.gz`.
    MemoryTimeline,
}

impl Format {
    /// The name used by `summary --json` (`format` key).
    pub fn name(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::SnapshotPickle | Format::SnapshotJson => "snapshot",
            Format::Kineto => "kineto",
            Format::MemoryTimeline => "memory_timeline",
        }
    }
}

/// Guesses the format of decompressed content from its first bytes.
pub fn detect(head: &[u8]) -> Option<Format> {
    if head.first() == Some(&0x80) {
        return Some(Format::SnapshotPickle);
    }
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let start = head.iter().position(|c| !c.is_ascii_whitespace())?;
    let body = &head[start..];
    match body.first()? {
        b'#' => after_comments(body),
        b'{' => {
            // The first line of a JSONL file is the header object, which names "memtide".
            let line_end = memchr::memchr(b'\n', body).unwrap_or(body.len());
            let first_line = &body[..line_end];
            // A headerless event line is still JSONL: the reader then says the header is missing.
            if memchr::memmem::find(first_line, b"\"memtide\"").is_some()
                || (memchr::memmem::find(first_line, b"\"op\"").is_some()
                    && memchr::memmem::find(first_line, b"\"t\"").is_some())
            {
                return Some(Format::Jsonl);
            }
            let has = |k: &[u8]| memchr::memmem::find(body, k).is_some();
            if has(b"\"traceEvents\"") || has(b"\"displayTimeUnit\"") || has(b"\"schemaVersion\"") {
                Some(Format::Kineto)
            } else if has(b"\"device_traces\"") || has(b"\"segments\"") {
                Some(Format::SnapshotJson)
            } else {
                None
            }
        }
        b'[' => {
            let inner = &body[1..];
            let s = inner.iter().position(|c| !c.is_ascii_whitespace())?;
            match inner[s] {
                b'[' => Some(Format::MemoryTimeline),
                // A list of objects: the Chrome trace "JSON array format" (events with a
                // phase "ph"), or the bare segment list of an old snapshot.
                b'{' => {
                    let has = |k: &[u8]| memchr::memmem::find(inner, k).is_some();
                    if has(b"\"ph\"") && !has(b"\"total_size\"") {
                        Some(Format::Kineto)
                    } else {
                        Some(Format::SnapshotJson)
                    }
                }
                b']' => Some(Format::MemoryTimeline),
                _ => None,
            }
        }
        _ => None,
    }
}

/// JSONL may open with `#` comment lines: its first other line is the header, a JSON object.
/// A text whose first other line is not one (a README, a shell script, a YAML config beside
/// a job's rank files) is no trace; a head of comments only (a file still being written) may
/// still be one.
fn after_comments(body: &[u8]) -> Option<Format> {
    let mut lines = body.split(|&c| c == b'\n');
    // The last piece may be cut by the end of the head: only whole lines decide.
    let whole = lines.clone().count().saturating_sub(1);
    for line in lines.by_ref().take(whole) {
        match line.iter().find(|c| !c.is_ascii_whitespace()) {
            None | Some(b'#') => continue,
            Some(b'{') => return Some(Format::Jsonl),
            Some(_) => return None,
        }
    }
    Some(Format::Jsonl)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_content() {
        assert_eq!(detect(b"{\"memtide\":1}\n{\"t\":1}"), Some(Format::Jsonl));
        assert_eq!(detect(b"# comment\n{\"memtide\":1}"), Some(Format::Jsonl));
        assert_eq!(detect(b"\x80\x04\x95"), Some(Format::SnapshotPickle));
        assert_eq!(
            detect(b"{\n  \"schemaVersion\": 1, \"traceEvents\": ["),
            Some(Format::Kineto)
        );
        assert_eq!(
            detect(b"{\"segments\": [], \"device_traces\": []}"),
            Some(Format::SnapshotJson)
        );
        assert_eq!(detect(b"[[1,2,3],[[0,1]]]"), Some(Format::MemoryTimeline));
        assert_eq!(
            detect(b"[{\"name\":\"[memory]\",\"ph\":\"i\",\"ts\":1}"),
            Some(Format::Kineto)
        );
        assert_eq!(
            detect(b"[{\"device\":0,\"address\":1,\"total_size\":2,\"blocks\":[]}]"),
            Some(Format::SnapshotJson)
        );
        // Texts that open with '#' but are no JSONL: a README, a script, a YAML config.
        assert_eq!(detect(b"# Run notes\n\nlr 3e-4\n"), None);
        assert_eq!(detect(b"#!/bin/bash\ntorchrun train.py\n"), None);
        assert_eq!(detect(b"# config\nlr: 0.1\n"), None);
        // Comments alone, or a header not yet whole, may still be JSONL being written.
        assert_eq!(detect(b"# comment\n# more\n"), Some(Format::Jsonl));
        assert_eq!(detect(b"# comment\n\n{\"memt"), Some(Format::Jsonl));
        assert_eq!(
            detect(b"# comment\n  {\"memtide\":1}\n"),
            Some(Format::Jsonl)
        );
        assert_eq!(detect(b"\x00\x01garbage"), None);
        assert_eq!(detect(b""), None);
        assert_eq!(detect(b"   "), None);
    }
}

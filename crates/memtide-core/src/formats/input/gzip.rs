//! Gzip input checked to its last byte: each member's header, its deflate data, and its
//! trailer (CRC32 and ISIZE) are verified; concatenated members are read in turn (as `gzip -d`
//! and flate2's `MultiGzDecoder` do); anything after the last member that is not another
//! member is refused. Every refusal is a [`GzipDamage`] naming the byte offset in the file
//! (compressed bytes), carried inside the `io::Error` the readers see, so that each reader
//! (snapshot, JSONL, Kineto, memory timeline, side files) refuses the same damage the same
//! way and no reader can stop early and miss it.
//!
//! Error kinds: data cut inside the compressed stream is `UnexpectedEof` (the Kineto reader
//! shows what decompressed before the cut, as for a plain file cut short, with a warning);
//! everything else (a cut or wrong trailer, a bad header, corrupt deflate data, trailing
//! bytes) is `InvalidData`, an error for every reader.

use std::io::{self, BufRead, Read};

/// Damage found in a gzip stream: where (a byte offset in the file) and what.
#[derive(Debug, thiserror::Error)]
#[error("damaged gzip stream at byte {offset} of the file: {reason}")]
pub struct GzipDamage {
    pub offset: u64,
    pub reason: String,
}

/// The gzip damage an I/O error carries, if it is one.
pub(crate) fn damage(e: &io::Error) -> Option<&GzipDamage> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<GzipDamage>())
}

fn damaged(kind: io::ErrorKind, offset: u64, reason: String) -> io::Error {
    io::Error::new(kind, GzipDamage { offset, reason })
}

/// Header flag bits (RFC 1952 §2.3.1).
const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const FRESERVED: u8 = 0xe0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// At the start of a member (the first, or one after a trailer).
    Header,
    /// Inflating a member's data.
    Body,
    /// A member's trailer was checked: the input ends here or another member starts.
    Between,
    /// The end of the stream (or an error was returned: it is not retried).
    Done,
}

/// A reader of gzip members over `src`, checking each one whole (see the module doc).
pub(crate) struct GzipReader<R> {
    src: R,
    /// Bytes of the file consumed so far.
    pos: u64,
    inflate: flate2::Decompress,
    crc: flate2::Crc,
    state: State,
    /// File offset where the current member starts.
    member_at: u64,
    /// The current member's deflate data has ended (its trailer comes next).
    ended: bool,
}

impl<R: BufRead> GzipReader<R> {
    /// A reader whose input starts with a gzip member.
    pub fn new(src: R) -> Self {
        GzipReader {
            src,
            pos: 0,
            inflate: flate2::Decompress::new(false),
            crc: flate2::Crc::new(),
            state: State::Header,
            member_at: 0,
            ended: false,
        }
    }

    /// Consumes `n` bytes of the buffered input.
    fn consume(&mut self, n: usize) {
        self.src.consume(n);
        self.pos += n as u64;
    }

    /// Reads `out.len()` bytes (feeding `hcrc` when given) unless the input ends first: the
    /// bytes read.
    fn take(&mut self, out: &mut [u8], hcrc: Option<&mut flate2::Crc>) -> io::Result<usize> {
        let mut n = 0;
        while n < out.len() {
            let buf = match self.src.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                break;
            }
            let k = buf.len().min(out.len() - n);
            out[n..n + k].copy_from_slice(&buf[..k]);
            self.consume(k);
            n += k;
        }
        if let Some(c) = hcrc {
            c.update(&out[..n]);
        }
        Ok(n)
    }

    /// [`Self::take`] where the input must not end: `cut` is the error when it does.
    fn take_all(
        &mut self,
        out: &mut [u8],
        hcrc: Option<&mut flate2::Crc>,
        cut: impl FnOnce() -> io::Error,
    ) -> io::Result<()> {
        if self.take(out, hcrc)? < out.len() {
            return Err(cut());
        }
        Ok(())
    }

    /// Skips bytes up to and including a NUL (a file name or comment of any length, never
    /// held); false when the input ends first.
    fn skip_to_nul(&mut self, hcrc: &mut Option<flate2::Crc>) -> io::Result<bool> {
        loop {
            let buf = self.src.fill_buf()?;
            if buf.is_empty() {
                return Ok(false);
            }
            let (k, found) = match memchr::memchr(0, buf) {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if let Some(c) = hcrc.as_mut() {
                c.update(&buf[..k]);
            }
            self.consume(k);
            if found {
                return Ok(true);
            }
        }
    }

    /// Reads and checks a member's header (RFC 1952 §2.3); `first` tells the first member
    /// (whose magic the caller saw) from bytes after a trailer.
    fn header(&mut self, first: bool) -> io::Result<()> {
        let at = self.pos;
        self.member_at = at;
        let cut = |what: &str| {
            damaged(
                io::ErrorKind::InvalidData,
                at,
                format!("the gzip header of the member at byte {at} is cut ({what})"),
            )
        };
        let mut fixed = [0u8; 10];
        let mut hcrc = flate2::Crc::new();
        let n = self.take(&mut fixed, Some(&mut hcrc))?;
        if n < fixed.len() {
            if !first && (n < 2 || fixed[..2] != [0x1f, 0x8b]) {
                return Err(not_a_member(at, &fixed[..n]));
            }
            return Err(cut("the file ends inside its first 10 bytes"));
        }
        if fixed[..2] != [0x1f, 0x8b] {
            return Err(not_a_member(at, &fixed));
        }
        let bad = |reason: String| damaged(io::ErrorKind::InvalidData, at, reason);
        if fixed[2] != 8 {
            return Err(bad(format!(
                "the member at byte {at} uses compression method {}, not deflate (8)",
                fixed[2]
            )));
        }
        let flags = fixed[3];
        if flags & FRESERVED != 0 {
            return Err(bad(format!(
                "the member at byte {at} sets reserved header flags ({flags:#04x})"
            )));
        }
        let mut hcrc = (flags & FHCRC != 0).then_some(hcrc);
        if flags & FEXTRA != 0 {
            let mut len = [0u8; 2];
            self.take_all(&mut len, hcrc.as_mut(), || cut("in its extra field"))?;
            let mut left = u16::from_le_bytes(len) as usize;
            let mut skip = [0u8; 256];
            while left > 0 {
                let k = left.min(skip.len());
                self.take_all(&mut skip[..k], hcrc.as_mut(), || cut("in its extra field"))?;
                left -= k;
            }
        }
        if flags & FNAME != 0 && !self.skip_to_nul(&mut hcrc)? {
            return Err(cut("in its file name"));
        }
        if flags & FCOMMENT != 0 && !self.skip_to_nul(&mut hcrc)? {
            return Err(cut("in its comment"));
        }
        if let Some(c) = hcrc {
            let mut stored = [0u8; 2];
            self.take_all(&mut stored, None, || cut("in its header CRC"))?;
            if u16::from_le_bytes(stored) != (c.sum() & 0xffff) as u16 {
                return Err(bad(format!(
                    "the header CRC of the member at byte {at} does not match its header"
                )));
            }
        }
        self.inflate.reset(false);
        self.crc.reset();
        self.ended = false;
        Ok(())
    }

    /// Inflates into `out`: the bytes written (0 at the member's end).
    fn body(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.ended {
            return Ok(0);
        }
        loop {
            let input = self.src.fill_buf()?;
            let eof = input.is_empty();
            let (in0, out0) = (self.inflate.total_in(), self.inflate.total_out());
            let flush = if eof {
                flate2::FlushDecompress::Finish
            } else {
                flate2::FlushDecompress::None
            };
            let status = self.inflate.decompress(input, out, flush);
            let used = (self.inflate.total_in() - in0) as usize;
            let made = (self.inflate.total_out() - out0) as usize;
            self.consume(used);
            self.crc.update(&out[..made]);
            match status {
                Ok(flate2::Status::StreamEnd) => {
                    // With bytes made, the next call returns 0 and the trailer follows.
                    self.ended = true;
                    return Ok(made);
                }
                Ok(_) if made > 0 => return Ok(made),
                Ok(_) if eof => {
                    return Err(damaged(
                        io::ErrorKind::UnexpectedEof,
                        self.pos,
                        format!(
                            "the file ends inside the compressed data of the member at byte {} (the .gz is cut short; its CRC32/ISIZE trailer is missing)",
                            self.member_at
                        ),
                    ))
                }
                Ok(_) if used > 0 => {}
                Ok(_) => {
                    return Err(damaged(
                        io::ErrorKind::InvalidData,
                        self.pos,
                        "the deflate data makes no progress".into(),
                    ))
                }
                Err(e) => {
                    return Err(damaged(
                        io::ErrorKind::InvalidData,
                        self.pos,
                        format!(
                            "corrupt deflate data in the member at byte {}: {e}",
                            self.member_at
                        ),
                    ))
                }
            }
        }
    }

    /// Reads and checks a member's trailer against what was inflated.
    fn trailer(&mut self) -> io::Result<()> {
        let at = self.pos;
        let mut t = [0u8; 8];
        let n = self.take(&mut t, None)?;
        if n < t.len() {
            return Err(damaged(
                io::ErrorKind::InvalidData,
                at,
                format!(
                    "the gzip trailer (CRC32 and ISIZE, 8 bytes) of the member at byte {} is cut: the file ends {n} byte(s) into it",
                    self.member_at
                ),
            ));
        }
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let isize = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        if crc != self.crc.sum() {
            return Err(damaged(
                io::ErrorKind::InvalidData,
                at,
                format!(
                    "the CRC32 in the trailer ({crc:#010x}) does not match the data of the member at byte {} ({:#010x})",
                    self.member_at,
                    self.crc.sum()
                ),
            ));
        }
        let len = self.inflate.total_out();
        if isize != len as u32 {
            return Err(damaged(
                io::ErrorKind::InvalidData,
                at,
                format!(
                    "the length in the trailer ({isize} mod 2^32) does not match the {len} bytes of the member at byte {}",
                    self.member_at
                ),
            ));
        }
        Ok(())
    }

    /// True when the input has more bytes.
    fn more(&mut self) -> io::Result<bool> {
        loop {
            match self.src.fill_buf() {
                Ok(b) => return Ok(!b.is_empty()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn step(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.state {
                State::Header => {
                    self.header(self.pos == 0)?;
                    self.state = State::Body;
                }
                State::Body => {
                    let n = self.body(out)?;
                    if n > 0 {
                        return Ok(n);
                    }
                    self.trailer()?;
                    self.state = State::Between;
                }
                State::Between => {
                    if !self.more()? {
                        self.state = State::Done;
                        return Ok(0);
                    }
                    self.state = State::Header;
                }
                State::Done => return Ok(0),
            }
        }
    }
}

/// The error for bytes after the last member that do not start another one.
fn not_a_member(at: u64, head: &[u8]) -> io::Error {
    let shown: Vec<String> = head.iter().take(4).map(|b| format!("{b:02x}")).collect();
    damaged(
        io::ErrorKind::InvalidData,
        at,
        format!(
            "bytes after the end of the gzip data are not another gzip member (they start with {}): the file has trailing garbage",
            if shown.is_empty() {
                "nothing".to_string()
            } else {
                shown.join(" ")
            }
        ),
    )
}

impl<R: BufRead> Read for GzipReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let r = self.step(out);
        if r.as_ref().is_err_and(|e| damage(e).is_some()) {
            // Damage is final: a retry must not read past it as if the stream went on.
            self.state = State::Done;
        }
        r
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn text(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| b"{\"t\":1,\"op\":\"alloc\"}\n"[i % 21])
            .collect()
    }

    fn read_all(bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        GzipReader::new(io::BufReader::with_capacity(7, bytes)).read_to_end(&mut out)?;
        Ok(out)
    }

    fn damage_of(r: io::Result<Vec<u8>>) -> (io::ErrorKind, u64, String) {
        let e = r.expect_err("damaged");
        let d = damage(&e).expect("a GzipDamage");
        (e.kind(), d.offset, d.reason.clone())
    }

    #[test]
    fn whole_streams_and_concatenated_members_read_back() {
        let data = text(100_000);
        assert_eq!(read_all(&gz(&data)).unwrap(), data);
        let mut two = gz(&data[..40_000]);
        two.extend(gz(&data[40_000..]));
        two.extend(gz(b""));
        assert_eq!(read_all(&two).unwrap(), data);
        // flate2's MultiGzDecoder agrees (the independent reference).
        let mut want = Vec::new();
        flate2::read::MultiGzDecoder::new(&two[..])
            .read_to_end(&mut want)
            .unwrap();
        assert_eq!(want, data);
    }

    #[test]
    fn header_fields_are_skipped_and_the_header_crc_checked() {
        let data = text(5000);
        let mut e = flate2::GzBuilder::new()
            .filename("trace.json")
            .comment("a comment")
            .extra(vec![1, 2, 3])
            .write(Vec::new(), flate2::Compression::fast());
        e.write_all(&data).unwrap();
        let mut b = e.finish().unwrap();
        assert_eq!(read_all(&b).unwrap(), data);
        // The same with a header CRC (FHCRC): flate2 writes none, so add it by hand.
        let hlen = 10 + 2 + 3 + "trace.json".len() + 1 + "a comment".len() + 1;
        let mut c = flate2::Crc::new();
        b[3] |= FHCRC;
        c.update(&b[..hlen]);
        let sum = (c.sum() & 0xffff) as u16;
        let mut with = b[..hlen].to_vec();
        with.extend(sum.to_le_bytes());
        with.extend(&b[hlen..]);
        assert_eq!(read_all(&with).unwrap(), data);
        with[hlen] ^= 1;
        let (_, at, why) = damage_of(read_all(&with));
        assert_eq!(at, 0);
        assert!(why.contains("header CRC"), "{why}");
    }

    #[test]
    fn every_cut_of_the_trailer_is_refused_where_it_is() {
        let good = gz(&text(50_000));
        let n = good.len() as u64;
        for cut in 1..=8u64 {
            let (kind, at, why) = damage_of(read_all(&good[..(n - cut) as usize]));
            assert_eq!(kind, io::ErrorKind::InvalidData, "cut {cut}");
            assert_eq!(at, n - 8, "the trailer's offset (cut {cut})");
            assert!(why.contains("trailer"), "{why}");
            assert!(
                why.contains(&format!("ends {} byte(s) into it", 8 - cut)),
                "{why}"
            );
        }
    }

    #[test]
    fn a_cut_inside_the_data_is_an_unexpected_end() {
        let good = gz(&text(50_000));
        let (kind, at, why) = damage_of(read_all(&good[..good.len() / 2]));
        assert_eq!(kind, io::ErrorKind::UnexpectedEof);
        assert_eq!(at, (good.len() / 2) as u64);
        assert!(why.contains("cut short"), "{why}");
    }

    #[test]
    fn a_wrong_crc_or_length_is_refused() {
        let good = gz(&text(50_000));
        let n = good.len();
        for (byte, word) in [(n - 8, "CRC32"), (n - 2, "length")] {
            let mut bad = good.clone();
            bad[byte] ^= 0x10;
            let (kind, at, why) = damage_of(read_all(&bad));
            assert_eq!(kind, io::ErrorKind::InvalidData);
            assert_eq!(at, (n - 8) as u64);
            assert!(why.contains(word), "{why}");
        }
    }

    #[test]
    fn trailing_bytes_that_are_not_a_member_are_refused() {
        let good = gz(&text(50_000));
        let n = good.len() as u64;
        for tail in [
            &b"x"[..],
            b"\n",
            b"\0\0\0\0\0\0\0\0\0\0\0\0",
            b"garbage after",
            b"\x1f",
        ] {
            let mut bad = good.clone();
            bad.extend_from_slice(tail);
            let (kind, at, why) = damage_of(read_all(&bad));
            assert_eq!(kind, io::ErrorKind::InvalidData, "{tail:?}");
            assert_eq!(at, n, "{tail:?}");
            assert!(why.contains("not another gzip member"), "{tail:?}: {why}");
        }
        // A second member cut in its header is a cut header, not garbage.
        let mut bad = good.clone();
        bad.extend_from_slice(&[0x1f, 0x8b, 8, 0]);
        let (_, at, why) = damage_of(read_all(&bad));
        assert_eq!(at, n);
        assert!(why.contains("header") && why.contains("cut"), "{why}");
    }

    #[test]
    fn corrupt_deflate_data_is_refused() {
        let mut bad = gz(&text(50_000));
        for b in &mut bad[20..40] {
            *b = 0xff;
        }
        let (kind, _, why) = damage_of(read_all(&bad));
        assert_eq!(kind, io::ErrorKind::InvalidData);
        assert!(why.contains("deflate") || why.contains("CRC32"), "{why}");
    }
}

//! PyTorch's out-of-memory message, as a job log prints it: the figures the allocator
//! reported at the OOM (`DeviceCachingAllocator::malloc` in `c10/cuda/CUDACachingAllocator.cpp`),
//! in every PyTorch 2.x wording, each with the precision `format_size` printed it to.
//!
//! - 2.0 (and 1.x): `CUDA out of memory. Tried to allocate S (GPU N; S total capacity; S
//!   already allocated; S free; [S allowed; ]S reserved in total by PyTorch)`
//! - 2.1: `CUDA out of memory. Tried to allocate S. GPU N has a total capacty of S of which
//!   S is free. [Process P has S memory in use. ]…Of the allocated memory S is allocated by
//!   PyTorch, and S is reserved by PyTorch but unallocated.`
//! - 2.2 and later: `… has a total capacity of S of which S is free. [proc_info][S allowed; ]Of
//!   the allocated memory S is allocated by PyTorch, [with S allocated in private pools (e.g.,
//!   CUDA Graphs), ]and S is reserved by PyTorch but unallocated.`
//!
//! `proc_info` is one `Process P has S memory in use. ` per other process and `Including
//! non-PyTorch memory, this process has S memory in use. ` for the failing one. `S` is
//! `format_size`: `N bytes` up to 1 KiB, else two decimals of KiB, MiB or GiB. Whitespace
//! (a log that wrapped the message) is read as one space; text before `Tried to allocate`
//! and after the reserve figure is ignored.

use crate::allocator::rounding::{allocation_size, round_size};
use crate::trace::{human_bytes, Bytes, MarkKind, Trace};
use serde::Serialize;

/// One size as printed, with the bytes it stands for and how far off it may be.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Printed {
    /// The figure in bytes (the printed value × its unit, rounded).
    pub bytes: u64,
    /// Half the last printed digit: the true figure is within `bytes ± precision`.
    pub precision: u64,
    /// As printed (`79.15 GiB`).
    pub text: String,
}

/// Another process's memory, or the failing process's (`pid` None).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProcessUse {
    pub pid: Option<u64>,
    pub used: Printed,
}

/// The figures of one OOM message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OomMessage {
    /// `2.0`, `2.1` or `2.2+` (the wording matched).
    pub wording: &'static str,
    /// `Tried to allocate`: the allocation PyTorch asked the driver for (`alloc_size`: the
    /// rounded request's segment size).
    pub tried: Printed,
    pub gpu: u32,
    pub capacity: Printed,
    /// The driver's free bytes (`cudaMemGetInfo`).
    pub free: Printed,
    /// `allowed`: the per-process memory fraction's limit, when one is set.
    pub allowed: Option<Printed>,
    pub processes: Vec<ProcessUse>,
    /// Allocated by PyTorch (private pools included).
    pub allocated: Printed,
    pub private_pools: Option<Printed>,
    /// Reserved in total (2.0), or None.
    pub reserved: Option<Printed>,
    /// Reserved but unallocated (2.1 and later), or None.
    pub reserved_unallocated: Option<Printed>,
}

impl OomMessage {
    /// Reserved bytes and their precision: printed (2.0), or allocated + reserved but
    /// unallocated.
    pub fn reserved_bytes(&self) -> (u64, u64) {
        match (&self.reserved, &self.reserved_unallocated) {
            (Some(r), _) => (r.bytes, r.precision),
            (None, Some(u)) => (
                self.allocated.bytes.saturating_add(u.bytes),
                self.allocated.precision.saturating_add(u.precision),
            ),
            (None, None) => (self.allocated.bytes, self.allocated.precision),
        }
    }

    /// Memory outside the allocator, capacity − reserved − driver free, with its precision.
    pub fn outside(&self) -> (u64, u64) {
        let (r, rp) = self.reserved_bytes();
        (
            self.capacity
                .bytes
                .saturating_sub(r.saturating_add(self.free.bytes)),
            self.capacity
                .precision
                .saturating_add(rp)
                .saturating_add(self.free.precision),
        )
    }
}

/// Why a message could not be read: where (byte offset into the message with its whitespace
/// collapsed) and what was expected there.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("offset {offset} of the message: expected {expected}, found {found:?}")]
pub(crate) struct OomMessageError {
    pub offset: usize,
    pub expected: String,
    pub found: String,
}

/// Reads the first OOM message in `text`.
pub fn parse(text: &str) -> Result<OomMessage, OomMessageError> {
    let s: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let start = s
        .find("Tried to allocate ")
        .ok_or_else(|| OomMessageError {
            offset: 0,
            expected: "PyTorch's out-of-memory message (\"… out of memory. Tried to allocate …\")"
                .into(),
            found: s.chars().take(40).collect(),
        })?;
    let mut c = Cursor { s: &s, at: start };
    c.lit("Tried to allocate ")?;
    let tried = c.size()?;
    if c.opt(" (GPU ") {
        return old_wording(c, tried);
    }
    c.lit(". GPU ")?;
    let gpu = c.gpu()?;
    let wording = if c.opt(" has a total capacty of ") {
        "2.1"
    } else {
        c.lit(" has a total capacity of ")?;
        "2.2+"
    };
    let capacity = c.size()?;
    c.lit(" of which ")?;
    let free = c.size()?;
    c.lit(" is free. ")?;
    let mut processes = Vec::new();
    loop {
        let pid = if c.opt("Process ") {
            let p = c.int()?;
            c.lit(" has ")?;
            Some(p)
        } else if c.opt("Including non-PyTorch memory, this process has ") {
            None
        } else {
            break;
        };
        let used = c.size()?;
        c.lit(" memory in use. ")?;
        processes.push(ProcessUse { pid, used });
    }
    let allowed = if c.peek_size() {
        let a = c.size()?;
        c.lit(" allowed; ")?;
        Some(a)
    } else {
        None
    };
    c.lit("Of the allocated memory ")?;
    let allocated = c.size()?;
    c.lit(" is allocated by PyTorch, ")?;
    let private_pools = if c.opt("with ") {
        let p = c.size()?;
        c.lit(" allocated in private pools (e.g., CUDA Graphs), ")?;
        Some(p)
    } else {
        None
    };
    c.lit("and ")?;
    let unallocated = c.size()?;
    c.lit(" is reserved by PyTorch but unallocated")?;
    Ok(OomMessage {
        wording,
        tried,
        gpu,
        capacity,
        free,
        allowed,
        processes,
        allocated,
        private_pools,
        reserved: None,
        reserved_unallocated: Some(unallocated),
    })
}

/// `(GPU N; S total capacity; S already allocated; S free; [S allowed; ]S reserved in total
/// by PyTorch)`, after `Tried to allocate S`.
fn old_wording(mut c: Cursor<'_>, tried: Printed) -> Result<OomMessage, OomMessageError> {
    let gpu = c.gpu()?;
    c.lit("; ")?;
    let capacity = c.size()?;
    c.lit(" total capacity; ")?;
    let allocated = c.size()?;
    c.lit(" already allocated; ")?;
    let free = c.size()?;
    c.lit(" free; ")?;
    let first = c.size()?;
    let (allowed, reserved) = if c.opt(" allowed; ") {
        (Some(first), c.size()?)
    } else {
        (None, first)
    };
    c.lit(" reserved in total by PyTorch)")?;
    Ok(OomMessage {
        wording: "2.0",
        tried,
        gpu,
        capacity,
        free,
        allowed,
        processes: Vec::new(),
        allocated,
        private_pools: None,
        reserved: Some(reserved),
        reserved_unallocated: None,
    })
}

struct Cursor<'a> {
    s: &'a str,
    at: usize,
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        self.s.get(self.at..).unwrap_or("")
    }

    fn fail<T>(&self, expected: &str) -> Result<T, OomMessageError> {
        Err(OomMessageError {
            offset: self.at,
            expected: expected.into(),
            found: self.rest().chars().take(30).collect(),
        })
    }

    fn opt(&mut self, t: &str) -> bool {
        if self.rest().starts_with(t) {
            self.at += t.len();
            true
        } else {
            false
        }
    }

    fn lit(&mut self, t: &str) -> Result<(), OomMessageError> {
        if self.opt(t) {
            Ok(())
        } else {
            self.fail(&format!("{t:?}"))
        }
    }

    fn digits(&self) -> usize {
        self.rest().bytes().take_while(u8::is_ascii_digit).count()
    }

    fn int(&mut self) -> Result<u64, OomMessageError> {
        let n = self.digits();
        match self.rest().get(..n).and_then(|d| d.parse().ok()) {
            Some(v) => {
                self.at += n;
                Ok(v)
            }
            None => self.fail("a whole number"),
        }
    }

    /// A device ordinal (fits 32 bits).
    fn gpu(&mut self) -> Result<u32, OomMessageError> {
        let at = self.at;
        let n = self.int()?;
        u32::try_from(n).or_else(|_| {
            self.at = at;
            self.fail("a device number below 2^32")
        })
    }

    fn peek_size(&self) -> bool {
        self.digits() > 0
    }

    /// `format_size`: `N bytes`, or `D.DD KiB|MiB|GiB`.
    fn size(&mut self) -> Result<Printed, OomMessageError> {
        let start = self.at;
        let whole = self.int()?;
        let (frac, places) = if self.opt(".") {
            let n = self.digits();
            let f = self.int()?;
            (f, n as u32)
        } else {
            (0, 0)
        };
        let (unit, name) = if self.opt(" bytes") {
            (1u64, "bytes")
        } else if self.opt(" KiB") {
            (1 << 10, "KiB")
        } else if self.opt(" MiB") {
            (1 << 20, "MiB")
        } else if self.opt(" GiB") {
            (1 << 30, "GiB")
        } else {
            self.at = start;
            return self.fail("a size (\"512 bytes\", \"1.50 KiB\", \"20.00 MiB\", \"79.15 GiB\")");
        };
        let scale = 10u64.checked_pow(places).filter(|&s| s <= 1_000_000);
        let bytes = scale.and_then(|scale| {
            let num = (whole as u128 * scale as u128 + frac as u128) * unit as u128;
            u64::try_from((num + scale as u128 / 2) / scale as u128).ok()
        });
        let (Some(scale), Some(bytes)) = (scale, bytes) else {
            self.at = start;
            return self.fail("a size that fits 64 bits");
        };
        Ok(Printed {
            bytes,
            precision: if name == "bytes" {
                0
            } else {
                unit.div_ceil(scale * 2)
            },
            text: self.s.get(start..self.at).unwrap_or("").to_string(),
        })
    }
}

/// Gives `trace` the message's capacity (source: the message, with its precision) and, where
/// its first OOM lacks the driver's free bytes, the message's. Returns notes where the
/// message's figures disagree with the file's at that OOM beyond the printed precision (the
/// message may be of another OOM).
pub(crate) fn apply(trace: &mut Trace, m: &OomMessage, name: &str) -> Vec<String> {
    let mut notes = Vec::new();
    trace.capacity = Some(Bytes(m.capacity.bytes));
    trace.capacity_source = Some(format!(
        "PyTorch's OOM message {name} (\"total capacity of {}\", ± {})",
        m.capacity.text,
        human_bytes(m.capacity.precision)
    ));
    let numbers: Vec<u64> = trace
        .marks
        .iter()
        .filter(|k| k.kind == MarkKind::Oom)
        .map(|k| trace.event_number(k.at))
        .collect();
    let Some(k) = trace.marks.iter_mut().find(|k| k.kind == MarkKind::Oom) else {
        notes.push(format!(
            "{name}: the file records no OOM; only the capacity {} is used",
            m.capacity.text
        ));
        return notes;
    };
    let n = numbers.first().copied().unwrap_or(0);
    let off = |a: u64, b: &Printed| a.abs_diff(b.bytes) > b.precision;
    match k.free {
        None => {
            k.free = Some(Bytes(m.free.bytes));
            if let Some(src) = &mut trace.capacity_source {
                src.push_str(&format!(
                    "; the driver free at the OOM, {}, from it too (the file records none)",
                    m.free.text
                ));
            }
        }
        Some(f) if off(f.0, &m.free) => notes.push(format!(
            "{name}: its driver free {} differs from the file's {} at the OOM #{n}: the message may be of another OOM",
            m.free.text,
            human_bytes(f.0)
        )),
        Some(_) => {}
    }
    let segment = k
        .size
        .and_then(|b| round_size(b.0))
        .and_then(allocation_size);
    if let Some(seg) = segment.filter(|&s| off(s, &m.tried)) {
        notes.push(format!(
            "{name}: it tried to allocate {}, the file's OOM #{n} needed a {} segment: the message may be of another OOM",
            m.tried.text,
            human_bytes(seg)
        ));
    }
    notes
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    #[test]
    fn sizes_are_read_to_their_printed_precision() {
        let m = parse("Tried to allocate 512 bytes (GPU 0; 1.50 KiB total capacity; 0 bytes already allocated; 20.00 MiB free; 79.15 GiB reserved in total by PyTorch)").unwrap();
        assert_eq!((m.tried.bytes, m.tried.precision), (512, 0));
        assert_eq!(
            (m.capacity.bytes, m.capacity.precision),
            (1536, 6),
            "5.12 B, up"
        );
        assert_eq!((m.free.bytes, m.free.precision), (20 * MIB, 5243));
        let r = m.reserved.unwrap();
        assert_eq!(r.bytes, (79.15 * GIB as f64).round() as u64);
        assert_eq!(r.precision, 5_368_710);
    }

    #[test]
    fn an_unknown_wording_names_the_offset_and_what_was_expected() {
        let e = parse("CUDA out of memory. Tried to allocate 2.00 GiB; GPU 0").unwrap_err();
        assert_eq!(
            e.offset,
            "CUDA out of memory. Tried to allocate 2.00 GiB".len()
        );
        assert!(e.expected.contains("GPU"), "{e}");
        assert!(parse("no message here").is_err());
        assert!(parse("Tried to allocate 99999999999999999999.00 GiB. GPU 0").is_err());
        let e = parse("Tried to allocate 1.00 GiB. GPU 4294967296 has").unwrap_err();
        assert!(e.expected.contains("device number"), "{e}");
    }
}

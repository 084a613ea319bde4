//! Writes a big CUDA snapshot pickle of the real shape, fast and deterministically, for the
//! big-file benchmark (`benches/big.py`): one device's trace of `alloc` / `free_requested` /
//! `free_completed` entries over a bounded set of blocks in their own segments, written as
//! Python's pickler writes PyTorch's snapshot (protocol 4, 64 KiB FRAMEs, every str, dict and
//! list memoized, strs fetched from the memo once seen). Stacks are shared as in real
//! snapshots: a few thousand distinct stacks over a pool of frames, each frame dict written
//! once and fetched after; an entry's frames list is the stack's list fetched from the memo,
//! or (FRESH entries in 1,000) a fresh list of fetched frames. Not committed: generate it into
//! /tmp.
//!
//! `cargo run --release --example gen_big_snapshot -- OUT.pickle ENTRIES [STACKS] [FRESH] [oom|oom-nofree]`
//!
//! STACKS: distinct stacks (default 4,000); FRESH: how many entries in 1,000 write a fresh
//! frames list (default 0); `oom` appends one `oom` entry (a request larger than the driver's
//! free memory, `device_free` recorded; `oom-nofree`: not recorded) at the end of the
//! trace. Prints the entries and the file's size.

use std::fs::File;
use std::io::{BufWriter, Write};

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

/// Python's pickler, protocol 4, for the few types a snapshot holds.
struct Pickler<W: Write> {
    out: W,
    frame: Vec<u8>,
    memo: u32,
    strs: std::collections::HashMap<String, u32>,
    written: u64,
}

impl<W: Write> Pickler<W> {
    fn new(out: W) -> Self {
        let mut p = Pickler {
            out,
            frame: Vec::with_capacity(1 << 17),
            memo: 0,
            strs: Default::default(),
            written: 0,
        };
        p.frame.extend_from_slice(&[0x80, 4]);
        p
    }
    /// Ends the current frame when it is 64 KiB or more (Python commits at object ends).
    fn commit(&mut self, force: bool) -> std::io::Result<()> {
        if self.frame.len() >= 65536 || (force && !self.frame.is_empty()) {
            let (head, body) = if self.written == 0 {
                self.frame.split_at(2)
            } else {
                self.frame.split_at(0)
            };
            self.out.write_all(head)?;
            if body.len() >= 4 {
                self.out.write_all(&[0x95])?;
                self.out.write_all(&(body.len() as u64).to_le_bytes())?;
            }
            self.out.write_all(body)?;
            self.written += self.frame.len() as u64;
            self.frame.clear();
        }
        Ok(())
    }
    fn op(&mut self, b: u8) {
        self.frame.push(b);
    }
    fn memoize(&mut self) -> u32 {
        self.frame.push(0x94);
        self.memo += 1;
        self.memo - 1
    }
    fn get(&mut self, idx: u32) {
        if idx < 256 {
            self.frame.extend_from_slice(&[b'h', idx as u8]);
        } else {
            self.frame.push(b'j');
            self.frame.extend_from_slice(&idx.to_le_bytes());
        }
    }
    fn str(&mut self, s: &str) {
        if let Some(&i) = self.strs.get(s) {
            return self.get(i);
        }
        self.frame.push(0x8c);
        self.frame.push(s.len() as u8);
        self.frame.extend_from_slice(s.as_bytes());
        let i = self.memoize();
        self.strs.insert(s.to_string(), i);
    }
    fn int(&mut self, v: i64) {
        if (0..256).contains(&v) {
            self.frame.extend_from_slice(&[b'K', v as u8]);
        } else if (0..65536).contains(&v) {
            self.frame.push(b'M');
            self.frame.extend_from_slice(&(v as u16).to_le_bytes());
        } else if i32::try_from(v).is_ok() {
            self.frame.push(b'J');
            self.frame.extend_from_slice(&(v as i32).to_le_bytes());
        } else {
            // LONG1: the shortest two's-complement little-endian bytes
            let b = v.to_le_bytes();
            let mut n = 8;
            while n > 1 && b[n - 1] == 0 && b[n - 2] & 0x80 == 0 {
                n -= 1;
            }
            self.frame.extend_from_slice(&[0x8a, n as u8]);
            self.frame.extend_from_slice(&b[..n]);
        }
    }
}

struct Frame {
    file: String,
    line: i64,
    name: String,
    memo: Option<u32>,
}

struct Stack {
    frames: Vec<usize>,
    list_memo: Option<u32>,
}

const FILES: [&str; 8] = [
    "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/linear.py",
    "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/conv.py",
    "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/activation.py",
    "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py",
    "/opt/conda/lib/python3.11/site-packages/torch/optim/adam.py",
    "/opt/conda/lib/python3.11/site-packages/torch/autograd/graph.py",
    "/workspace/model.py",
    "/workspace/train.py",
];
const NAMES: [&str; 8] = [
    "forward",
    "_call_impl",
    "_wrapped_call_impl",
    "backward",
    "step",
    "train_step",
    "_single_tensor_adam",
    "main",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: gen_big_snapshot OUT.pickle ENTRIES [STACKS] [FRESH] [oom|oom-nofree]";
    let path = a.first().ok_or(usage)?;
    let entries: u64 = a.get(1).ok_or(usage)?.parse()?;
    let n_stacks: usize = a.get(2).map_or(Ok(4000), |s| s.parse())?;
    let fresh: u64 = a.get(3).map_or(Ok(0), |s| s.parse())?;
    let oom = a.get(4).is_some_and(|s| s == "oom" || s == "oom-nofree");
    let device_free = a.get(4).is_some_and(|s| s == "oom");
    let mut rng = Rng(0x5eed_b16f);

    // A pool of frames, stacks of 6–24 frames over it (user frames vary, library frames repeat).
    let mut frames: Vec<Frame> = (0..n_stacks * 2)
        .map(|i| Frame {
            file: FILES[i % FILES.len()].to_string(),
            line: 1 + (i as i64 * 37) % 3000,
            name: NAMES[(i / FILES.len()) % NAMES.len()].to_string(),
            memo: None,
        })
        .collect();
    let mut stacks: Vec<Stack> = (0..n_stacks)
        .map(|_| {
            let n = 6 + rng.below(19) as usize;
            Stack {
                frames: (0..n)
                    .map(|_| rng.below(frames.len() as u64) as usize)
                    .collect(),
                list_memo: None,
            }
        })
        .collect();

    // Blocks: fixed addresses, each in its own segment (mapped at the start).
    const BLOCKS: usize = 3000;
    let base = 0x7f00_0000_0000_u64;
    let mut blocks = Vec::with_capacity(BLOCKS);
    let mut seg_addr = base;
    for i in 0..BLOCKS {
        let size = 512 * (1 + rng.below(if i % 10 == 0 { 40_000 } else { 2_000 }));
        let seg = size.div_ceil(2 << 20) * (2 << 20);
        blocks.push((seg_addr, size, seg, rng.below(n_stacks as u64) as usize));
        seg_addr += seg;
    }

    let out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut p = Pickler::new(out);
    p.op(b'}');
    p.memoize();
    p.op(b'(');
    p.str("segments");
    p.op(b']');
    p.memoize();
    p.str("device_traces");
    p.op(b']');
    p.memoize();
    p.op(b']');
    p.memoize();

    let mut t: i64 = 1_733_000_000_000_000;
    let mut written = 0u64;
    let mut batch = 0;
    let mut live = vec![false; BLOCKS];
    let mut pending_free: Option<usize> = None;
    let mut entry = |p: &mut Pickler<_>,
                     action: &str,
                     addr: u64,
                     size: u64,
                     stack: usize,
                     written: u64|
     -> std::io::Result<()> {
        if batch == 0 {
            p.op(b'(');
        }
        p.op(b'}');
        p.memoize();
        p.op(b'(');
        p.str("action");
        p.str(action);
        p.str("addr");
        p.int(addr as i64);
        p.str("size");
        p.int(size as i64);
        p.str("stream");
        p.int(0);
        p.str("time_us");
        t += 1 + (written % 7) as i64;
        p.int(t);
        p.str("user_metadata");
        p.str("");
        if action == "oom" && device_free {
            // PyTorch records the driver's free bytes in both
            p.str("device_free");
            p.int(addr as i64);
        }
        p.str("frames");
        let st = &mut stacks[stack];
        match st.list_memo {
            Some(m) if (written * 7919) % 1000 >= fresh => p.get(m),
            _ => {
                p.op(b']');
                let m = p.memoize();
                p.op(b'(');
                for &f in &st.frames {
                    let fr = &mut frames[f];
                    match fr.memo {
                        Some(fm) => p.get(fm),
                        None => {
                            p.op(b'}');
                            fr.memo = Some(p.memoize());
                            p.op(b'(');
                            p.str("filename");
                            p.str(&fr.file);
                            p.str("line");
                            p.int(fr.line);
                            p.str("name");
                            p.str(&fr.name);
                            p.op(b'u');
                        }
                    }
                }
                p.op(b'e');
                st.list_memo.get_or_insert(m);
            }
        }
        p.op(b'u');
        batch += 1;
        if batch == 1000 {
            p.op(b'e');
            batch = 0;
        }
        p.commit(false)
    };

    for &(addr, _, seg, stack) in &blocks {
        entry(&mut p, "segment_alloc", addr, seg, stack, written)?;
        written += 1;
    }
    // A training-shaped walk: phases that mostly allocate, then mostly free.
    while written < entries {
        if let Some(i) = pending_free.take() {
            let (addr, size, _, stack) = blocks[i];
            entry(&mut p, "free_completed", addr, size, stack, written)?;
            written += 1;
            continue;
        }
        let growing = (written / 20_000).is_multiple_of(2);
        let i = rng.below(BLOCKS as u64) as usize;
        let (addr, size, _, stack) = blocks[i];
        let alloc_p = if growing { 70 } else { 30 };
        if !live[i] && rng.below(100) < alloc_p {
            entry(&mut p, "alloc", addr, size, stack, written)?;
            live[i] = true;
            written += 1;
        } else if live[i] {
            entry(&mut p, "free_requested", addr, size, stack, written)?;
            live[i] = false;
            pending_free = Some(i);
            written += 1;
        }
    }
    if oom {
        let free = 64 << 20;
        entry(&mut p, "oom", free, 80 << 30, 0, written)?;
        written += 1;
    }
    if batch > 0 {
        p.op(b'e');
    }
    p.op(b'a');
    p.op(b'u');
    p.op(b'.');
    p.commit(true)?;
    p.out.flush()?;
    let bytes = std::fs::metadata(path)?.len();
    println!("{path}: {written} entries, {bytes} bytes");
    Ok(())
}

//! memtide-core — the terminal-free core of memtide: readers for PyTorch memory files
//! (memtide JSONL v1, CUDA snapshots, Kineto traces, memory timelines), the trace model, the
//! interval index and the analyses (peak, live set, bands, trends, diffs, the lab's windows).
//!
//! Nothing here draws, parses command lines or watches files: the `memtide` binary crate's
//! `cli` and `tui` sit on top. Typed errors ([`formats::FormatError`]) throughout.
//!
//! ```
//! use memtide_core::formats::jsonl::{JsonlDecoder, JsonlOptions};
//! use memtide_core::index::Index;
//! use memtide_core::trace::Trace;
//!
//! let text = br#"{"memtide":1,"device":"cuda:0","clock":"us"}
//! {"t":1,"op":"alloc","id":1,"size":4096,"cat":"param","name":"w"}
//! {"t":2,"op":"alloc","id":2,"size":1024,"cat":"activation"}
//! {"t":3,"op":"free","id":2}
//! "#;
//! let mut trace = Trace::new("cuda:0", "example", "jsonl");
//! let mut dec = JsonlDecoder::new(JsonlOptions::default());
//! dec.feed(&mut trace, text).unwrap();
//! dec.finish(&mut trace).unwrap();
//! let index = Index::build(&trace);
//! let peak = memtide_core::analysis::global_peak(&trace, &index).unwrap();
//! assert_eq!(peak.bytes.0, 5120);
//! assert_eq!(trace.src_index(peak.at), 1);
//! ```
//!
//! Files on disk go through [`load::load`], which detects the format and infers the
//! categories a file does not carry.

#![forbid(unsafe_code)]

pub mod allocator;
pub mod analysis;
pub mod budget;
pub mod clip;
pub mod device_merge;
pub mod formats;
pub mod gate;
pub mod index;
pub mod json_text;
pub mod lab;
pub mod load;
pub mod nsys_merge;
pub mod open;
pub mod ranks;
#[cfg(any(test, feature = "synth"))]
pub mod synth;
pub mod trace;
pub mod worker;

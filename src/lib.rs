//! memtide — a terminal explorer for the memory timeline of deep-learning training runs.
//!
//! The core (`trace`, `formats`, `index`, `analysis`) knows nothing about terminals; the
//! `tui` module is a thin layer on top, and `cli` wires the commands.
//!
//! ```
//! use memtide::formats::jsonl::{JsonlDecoder, JsonlOptions};
//! use memtide::index::Index;
//! use memtide::trace::Trace;
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
//! let peak = memtide::analysis::global_peak(&trace, &index).unwrap();
//! assert_eq!(peak.bytes.0, 5120);
//! assert_eq!(trace.src_index(peak.at), 1);
//! ```

pub mod alloc_guard;
pub mod analysis;
pub mod cli;
pub mod follow;
pub mod formats;
pub mod index;
pub mod lab;
pub mod synth;
pub mod trace;
pub mod tui;

pub use cli::{run, Cli};

//! memtide-core — the terminal-free core of memtide: readers for PyTorch memory files
//! (memtide JSONL v1, CUDA snapshots, Kineto traces, memory timelines), the trace model, the
//! interval index and the analyses (peak, live set, bands, trends, OOM answers, diffs, the CI
//! gate). Nothing here draws, parses command lines or watches files: the `memtide` binary's
//! `cli` and `tui`, and the Python module, sit on top.
//!
//! # The door
//!
//! Every consumer opens a file through [`open()`] (or [`open_followed`] for a file still being
//! written) and gets an [`Opened`]: the file's [`Format`] and its devices, each a [`Device`]
//! already indexed, with its allocator history and the facts every consumer asks for (peak,
//! reserved peak, steps, marks, OOM explanations). [`Opened::pick`] is the one rule for which
//! device the user means; [`Device::summary`] the one summary (the `summary --json` object is
//! its rendering, [`Summary::to_json`]).
//!
//! ```
//! use memtide_core::{open, OpenOptions, Progress};
//!
//! let dir = std::env::temp_dir().join(format!("memtide-lib-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("run.jsonl");
//! std::fs::write(&path, concat!(
//!     "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n",
//!     "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":4096,\"cat\":\"param\",\"name\":\"w\"}\n",
//!     "{\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":1024,\"cat\":\"activation\"}\n",
//!     "{\"t\":3,\"op\":\"free\",\"id\":2}\n",
//! )).unwrap();
//! let opened = open(&path, &OpenOptions::default(), &Progress::new()).unwrap();
//! let device = &opened.devices[opened.pick(None).unwrap()];
//! let peak = device.peak.unwrap();
//! assert_eq!(peak.bytes.0, 5120);
//! assert_eq!(device.trace.src_index(peak.at), 1);
//! let summary = device.summary(&Default::default(), None);
//! assert_eq!(summary.peak.unwrap().bytes, 5120);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```
//!
//! # The map
//!
//! The front is small: the names above, re-exported here, and these public modules (with the
//! crate root, 17 module pages in rustdoc, 18 with the `synth` feature). Each re-exports at its
//! own level the items its consumers (the binary, the report layer, the Python crate, the
//! tests, benchmarks and examples) name; the files under it are crate-private.
//!
//! | module | what it holds |
//! |---|---|
//! | [`open`](mod@open) | the door: [`open()`], [`OpenOptions`], [`Opened`], [`Device`], [`OpenError`], the device rule; inside it the reading step (read, infer categories, merge side sources, check the sums), public alone as [`open::load`](fn@open::load) for what times the read |
//! | [`formats`] | the readers' front: [`Format`], [`detect`](formats::detect()), [`LoadOptions`], [`FormatError`], [`Progress`], the JSONL decoder and writer, the device-log and Kineto entry points, the data-only unpickler, the input plumbing a consumer names |
//! | [`formats::snapshot`] | CUDA snapshots: read, decode, replay and build, the pickle and JSON decoders, the decoded rows ([`formats::snapshot::Raw`]) |
//! | [`trace`] | the trace model: [`Trace`], units ([`Bytes`], [`Seq`]) and their texts, categories and [`Band`]s, interned stacks |
//! | [`trace::external`] | where a trace's external band came from: its sources and the side files' alignment reports |
//! | [`index`] | the interval index over a trace's storages ([`Index`]) |
//! | [`analysis`] | the analyses: peaks, windows, live sets, frames, inference, trends, the summary and its JSON, diffs, the fair comparison, parity |
//! | [`allocator`] | PyTorch's caching allocator: segments and blocks over time, OOM explanations |
//! | [`allocator::sim`] | the what-if simulator: allocator settings, the replay under them, the ceiling, validation |
//! | [`gate`] | the CI gate: each limit, its figure, pass or fail, the evidence, as a structured verdict |
//! | [`ranks`] | a distributed job: rank files found, read in parallel into rows, compared |
//! | [`device_merge`] | a device-usage log merged into a trace (external = used − reserved) |
//! | [`budget`] | the memory budget (`MEMTIDE_MAX_MEMORY`) and allocation failures as errors |
//! | [`clip`], [`json_text`] | texts made safe: one-line fields shortened, JSON strings that cannot act on a terminal |
//! | [`lab`] | the cache lab (a teaching toy) |
//! | `synth` | synthetic traces for benchmarks and tests (feature `synth`) |
//!
//! Inside, not part of the front: `nsys_merge` (an Nsight Systems export merged into a
//! snapshot's traces), `worker` (a named thread that gives its value back when no thread can
//! start), `digits` (digit grouping), and every file under the public modules (the analyses'
//! own files, each reader's internals: the pickle machine, JSON scanning, the Kineto scanner's
//! parts, the input plumbing; the allocator simulator's engine, …).
//!
//! Typed errors throughout ([`FormatError`], [`OpenError`]); no `unsafe`.

#![forbid(unsafe_code)]

pub mod allocator;
pub mod analysis;
pub mod budget;
pub mod clip;
pub mod device_merge;
pub(crate) mod digits;
pub mod formats;
pub mod gate;
pub mod index;
pub mod json_text;
pub mod lab;
pub(crate) mod nsys_merge;
pub mod open;
pub mod ranks;
#[cfg(any(test, feature = "synth"))]
pub mod synth;
#[cfg(test)]
pub(crate) mod test_files;
pub mod trace;
pub(crate) mod worker;

pub use analysis::{Peak, Summary, SummaryOptions, Window};
pub use formats::{Format, FormatError, LoadOptions, Progress};
pub use index::Index;
pub use open::{open, open_followed, Device, OpenError, OpenOptions, Opened};
pub use trace::{Band, Bytes, Category, Seq, Trace};

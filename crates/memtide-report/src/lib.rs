//! memtide's answers, terminal-free and command-line-free: the layer between the core's one
//! door ([`memtide_core::open()`]) and the three front ends (the command line, the explorer,
//! Python), which only parse, draw and print.
//!
//! - [`InputOptions`]: how a file and its side files are read — the one options type the
//!   command line, Python and the tests build; [`prologue`]: the file opened and the device
//!   picked, the notes of the opening handed back as they come.
//! - One answer per question, each with its renderings:
//!   - [`summary`]: every device's summary and its text (`--json` is the core's
//!     `summary_json`, [`markdown`] the Markdown report);
//!   - [`check`]: the gate on a file's devices — verdict, lines ([`gate_text`]), `--json`
//!     document, `--report` Markdown;
//!   - [`compare`]: two runs compared ([`diff_fair`]: the fair comparison's words);
//!   - [`whatif`]: the allocator replayed under other settings;
//!   - [`ranks`]: a distributed job's table and document;
//!   - [`picture`]: the timeline as SVG or PNG ([`picture_diff`]: two runs on one scale).
//! - [`serving`]: the serving budget's lines in the text and Markdown reports.
//! - [`sizes`]: sizes and percentages as people write them; [`safe_text`]: text made safe for
//!   where it goes (a terminal, a log line, JSON); [`frames`]: how a frame is shown.
//!
//! The OOM's answer is the core's explanation rendered by [`summary`], [`markdown`] and
//! [`gate_text`].

pub mod check;
pub mod compare;
pub mod diff_fair;
pub mod frames;
pub mod gate_text;
pub mod markdown;
pub mod oom_message;
pub mod options;
pub mod picture;
pub mod picture_diff;
pub mod prologue;
pub mod ranks;
pub mod safe_text;
pub mod serving;
pub mod sizes;
pub mod summary;
pub mod whatif;

pub use options::InputOptions;

//! The command line and the library behind it, run as users run them (`cargo test --test cli`).
//! One module per suite (add one with a `mod` line); `support` holds the shared helpers.

#[path = "../support/mod.rs"]
mod support;

mod action;
mod check_json;
mod ci_report;
mod cli;
mod compare;
mod course_transformer;
mod device_log;
mod every_device;
mod external_sources;
mod fair_comparison;
mod fix_deferral;
mod follow;
mod fuzz_slice;
mod gpu_conformance;
mod gpu_truth;
mod history_vs_dump;
mod hostile;
mod hostile_input;
mod hostile_outputs;
mod hostile_readers;
mod impossible_capacity;
mod invariants;
mod job_listing;
mod jsonl_fuzz;
mod kineto;
mod lab;
mod leak_survivors;
mod markdown;
mod nsys_before_history;
mod nsys_data_only;
mod one_door;
mod oom;
mod oom_answers;
mod oom_invariants;
mod owners;
mod param_count;
mod plot;
mod ranks;
mod right_answers;
mod rules_everywhere;
mod serving;
mod shell;
mod snapshot;
mod snapshot_category;
mod snapshot_rows_freed;
mod special_files;
mod summary_schema;
mod threaded;
mod whatif;
mod windows_fold;

//! memtide-core's integration tests in one binary (`cargo test -p memtide-core --test core`):
//! one module per suite; the fixture files they read live in `tests/fixtures/` and
//! `tests/data/` of this crate, so the core's tests read nothing outside it.

mod allocator_oracle;
mod block_size_oracle;
mod change_log;
mod device_log_prop;
mod index_oracle;
mod jsonl_fixtures;
mod kineto_baseline;
mod kineto_fuzz;
mod pickle_entry_bytes;
mod seq_at_times;
mod snapshot_fuzz;
mod snapshot_oracle;
mod trend_oracle;
mod whatif_sim;

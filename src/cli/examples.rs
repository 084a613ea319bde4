//! The examples at the end of each command's `--help`: what people type first, on the
//! samples the repository bundles (run from a checkout) or on their own files.

pub const EXPLORE: &str = "\
Examples:
  memtide sample-traces/cuda-oom.pickle          open the explorer at the peak (? lists the keys)
  memtide run.jsonl -f                           follow a recording while it is written
  memtide before.pickle after.pickle             the diff screen of two runs
  memtide job_dir/                               the ranks overview of a distributed job";

pub const SUMMARY: &str = "\
Examples:
  memtide summary sample-traces/cuda-oom.pickle            peak, bands, top live, OOM explained
  memtide summary sample-traces/train-3steps.jsonl --json  the same as JSON (schema: docs/)
  memtide summary run.pickle --markdown >> $GITHUB_STEP_SUMMARY
  memtide summary run.pickle --window 'step 3'             the peak inside one window
  memtide summary run.pickle --nsys run.sqlite             + memory outside PyTorch by library
  memtide summary job_dir/                                 one row per rank";

pub const CHECK: &str = "\
Examples:
  memtide check run.pickle --max-peak 70GiB               exit 1 when the peak is over 70 GiB
  memtide check sample-traces/train-leak.jsonl --max-growth 5%   exit 1 on a leak between steps
  memtide check run.pickle --max-peak 70GiB --report report.md   also write a Markdown report
  memtide check job_dir/ --max-imbalance 10%              ranks that differ too much";

pub const REPLAY: &str = "\
Examples:
  memtide replay sample-traces/cuda-oom.pickle out.jsonl  write it as memtide JSONL, progressively
  memtide replay run.pickle - | head                      to standard output";

pub const DIFF: &str = "\
Examples:
  memtide diff sample-traces/train-3steps.jsonl sample-traces/train-checkpointed.jsonl
  memtide diff before.pickle after.pickle --json          for a script
  memtide diff before.pickle after.pickle --markdown      for a pull-request comment";

pub const LAB: &str = "\
Examples:
  memtide lab                                             the cache lab (an LRU toy)";

pub const PLOT: &str = "\
Examples:
  memtide plot sample-traces/cuda-oom.pickle -o peak.svg           the timeline as SVG
  memtide plot sample-traces/cuda-oom.pickle -o peak.png --width 1600
  memtide plot sample-traces/train-3steps.jsonl sample-traces/train-checkpointed.jsonl -o ab.svg";

pub const WHATIF: &str = "\
Examples:
  memtide whatif sample-traces/cuda-oom.pickle --alloc-conf expandable_segments:True
  memtide whatif run.pickle --alloc-conf max_split_size_mb:128 --capacity 80GiB
  memtide whatif run.pickle --alloc-conf expandable_segments:True --json";

pub const OOM: &str = "\
Examples:
  memtide oom tests/fixtures/oom/cuda_oom_message.txt
  memtide oom job.log --json";

pub const COMPLETIONS: &str = "\
Examples:
  memtide completions bash > ~/.local/share/bash-completion/completions/memtide
  memtide completions zsh > ~/.zfunc/_memtide";

pub const MAN: &str = "\
Examples:
  memtide man > memtide.1 && man ./memtide.1";

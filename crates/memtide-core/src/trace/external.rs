//! Where a trace's external band came from: the source of each external storage, and the
//! alignment reports of the side files merged into it (`summary --json` keys `device_log`
//! and `nsys`, the explorer's header); the memory figures of a server's startup log
//! (`--server-log`, read by `formats::server_log`) that the serving budget is reconciled with.

use serde::Serialize;

/// The source of an external storage a recorder wrote as an `external` span.
pub const RECORDED: &str = "recorded";
/// The source of used − reserved (a device log, a recorder's `sample` lines): memory outside
/// the allocator that no source names (the CUDA context, libraries, other processes where
/// the figure is device-wide).
pub const UNATTRIBUTED: &str = "unattributed";

/// What a side source knows about one external storage beyond its size and lifetime.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExternalDetail {
    /// The call chain, innermost first (`symbol (module)`), empty when none was recorded;
    /// shared by every storage made by the same chain.
    pub frames: std::sync::Arc<[String]>,
    /// The kind of memory (`device`, `managed`, `device static`, …).
    pub kind: &'static str,
    /// When it was made and freed, UTC µs since the epoch (None: before the capture range /
    /// never freed within it).
    pub alloc_us: Option<i64>,
    pub free_us: Option<i64>,
    /// The process and the address, as the source recorded them.
    pub pid: u32,
    pub address: u64,
}

/// How an Nsight Systems export (`--nsys`) was put on one device's trace, and what it gave.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NsysInfo {
    /// The export as the user named it.
    pub path: String,
    /// The process and CUDA device whose allocations were used (None: none matched).
    pub pid: Option<u32>,
    pub device: Option<u32>,
    /// `TARGET_INFO_SESSION_START_TIME.utcEpochNs` in µs: export time 0 on the trace's clock.
    pub session_start_us: i64,
    /// Device allocations of that process and device in the export.
    pub allocations: u64,
    /// Of those, PyTorch's own segments (matched by address and size to the trace's
    /// `segment_alloc`/`segment_free`): left out, counted once, in reserved.
    pub pytorch_segments: u64,
    /// Of those, segments the trace holds from its start (made before the history began,
    /// known from the snapshot's segment list or their free): matched all the same.
    pub pytorch_segments_before_history: u64,
    /// Segments of the trace the export has no allocation for (made with cuMemMap by
    /// expandable segments, which the export does not record, or outside the capture).
    pub segments_not_in_export: u64,
    /// Allocations added as external memory.
    pub external: u64,
    /// Allocations made before the capture range (`start = 0`): live from the first event.
    pub before_capture: u64,
    /// Allocations never freed within the export: live to the last event.
    pub never_freed: u64,
    /// Allocations made and freed between two events of the trace (no event sees them).
    pub between_events: u64,
    /// Allocations wholly before the first or after the last event of the trace.
    pub outside_trace: u64,
    /// Host allocations (pinned, pageable) of the process: not device memory, not counted.
    pub host: u64,
    /// Deallocations without an allocation in the export.
    pub unmatched_frees: u64,
    /// Allocations per source (`nccl`, `cudnn`, `library-internal`, `other`, …): count and
    /// the largest bytes live at once on the trace's events.
    pub sources: Vec<NsysSource>,
    /// What the export cannot see, said rather than counted as 0.
    pub unseen: Vec<String>,
    pub warnings: Vec<String>,
}

/// One source of external memory in an export.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NsysSource {
    pub source: String,
    pub allocations: u64,
    pub bytes: u64,
}

impl NsysInfo {
    /// One line for headers: `external from run.sqlite (pid 4242, device 0) · 12 allocations ·
    /// 3 PyTorch segments left out`.
    pub fn label(&self) -> String {
        let name = std::path::Path::new(&self.path)
            .file_name()
            .map_or(self.path.clone(), |n| n.to_string_lossy().into_owned());
        let mut s = format!("external from {name}");
        match (self.pid, self.device) {
            (Some(p), Some(d)) => s.push_str(&format!(" (pid {p}, device {d})")),
            _ => s.push_str(" (no matching process)"),
        }
        s.push_str(&format!(
            " · {} allocations · {} PyTorch segments left out",
            self.external, self.pytorch_segments
        ));
        if !self.warnings.is_empty() {
            s.push_str(&format!(" · {} warnings", self.warnings.len()));
        }
        s
    }
}

/// How a device log (`--device-log`) was aligned with one device's trace, and what it gave.
/// Times are µs; `null` in JSON where a figure is unknown.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeviceLogInfo {
    /// The log file as the user named it.
    pub path: String,
    /// `"nvidia-smi"` or `"plain"` (`time_us,device,used_bytes[,total_bytes]`).
    pub format: &'static str,
    /// The log's device index matched with the trace's (None: the log has no such device).
    pub device: Option<u32>,
    /// How the log's timestamps were read: e.g. `"local time +02:00 (--device-log-tz)"`,
    /// `"assumed UTC (nvidia-smi writes local time without a zone: pass --device-log-tz)"`,
    /// `"UTC (time_us)"`.
    pub time_basis: String,
    /// The time zone applied to the log's local timestamps, `"+02:00"` (None: none given).
    pub timezone: Option<String>,
    /// `--device-log-offset`, µs (0 when not given).
    pub offset_us: i64,
    /// The whole shift applied to the log's timestamps as written (zone and offset), µs:
    /// trace time = log time + shift.
    pub shift_us: i64,
    /// Samples of the matched device used.
    pub samples: u64,
    /// Bad lines skipped with `--lenient`.
    pub skipped_lines: u64,
    /// Median time between the matched device's samples, µs (None: under two samples).
    pub sample_interval_us: Option<i64>,
    /// First and last sample after the shift, UTC µs since the epoch.
    pub first_sample_us: Option<i64>,
    pub last_sample_us: Option<i64>,
    /// Fraction (0–1) of the trace's time span between the first and last sample.
    pub coverage: f64,
    /// Events whose instant lies between the first and last sample (external is known there).
    pub covered_events: u64,
    pub events: u64,
    /// Samples whose external bytes apply to at least one event.
    pub applied_samples: u64,
    /// Applied samples whose used bytes are below the trace's reserved bytes at the sample's
    /// instant (external shown as 0 until the next sample), and the largest shortfall.
    pub used_below_reserved: u64,
    pub max_shortfall: u64,
    /// `memory.total` / `total_bytes` of the matched device (the capacity line).
    pub capacity: Option<u64>,
    /// Warnings about the alignment (also in the trace's warnings).
    pub warnings: Vec<String>,
}

impl DeviceLogInfo {
    /// One line for headers: `external from gpu.csv (device 0) · shift -7200.000 s · every
    /// 100 ms · covers 100%` (then the number of warnings, if any).
    pub fn label(&self) -> String {
        let name = std::path::Path::new(&self.path)
            .file_name()
            .map_or(self.path.clone(), |n| n.to_string_lossy().into_owned());
        let mut s = format!("external from {name}");
        match self.device {
            Some(d) => s.push_str(&format!(" (device {d})")),
            None => s.push_str(" (no matching device)"),
        }
        s.push_str(&format!(" · shift {}", secs(self.shift_us)));
        if let Some(i) = self.sample_interval_us {
            s.push_str(&format!(" · every {}", interval(i)));
        }
        s.push_str(&format!(" · covers {:.0}%", self.coverage * 100.0));
        match self.warnings.len() {
            0 => {}
            1 => s.push_str(" · 1 warning"),
            n => s.push_str(&format!(" · {n} warnings")),
        }
        s
    }
}

/// `-7200.000 s`.
pub fn secs(us: i64) -> String {
    format!("{:+.3} s", us as f64 / 1e6)
}

/// `100 ms`, `1.5 s`, `250 µs`.
pub fn interval(us: i64) -> String {
    if us.abs() >= 1_000_000 {
        format!("{} s", us as f64 / 1e6)
    } else if us.abs() >= 1000 {
        format!("{} ms", us as f64 / 1e3)
    } else {
        format!("{us} µs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_names_file_shift_interval_coverage() {
        let i = DeviceLogInfo {
            path: "/x/gpu.csv".into(),
            device: Some(0),
            shift_us: -7_200_000_000,
            sample_interval_us: Some(100_000),
            coverage: 1.0,
            ..Default::default()
        };
        assert_eq!(
            i.label(),
            "external from gpu.csv (device 0) · shift -7200.000 s · every 100 ms · covers 100%"
        );
    }
}

/// Which server printed a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Server {
    Vllm,
    Sglang,
}

impl Server {
    pub fn name(self) -> &'static str {
        match self {
            Server::Vllm => "vLLM",
            Server::Sglang => "SGLang",
        }
    }
}

/// What a logged figure measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFigure {
    /// The weights loaded (vLLM's model loading; SGLang's free-memory drop over the load).
    Weights,
    /// The profile run's activation peak (vLLM).
    ActivationPeak,
    /// The KV cache (vLLM: the memory made available to it; SGLang: its K and V buffers).
    KvCache,
    /// CUDA-graph memory measured around the capture (the drop in free memory).
    Graphs,
    /// CUDA-graph memory estimated before the capture (vLLM's graph-memory profiling).
    GraphsEstimate,
    /// Memory outside PyTorch (vLLM's non-torch memory).
    Outside,
    /// The device's total memory (vLLM's `total_gpu_memory`).
    Capacity,
    /// Memory the distributed init took (SGLang).
    DistributedInit,
    /// Free memory after the weights were loaded (SGLang).
    FreeAfterWeights,
    /// Free memory after the KV cache's pool was made (SGLang).
    FreeAfterKvCache,
    /// Free memory after graph capture (SGLang): what the server left free.
    FreeAfterGraphs,
}

impl LogFigure {
    /// The figure's name in the reports.
    pub fn label(self) -> &'static str {
        match self {
            LogFigure::Weights => "weights",
            LogFigure::ActivationPeak => "activation peak",
            LogFigure::KvCache => "KV cache",
            LogFigure::Graphs => "graph memory",
            LogFigure::GraphsEstimate => "graph memory estimate",
            LogFigure::Outside => "non-torch memory",
            LogFigure::Capacity => "total memory",
            LogFigure::DistributedInit => "distributed init",
            LogFigure::FreeAfterWeights => "free after load weights",
            LogFigure::FreeAfterKvCache => "free after KV cache",
            LogFigure::FreeAfterGraphs => "free after graph capture",
        }
    }
}

/// One figure as a server logged it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Logged {
    pub figure: LogFigure,
    /// The printed value × 2^30, rounded (vLLM can log a negative figure, e.g. a KV-cache
    /// budget below 0 or a graph pool that shrank).
    pub bytes: i64,
    /// Half the last printed digit, in bytes: the true figure is within `bytes ± precision`.
    pub precision: u64,
    /// The line it was read from (1-based).
    pub line: usize,
    /// The rank its prefix names (`rank=1`, `TP1`); None when it names none.
    pub rank: Option<u32>,
    pub server: Server,
}

/// The figures of one device's rank: what its budget is reconciled with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceServerLog {
    pub name: String,
    /// The rank chosen (None: the log names none).
    pub rank: Option<u32>,
    /// The device's own rank (`cuda:N` → N) where the log names ranks but not that one: the
    /// lowest rank's lines were taken instead.
    pub missing_rank: Option<u32>,
    /// The first figure of each kind the rank (or a line naming no rank) logged.
    pub figures: Vec<Logged>,
}

impl DeviceServerLog {
    /// The servers the figures come from, in order of first appearance.
    pub fn servers(&self) -> Vec<Server> {
        let mut out: Vec<Server> = Vec::new();
        for f in &self.figures {
            if !out.contains(&f.server) {
                out.push(f.server);
            }
        }
        out
    }

    /// The first figure of a kind.
    pub fn get(&self, what: LogFigure) -> Option<&Logged> {
        self.figures.iter().find(|f| f.figure == what)
    }
}

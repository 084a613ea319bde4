//! Where a trace's external band came from when a device-usage log was merged into it: the
//! alignment report (`summary --json` key `device_log`, the explorer's header).

use serde::Serialize;

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

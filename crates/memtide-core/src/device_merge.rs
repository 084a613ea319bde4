//! Merging a device-usage log into a trace read from a snapshot or Kineto file: aligned by
//! wall-clock time and matched by device index, external = used − reserved at each sample's
//! instant, held as a step function until the next sample (never beyond the first and last
//! sample), added as external storages; the alignment report goes to [`Trace::device_log`].

use crate::formats::device_log::{format_tz, DeviceLog, DeviceLogOptions, LogFormat};
use crate::trace::external::secs;
use crate::trace::{human_bytes, Bytes, Category, DeviceLogInfo, Seq, StorageKind, Trace};

/// Below this fraction of the trace's time span covered, the report warns.
pub(crate) const LOW_COVERAGE: f64 = 0.9;

/// Merges `log` into every device trace of a file (pinned host memory and devices without an
/// index are left alone).
pub(crate) fn merge_all(traces: &mut [Trace], log: &DeviceLog, opts: &DeviceLogOptions) {
    for t in traces.iter_mut() {
        if let Some(ordinal) = device_ordinal(&t.device) {
            merge(t, ordinal, log, opts);
        }
    }
}

/// `cuda:3` → 3; None for `host:pinned`, `cpu`.
pub(crate) fn device_ordinal(name: &str) -> Option<u32> {
    let (kind, n) = name.rsplit_once(':')?;
    (kind != "host").then(|| n.parse().ok()).flatten()
}

/// The shift (µs) that turns the log's timestamps as written into UTC, and how it was chosen.
fn shift(log: &DeviceLog, opts: &DeviceLogOptions) -> (i64, String, Option<String>) {
    let user = if opts.offset_us != 0 {
        format!(" + offset {} (--device-log-offset)", secs(opts.offset_us))
    } else {
        String::new()
    };
    match (log.format, opts.tz_east_us) {
        (LogFormat::NvidiaSmi, Some(tz)) => (
            opts.offset_us - tz,
            format!("local time {} (--device-log-tz){user}", format_tz(tz)),
            Some(format_tz(tz)),
        ),
        (LogFormat::NvidiaSmi, None) => (
            opts.offset_us,
            format!("assumed UTC (nvidia-smi writes local time without a zone: pass --device-log-tz){user}"),
            None,
        ),
        (LogFormat::Plain, tz) => (
            opts.offset_us,
            format!(
                "UTC (time_us){}{user}",
                if tz.is_some() { "; --device-log-tz ignored" } else { "" }
            ),
            None,
        ),
    }
}

/// Merges the samples of device `ordinal` into `t`.
pub fn merge(t: &mut Trace, ordinal: u32, log: &DeviceLog, opts: &DeviceLogOptions) {
    let (shift_us, time_basis, timezone) = shift(log, opts);
    let name = std::path::Path::new(&log.path)
        .file_name()
        .map_or(log.path.clone(), |n| n.to_string_lossy().into_owned());
    let mut info = DeviceLogInfo {
        path: log.path.clone(),
        format: log.format.name(),
        device: None,
        time_basis,
        timezone,
        offset_us: opts.offset_us,
        shift_us,
        skipped_lines: log.skipped_lines,
        events: t.len() as u64,
        ..Default::default()
    };
    if log.skipped_lines > 0 {
        info.warnings.push(format!(
            "device log {name}: --lenient: skipped {} bad lines",
            log.skipped_lines
        ));
    }
    // The matched device's samples, shifted to UTC µs, in time order (ties: file order).
    let mut samples: Vec<(i64, u64, Option<u64>)> = log
        .samples
        .iter()
        .filter(|s| s.device == ordinal)
        .map(|s| (s.t_us.saturating_add(shift_us), s.used, s.total))
        .collect();
    samples.sort_by_key(|s| s.0);
    let mut doubtful: Vec<String> = Vec::new();
    let Some(wall) = t
        .wall_offset_ns
        .filter(|_| t.clock.has_time() && !t.is_empty())
    else {
        doubtful.push(format!(
            "device log {name}: {} has no wall-clock times (a snapshot without history or a relative clock): the log cannot be aligned, external stays unavailable",
            t.device
        ));
        return finish(t, info, doubtful);
    };
    if samples.is_empty() {
        let mut devs: Vec<u32> = log.samples.iter().map(|s| s.device).collect();
        devs.sort_unstable();
        devs.dedup();
        let devs: Vec<String> = devs.iter().map(u32::to_string).collect();
        doubtful.push(format!(
            "device log {name}: no samples for device {ordinal} ({}); the log has device {}: external stays unavailable",
            t.device,
            devs.join(", ")
        ));
        return finish(t, info, doubtful);
    }
    info.device = Some(ordinal);
    info.samples = samples.len() as u64;
    if !t.has_reserved {
        // used − reserved would count the allocator's own memory twice.
        doubtful.push(format!(
            "device log {name}: {} records no reserved memory, so external = used − reserved cannot be computed: external stays unavailable",
            t.device
        ));
        return finish(t, info, doubtful);
    }
    let mut gaps: Vec<i64> = samples.windows(2).map(|w| w[1].0 - w[0].0).collect();
    gaps.sort_unstable();
    info.sample_interval_us = gaps.get(gaps.len() / 2).copied();
    let (first, last) = (samples[0].0, samples[samples.len() - 1].0);
    info.first_sample_us = Some(first);
    info.last_sample_us = Some(last);
    info.capacity = samples.iter().rev().find_map(|s| s.2);

    // Wall-clock µs of each event (ns precision kept for the comparison).
    let n = t.len();
    let at_ns = |p: usize| t.ts(Seq(p as u64)).0.saturating_add(wall);
    let (w0, wn) = (at_ns(0), at_ns(n - 1));
    let (f_ns, l_ns) = (first.saturating_mul(1000), last.saturating_mul(1000));
    info.coverage = if wn > w0 {
        let lo = w0.max(f_ns);
        let hi = wn.min(l_ns);
        ((hi - lo).max(0) as f64 / (wn - w0) as f64).clamp(0.0, 1.0)
    } else if (f_ns..=l_ns).contains(&w0) {
        1.0
    } else {
        0.0
    };

    // External at each sample's instant = used − the trace's reserved then (after every
    // event at or before it); held as a step function until the next sample, so reserved
    // changes between samples (in the trace) do not move it.
    let (initial, reserved) = reserved_after_each(t);
    let ext_of_sample = |i: usize| -> (u64, u64) {
        let (ts_us, used, _) = samples[i];
        let local = ts_us.saturating_mul(1000).saturating_sub(wall);
        let res = match t.seq_at_time(crate::trace::Ts(local)) {
            Some(p) => reserved.get(p.idx()).copied().unwrap_or(initial),
            None => initial,
        };
        (used, res)
    };
    let mut ext: Vec<Option<u64>> = Vec::with_capacity(n);
    let mut idx = 0usize;
    let mut current: Option<(usize, u64)> = None;
    for p in 0..n {
        let w = at_ns(p);
        if w < f_ns || w > l_ns {
            ext.push(None);
            continue;
        }
        while idx + 1 < samples.len() && samples[idx + 1].0.saturating_mul(1000) <= w {
            idx += 1;
        }
        info.covered_events += 1;
        let e = match current {
            Some((i, e)) if i == idx => e,
            _ => {
                let (used, res) = ext_of_sample(idx);
                info.applied_samples += 1;
                if used < res {
                    info.used_below_reserved += 1;
                    info.max_shortfall = info.max_shortfall.max(res - used);
                }
                let e = used.saturating_sub(res);
                current = Some((idx, e));
                e
            }
        };
        ext.push(Some(e));
    }

    // Runs of one value become one external storage each.
    let label = t
        .strings
        .intern(&format!("external (device log {name}: used − reserved)"));
    let mut spans: Vec<(Seq, Option<Seq>, Bytes, crate::trace::StrId)> = Vec::new();
    let mut p = 0usize;
    while p < n {
        let v = ext[p];
        let mut q = p + 1;
        while q < n && ext[q] == v {
            q += 1;
        }
        if let Some(bytes) = v.filter(|&b| b > 0) {
            let end = (q < n).then_some(Seq(q as u64));
            spans.push((Seq(p as u64), end, Bytes(bytes), label));
        }
        p = q;
    }
    let ids = t.add_intervals(&spans, Category::External);
    let unattributed = t.strings.intern(crate::trace::external::UNATTRIBUTED);
    for id in ids {
        t.ext_source.insert(id, unattributed);
    }
    // External is measured where the log covers the trace.
    t.external_known |= info.covered_events > 0;

    // Capacity: the log's memory.total where the trace has none.
    match (t.capacity, info.capacity) {
        (None, Some(c)) => {
            t.capacity = Some(Bytes(c));
            t.capacity_source = Some(format!("device log {name} (memory.total)"));
        }
        (Some(c), Some(l)) if c.0 != l => info.warnings.push(format!(
            "device log {name}: memory.total {} differs from the trace's capacity {}: the trace's is shown",
            human_bytes(l),
            human_bytes(c.0)
        )),
        _ => {}
    }

    let hint = || zone_hint(opts, log.format, first, last, w0 / 1000, wn / 1000);
    if info.covered_events == 0 {
        doubtful.push(format!(
            "device log {name}: misaligned: its samples ({}) do not overlap the trace ({}) for {}{}: external stays unavailable",
            span_text(first, last),
            span_text(w0 / 1000, wn / 1000),
            t.device,
            hint()
        ));
    } else {
        if info.coverage < LOW_COVERAGE {
            info.warnings.push(format!(
                "device log {name}: covers only {:.0}% of the trace ({} of {} events): external is unknown (shown as 0) outside {}",
                info.coverage * 100.0,
                info.covered_events,
                info.events,
                span_text(first, last)
            ));
        }
        if info.used_below_reserved > 0 {
            doubtful.push(format!(
                "device log {name}: at {} of the {} samples applied the log's used memory is below the trace's reserved memory at that instant (by up to {}): a misaligned clock or a log of another device or process; external is shown as 0 there{}",
                info.used_below_reserved,
                info.applied_samples,
                human_bytes(info.max_shortfall),
                hint()
            ));
        }
    }
    finish(t, info, doubtful)
}

/// Records the report and its warnings (doubtful ones through `warn_doubtful`).
fn finish(t: &mut Trace, mut info: DeviceLogInfo, doubtful: Vec<String>) {
    for w in &info.warnings {
        t.warn(w.clone());
    }
    for w in doubtful {
        t.warn_doubtful(w.clone());
        info.warnings.push(w);
    }
    t.device_log = Some(info);
}

/// Reserved bytes before the first event and after each event (segments live from the
/// start included).
fn reserved_after_each(t: &Trace) -> (u64, Vec<u64>) {
    let mut cur: u64 = (0..t.storage_count())
        .map(|i| crate::trace::AllocId(i as u32))
        .filter(|&id| t.is_from_start(id) && t.storage_kind(id) == StorageKind::Segment)
        .map(|id| t.size(id).0)
        .fold(0u64, u64::saturating_add);
    let initial = cur;
    let mut out = Vec::with_capacity(t.len());
    let mut c = 0usize;
    for p in 0..t.len() {
        while let Some(ch) = t.changes.get(c) {
            if ch.at().idx() > p {
                break;
            }
            if t.storage_kind(ch.storage()) == StorageKind::Segment {
                let sz = t.size(ch.storage()).0;
                cur = if ch.open() {
                    cur.saturating_add(sz)
                } else {
                    cur.saturating_sub(sz)
                };
            }
            c += 1;
        }
        out.push(cur);
    }
    (initial, out)
}

/// `2021-06-08 09:12:46.756–09:12:50.000 UTC`-like text: both ends as UTC date-times.
fn span_text(a_us: i64, b_us: i64) -> String {
    format!("{} – {} UTC", utc_text(a_us), utc_text(b_us))
}

/// UTC date and time of µs since the epoch, to the millisecond.
pub fn utc_text(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let ms = us.rem_euclid(1_000_000) / 1000;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{ms:03}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of days since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// When the log looks shifted by whole quarter-hours against the trace (nvidia-smi's local
/// time), the zone that would align it: `; the log is 2 h 00 min later than the trace: try
/// --device-log-tz +02:00`.
fn zone_hint(
    opts: &DeviceLogOptions,
    format: LogFormat,
    first: i64,
    last: i64,
    t0: i64,
    tn: i64,
) -> String {
    const QUARTER: i64 = 15 * 60 * 1_000_000;
    let d = if first > t0 {
        first - t0
    } else if last < tn {
        last - tn
    } else {
        return String::new();
    };
    let q = (d as f64 / QUARTER as f64).round() as i64;
    if q == 0 {
        return String::new();
    }
    let later = if d > 0 { "later" } else { "earlier" };
    let m = (q * 15).unsigned_abs();
    let what = format!(
        "; the log is about {} h {:02} min {later} than the trace",
        m / 60,
        m % 60
    );
    match format {
        LogFormat::NvidiaSmi => {
            let tz = opts.tz_east_us.unwrap_or(0) + q * QUARTER;
            format!(
                "{what}: nvidia-smi writes local time, try --device-log-tz {}",
                format_tz(tz)
            )
        }
        LogFormat::Plain => {
            format!(
                "{what}: try --device-log-offset {}s",
                -(q * QUARTER) / 1_000_000 + opts.offset_us / 1_000_000
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_text_round_trips_the_parser() {
        let us = crate::formats::device_log::parse_timestamp("2021/06/08 09:12:46.756");
        assert_eq!(
            us.map(utc_text).ok().as_deref(),
            Some("2021-06-08 09:12:46.756")
        );
        assert_eq!(utc_text(0), "1970-01-01 00:00:00.000");
        assert_eq!(utc_text(951_825_600_000_000), "2000-02-29 12:00:00.000");
    }

    #[test]
    fn ordinals() {
        assert_eq!(device_ordinal("cuda:3"), Some(3));
        assert_eq!(device_ordinal("host:pinned"), None);
        assert_eq!(device_ordinal("cpu"), None);
    }
}

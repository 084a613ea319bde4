//! Device-usage logs (`--device-log`): `nvidia-smi --query-gpu=timestamp,index,memory.used,
//! memory.total --format=csv[,nounits]` (any column order, with or without units) and a plain
//! CSV `time_us,device,used_bytes[,total_bytes]` any sampler can write. Parsing only: the
//! merge with a trace is `crate::device_merge`.

use std::path::{Path, PathBuf};

/// What the user asked for with `--device-log`, `--device-log-tz`, `--device-log-offset`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceLogOptions {
    pub path: PathBuf,
    /// The zone of nvidia-smi's local timestamps, µs east of UTC (`+02:00` → 7,200,000,000).
    pub tz_east_us: Option<i64>,
    /// Added to every log time after the zone, µs (`1.25s` → 1,250,000).
    pub offset_us: i64,
}

/// Which kind of CSV the log is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// nvidia-smi: local wall-clock timestamps without a zone, MiB.
    NvidiaSmi,
    /// `time_us,device,used_bytes[,total_bytes]`: UTC µs since the epoch, bytes.
    Plain,
}

impl LogFormat {
    pub fn name(self) -> &'static str {
        match self {
            LogFormat::NvidiaSmi => "nvidia-smi",
            LogFormat::Plain => "plain",
        }
    }
}

/// One sample: at `t_us` (as written: nvidia-smi's local time read as if UTC, or the plain
/// CSV's UTC µs since the epoch), device `device` used `used` bytes of `total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSample {
    pub t_us: i64,
    pub device: u32,
    pub used: u64,
    pub total: Option<u64>,
}

/// A parsed log, samples in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceLog {
    pub path: String,
    pub format: LogFormat,
    pub samples: Vec<LogSample>,
    /// Bad lines skipped with `--lenient`.
    pub skipped_lines: u64,
}

/// A device log that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DeviceLogError {
    /// A bad line (1-based).
    #[error("device log {path}: line {line}: {reason}")]
    Line {
        path: String,
        line: u64,
        reason: String,
    },
    /// The file as a whole is unusable (empty, no samples, unknown header).
    #[error("device log {path}: {reason}")]
    File { path: String, reason: String },
    /// Not a `source`: the message holds the OS reason once (anyhow's `{:#}` would repeat it).
    #[error("cannot read device log {path}: {error}")]
    Io { path: String, error: std::io::Error },
}

/// The largest device log read: nvidia-smi sampling 8 devices every 100 ms writes about
/// 700 MB a day. A log is read whole, so past this it is refused, not held.
pub(crate) const MAX_BYTES: u64 = 2 << 30;

/// Reads and parses the log at `path`; `lenient` skips and counts bad data lines.
pub fn read(path: &Path, lenient: bool) -> Result<DeviceLog, DeviceLogError> {
    let name = path.display().to_string();
    let io = |error| DeviceLogError::Io {
        path: name.clone(),
        error,
    };
    let bytes = super::limit::read_file(path, MAX_BYTES, "a device log").map_err(io)?;
    let text = String::from_utf8_lossy(&bytes);
    parse(&name, &text, lenient)
}

/// Column positions of the fields memtide reads.
#[derive(Clone, Copy, Debug)]
struct Columns {
    time: usize,
    device: usize,
    used: usize,
    total: Option<usize>,
    /// Bytes per unit for values written without one (nounits: the header's `[MiB]`).
    unit: u64,
    width: usize,
}

const HELP: &str = "expected nvidia-smi's CSV header (timestamp, index, memory.used [MiB], memory.total [MiB], from --query-gpu=timestamp,index,memory.used,memory.total --format=csv) or time_us,device,used_bytes[,total_bytes]";

/// Parses the text of a log (`path` names it in errors).
pub fn parse(path: &str, text: &str, lenient: bool) -> Result<DeviceLog, DeviceLogError> {
    let file_err = |reason: String| DeviceLogError::File {
        path: path.to_string(),
        reason,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((first_no, first)) = lines.next() else {
        return Err(file_err(format!("the file is empty: {HELP}")));
    };
    let fields: Vec<&str> = first.split(',').map(str::trim).collect();
    let (format, cols, header) = header(&fields).map_err(|reason| DeviceLogError::Line {
        path: path.to_string(),
        line: first_no,
        reason,
    })?;
    let mut log = DeviceLog {
        path: path.to_string(),
        format,
        samples: Vec::new(),
        skipped_lines: 0,
    };
    let rest = (!header)
        .then_some((first_no, first))
        .into_iter()
        .chain(lines);
    for (no, line) in rest {
        // A repeated header (logs concatenated, a restarted sampler) is not data.
        if header && line == first {
            continue;
        }
        match sample(format, &cols, line) {
            Ok(s) => log.samples.push(s),
            Err(_) if lenient => log.skipped_lines += 1,
            Err(reason) => {
                return Err(DeviceLogError::Line {
                    path: path.to_string(),
                    line: no,
                    reason,
                })
            }
        }
    }
    if log.samples.is_empty() {
        return Err(file_err(if log.skipped_lines > 0 {
            format!(
                "no readable sample ({} bad lines skipped)",
                log.skipped_lines
            )
        } else {
            "no samples after the header".into()
        }));
    }
    Ok(log)
}

/// Recognises the header (or a headerless plain CSV): the format, the columns, and whether
/// the first line was a header.
fn header(fields: &[&str]) -> Result<(LogFormat, Columns, bool), String> {
    let names: Vec<(String, Option<&str>)> = fields
        .iter()
        .map(|f| {
            let (name, unit) = match f.find('[') {
                Some(i) => (&f[..i], f[i + 1..].strip_suffix(']')),
                None => (*f, None),
            };
            (name.trim().to_ascii_lowercase(), unit.map(str::trim))
        })
        .collect();
    let find = |want: &str| names.iter().position(|(n, _)| n == want);
    if find("timestamp").is_some() || find("memory.used").is_some() {
        let need = |want: &str| {
            find(want).ok_or_else(|| {
                format!("nvidia-smi header without a {want} column (query timestamp,index,memory.used,memory.total)")
            })
        };
        let used = need("memory.used")?;
        let unit = match names.get(used).and_then(|(_, u)| *u) {
            Some(u) => unit_bytes(u).ok_or_else(|| format!("unknown unit [{u}] in the header"))?,
            None => 1 << 20,
        };
        let cols = Columns {
            time: need("timestamp")?,
            device: need("index")?,
            used,
            total: find("memory.total"),
            unit,
            width: fields.len(),
        };
        return Ok((LogFormat::NvidiaSmi, cols, true));
    }
    if find("time_us").is_some() {
        let need = |want: &str| {
            find(want).ok_or_else(|| format!("plain device log header without a {want} column (time_us,device,used_bytes[,total_bytes])"))
        };
        let cols = Columns {
            time: need("time_us")?,
            device: need("device")?,
            used: need("used_bytes")?,
            total: find("total_bytes"),
            unit: 1,
            width: fields.len(),
        };
        return Ok((LogFormat::Plain, cols, true));
    }
    let numeric = fields.first().is_some_and(|f| f.parse::<f64>().is_ok());
    if numeric && (fields.len() == 3 || fields.len() == 4) {
        let cols = Columns {
            time: 0,
            device: 1,
            used: 2,
            total: (fields.len() == 4).then_some(3),
            unit: 1,
            width: fields.len(),
        };
        return Ok((LogFormat::Plain, cols, false));
    }
    let shown: String = fields.join(",").chars().take(80).collect();
    Err(format!("unrecognised device log header {shown:?}: {HELP}"))
}

/// Parses one data line.
fn sample(format: LogFormat, c: &Columns, line: &str) -> Result<LogSample, String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() != c.width {
        return Err(format!(
            "{} fields where the header has {} ({line:?})",
            f.len(),
            c.width
        ));
    }
    let get = |i: usize| f.get(i).copied().unwrap_or("");
    let (time, dev, used) = (get(c.time), get(c.device), get(c.used));
    match format {
        LogFormat::NvidiaSmi => {
            let t_us = parse_timestamp(time).map_err(|why| {
                format!("bad timestamp {time:?}: {why} (the form is YYYY/MM/DD HH:MM:SS.mmm)")
            })?;
            let device = dev
                .parse::<u32>()
                .map_err(|_| format!("bad GPU index {dev:?}"))?;
            let used = parse_mem(used, c.unit).map_err(|e| format!("memory.used: {e}"))?;
            let total = match c.total {
                Some(i) => {
                    Some(parse_mem(get(i), c.unit).map_err(|e| format!("memory.total: {e}"))?)
                }
                None => None,
            };
            Ok(LogSample {
                t_us,
                device,
                used,
                total,
            })
        }
        LogFormat::Plain => {
            let t = time
                .parse::<f64>()
                .ok()
                .filter(|t| t.is_finite() && t.abs() < 9.0e15)
                .ok_or_else(|| {
                    format!("bad time_us {time:?} (expected µs since the Unix epoch, UTC)")
                })?;
            let d = dev.rsplit(':').next().unwrap_or(dev);
            let device = d.parse::<u32>().map_err(|_| {
                format!("bad device {dev:?} (expected an index such as 0 or cuda:0)")
            })?;
            let used = used
                .parse::<u64>()
                .map_err(|_| format!("bad used_bytes {used:?} (expected whole bytes)"))?;
            let total = match c.total.map(get) {
                None | Some("") => None,
                Some(x) => Some(
                    x.parse::<u64>()
                        .map_err(|_| format!("bad total_bytes {x:?} (expected whole bytes)"))?,
                ),
            };
            Ok(LogSample {
                t_us: t.round() as i64,
                device,
                used,
                total,
            })
        }
    }
}

/// Bytes of a memory unit as nvidia-smi and samplers write it.
fn unit_bytes(u: &str) -> Option<u64> {
    Some(match u {
        "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return None,
    })
}

/// `81559 MiB`, `81559` (the header's unit), `1.5 GiB`.
fn parse_mem(s: &str, default_unit: u64) -> Result<u64, String> {
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic() || c == '[') {
        Some(i) => (s[..i].trim(), Some(s[i..].trim())),
        None => (s, None),
    };
    let mult = match unit {
        Some(u) => {
            unit_bytes(u).ok_or_else(|| format!("{s:?} is not a size (expected e.g. 1234 MiB)"))?
        }
        None => default_unit,
    };
    let v: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("{s:?} is not a size (expected e.g. 1234 MiB)"))?;
    let bytes = v * mult as f64;
    if bytes >= u64::MAX as f64 {
        return Err(format!("{s:?} is too large"));
    }
    Ok(bytes.round() as u64)
}

/// The years a timestamp may name (nvidia-smi writes four digits): the µs since the epoch of
/// any of them fit an `i64` with room for the zone and the offset.
pub(crate) const YEARS: std::ops::RangeInclusive<i64> = 1..=9999;

/// `2026/12/02 00:40:01.123` (also `-` between date parts, `T` before the time) as µs since
/// the epoch, reading the wall-clock time as if it were UTC; or what is wrong with it.
pub(crate) fn parse_timestamp(s: &str) -> Result<i64, String> {
    let bad = |what: &str| what.to_string();
    let (date, time) = s
        .trim()
        .split_once([' ', 'T'])
        .ok_or_else(|| bad("no space or T between the date and the time"))?;
    let mut d = date.split(['/', '-']);
    let mut field = |name: &str| -> Result<&str, String> {
        d.next().ok_or_else(|| format!("the date has no {name}"))
    };
    let (ys, ms, ds) = (field("year")?, field("month")?, field("day")?);
    let y: i64 = ys
        .parse()
        .map_err(|_| format!("year {ys:?} is not a number"))?;
    if !YEARS.contains(&y) {
        return Err(format!(
            "year {ys} is out of range (expected {} to {})",
            YEARS.start(),
            YEARS.end()
        ));
    }
    let m: u32 = ms
        .parse()
        .ok()
        .filter(|m| (1..=12).contains(m))
        .ok_or_else(|| format!("month {ms:?} is not 1 to 12"))?;
    let day: u32 = ds
        .parse()
        .ok()
        .filter(|d| (1..=31).contains(d))
        .ok_or_else(|| format!("day {ds:?} is not 1 to 31"))?;
    if d.next().is_some() {
        return Err(bad("the date has more than three parts"));
    }
    let mut t = time.trim().split(':');
    let mut part = |name: &str, below: i64| -> Result<i64, String> {
        let p = t.next().ok_or_else(|| format!("the time has no {name}"))?;
        p.parse::<i64>()
            .ok()
            .filter(|v| (0..below).contains(v))
            .ok_or_else(|| format!("{name} {p:?} is not 0 to {}", below - 1))
    };
    let (h, min) = (part("hour", 24)?, part("minute", 60)?);
    let sec = t.next().ok_or_else(|| bad("the time has no seconds"))?;
    if t.next().is_some() {
        return Err(bad("the time has more than three parts"));
    }
    let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
    let s: i64 = whole
        .parse()
        .ok()
        .filter(|s| (0..61).contains(s))
        .ok_or_else(|| format!("seconds {whole:?} are not 0 to 60"))?;
    if !frac.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("fraction {frac:?} is not digits"));
    }
    let mut frac_us = 0i64;
    for (i, c) in frac.chars().take(6).enumerate() {
        frac_us += (c as i64 - '0' as i64) * 10i64.pow(5 - i as u32);
    }
    // Within YEARS every step fits (|µs| < 2.6e17); checked all the same.
    days_from_civil(y, m, day)
        .checked_mul(86_400)
        .and_then(|x| x.checked_add(h * 3600 + min * 60 + s))
        .and_then(|x| x.checked_mul(1_000_000))
        .and_then(|x| x.checked_add(frac_us))
        .ok_or_else(|| bad("the time is out of range"))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `--device-log-tz`: `+02:00`, `-05:30`, `+2`, `UTC`, `Z` → µs east of UTC.
pub fn parse_tz(s: &str) -> Result<i64, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("utc") || t == "Z" {
        return Ok(0);
    }
    let bad = || format!("{s:?} is not a UTC offset (expected e.g. +02:00, -05:30, UTC)");
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'+') => (1, &t[1..]),
        Some(b'-') => (-1, &t[1..]),
        _ => return Err(bad()),
    };
    let (h, m) = match rest.split_once(':') {
        Some((h, m)) => (h, m),
        None if rest.len() == 4 => rest.split_at(2),
        None => (rest, "0"),
    };
    let h: i64 = h.parse().map_err(|_| bad())?;
    let m: i64 = m.parse().map_err(|_| bad())?;
    if h > 14 || m >= 60 {
        return Err(bad());
    }
    Ok(sign * (h * 3600 + m * 60) * 1_000_000)
}

/// `--device-log-offset`: `1.25s`, `-300ms`, `40us`, `2min`, `1h` → µs.
pub fn parse_offset(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let i = t
        .find(|c: char| c.is_ascii_alphabetic() || c == 'µ')
        .ok_or_else(|| {
            format!("{s:?} has no unit (expected e.g. 1.25s, -300ms, 40us, 2min, 1h)")
        })?;
    let (num, unit) = (t[..i].trim(), t[i..].trim());
    let mult = match unit {
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "min" | "m" => 60e6,
        "h" => 3600e6,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (us, ms, s, min, h)")),
    };
    let v: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && v.abs() < 1e7)
        .ok_or_else(|| format!("{s:?} is not a time offset (expected e.g. 1.25s)"))?;
    Ok((v * mult).round() as i64)
}

/// `+02:00` for µs east of UTC.
pub(crate) fn format_tz(east_us: i64) -> String {
    let sign = if east_us < 0 { '-' } else { '+' };
    let m = east_us.unsigned_abs() / 60_000_000;
    format!("{sign}{:02}:{:02}", m / 60, m % 60)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_as_utc_wall_clock() {
        // 2021-06-08 09:12:46.756 UTC = 1623143566.756 s (checked with `date -u -d @1623143566`).
        assert_eq!(
            parse_timestamp("2021/06/08 09:12:46.756"),
            Ok(1_623_143_566_756_000)
        );
        assert_eq!(parse_timestamp("1970-01-01T00:00:01"), Ok(1_000_000));
        // 9999-12-31 23:59:59 UTC = 253402300799 s (`date -u -d '9999-12-31 23:59:59' +%s`).
        assert_eq!(
            parse_timestamp("9999/12/31 23:59:59"),
            Ok(253_402_300_799_000_000)
        );
        assert!(parse_timestamp("2021/13/08 09:12:46").is_err());
        assert!(parse_timestamp("yesterday").is_err());
        let e = parse_timestamp("99999999999999/06/08 09:12:46.756").unwrap_err();
        assert!(e.contains("year 99999999999999 is out of range"), "{e}");
        assert!(parse_timestamp("-1/06/08 09:12:46").is_err());
    }

    #[test]
    fn zones_and_offsets() {
        assert_eq!(parse_tz("+02:00"), Ok(7_200_000_000));
        assert_eq!(parse_tz("-05:30"), Ok(-19_800_000_000));
        assert_eq!(parse_tz("+0530"), Ok(19_800_000_000));
        assert_eq!(parse_tz("UTC"), Ok(0));
        assert!(parse_tz("02:00").is_err());
        assert_eq!(parse_offset("1.25s"), Ok(1_250_000));
        assert_eq!(parse_offset("-300ms"), Ok(-300_000));
        assert_eq!(parse_offset("2min"), Ok(120_000_000));
        assert!(parse_offset("5").is_err());
        assert_eq!(format_tz(-19_800_000_000), "-05:30");
    }

    #[test]
    fn nvidia_smi_any_order_with_and_without_units() {
        let with = "memory.used [MiB], timestamp, index, memory.total [MiB]\n\
                    1024 MiB, 2021/06/08 09:12:46.756, 0, 81559 MiB\n";
        let log = parse("g.csv", with, false).unwrap();
        assert_eq!(log.format, LogFormat::NvidiaSmi);
        assert_eq!(
            log.samples,
            vec![LogSample {
                t_us: 1_623_143_566_756_000,
                device: 0,
                used: 1024 << 20,
                total: Some(81559 << 20),
            }]
        );
        let nounits = "timestamp, index, memory.used [MiB]\n2021/06/08 09:12:46.756, 3, 2\n";
        let log = parse("g.csv", nounits, false).unwrap();
        assert_eq!(log.samples[0].used, 2 << 20);
        assert_eq!(log.samples[0].device, 3);
        assert_eq!(log.samples[0].total, None);
    }

    #[test]
    fn plain_with_and_without_header() {
        let log = parse(
            "p.csv",
            "time_us,device,used_bytes,total_bytes\n5,cuda:1,7,9\n",
            false,
        )
        .unwrap();
        assert_eq!(log.format, LogFormat::Plain);
        assert_eq!(
            log.samples[0],
            LogSample {
                t_us: 5,
                device: 1,
                used: 7,
                total: Some(9)
            }
        );
        let log = parse("p.csv", "5,0,7\n6,0,8\n", false).unwrap();
        assert_eq!(log.samples.len(), 2);
        assert_eq!(log.samples[1].used, 8);
    }

    #[test]
    fn bad_lines_name_the_line_or_are_counted() {
        let text = "time_us,device,used_bytes\n1,0,5\n2,0,lots\n3,0\n4,0,6\n";
        let e = parse("p.csv", text, false).unwrap_err().to_string();
        assert!(
            e.starts_with("device log p.csv: line 3: bad used_bytes"),
            "{e}"
        );
        let log = parse("p.csv", text, true).unwrap();
        assert_eq!(log.skipped_lines, 2);
        assert_eq!(log.samples.len(), 2);
        let e = parse("p.csv", "hello,world\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1: unrecognised device log header"), "{e}");
        assert!(parse("p.csv", "\n# only a comment\n", false).is_err());
        let na = "timestamp, index, memory.used [MiB]\n2021/06/08 09:12:46.756, 0, [N/A]\n";
        let e = parse("g.csv", na, false).unwrap_err().to_string();
        assert!(e.contains("line 2: memory.used"), "{e}");
    }
}

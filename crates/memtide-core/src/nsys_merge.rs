//! Merging an Nsight Systems export ([`crate::formats::nsys`]) into a snapshot's traces:
//! the export's times put on the snapshot's clock (session start + `start` = UTC, as the
//! snapshot's `time_us`), PyTorch's own segments matched by address and size to the
//! trace's segments and left out (they are reserved already: nothing is counted twice),
//! every other device allocation of the process added as an external storage with its
//! source (the library that made it) and call chain. What the export cannot see is said.

use crate::formats::nsys::{Allocation, NsysExport, PoolSample};
use crate::formats::FormatError;
use crate::trace::external::NsysSource;
use crate::trace::{
    AllocId, Bytes, Category, ExternalDetail, NewBlock, NsysInfo, Seq, StackId, StorageKind, Trace,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The source of a cudaMallocAsync pool's reserve not handed out.
pub(crate) const POOL_RESERVE: &str = "cudaMallocAsync pool (reserved, not in use)";

/// Merges `export` into every CUDA device trace of a snapshot that has events.
pub(crate) fn merge_all(traces: &mut [Trace], export: &NsysExport) -> Result<(), FormatError> {
    let cuda: Vec<usize> = (0..traces.len())
        .filter(|&i| {
            crate::device_merge::device_ordinal(&traces[i].device).is_some()
                && !traces[i].is_empty()
        })
        .collect();
    let only = cuda.len() == 1;
    for i in cuda {
        if let Some(t) = traces.get_mut(i) {
            let ordinal = crate::device_merge::device_ordinal(&t.device).unwrap_or(0);
            merge(t, ordinal, export, only)?;
        }
    }
    Ok(())
}

fn side(export: &NsysExport, reason: String) -> FormatError {
    FormatError::SideFile {
        what: format!("Nsight Systems export {}", export.path),
        reason,
    }
}

/// One PyTorch segment of the trace: address, size, wall-clock life (ns, None = unbounded).
struct Segment {
    address: u64,
    size: u64,
    from_ns: Option<i64>,
    to_ns: Option<i64>,
}

/// Merges the allocations of device `ordinal` into `t` (`only`: the file's one CUDA trace,
/// which may take an export's one device whatever its number).
pub fn merge(
    t: &mut Trace,
    ordinal: u32,
    export: &NsysExport,
    only: bool,
) -> Result<(), FormatError> {
    let Some(wall) = t
        .wall_offset_ns
        .filter(|_| t.clock.has_time() && !t.is_empty())
    else {
        return Err(side(export, format!(
            "{} of {} has no wall-clock times (a snapshot without history, or a relative clock): the export's clock cannot be aligned with it",
            t.device, t.source
        )));
    };
    let mut info = NsysInfo {
        path: export.path.clone(),
        session_start_us: export.session_start_ns.div_euclid(1000),
        unmatched_frees: export.unmatched_frees,
        ..Default::default()
    };
    let device = pick_device(export, ordinal, only, &mut info);
    let on_device: Vec<&Allocation> = export
        .allocations
        .iter()
        .filter(|a| Some(a.device) == device)
        .collect();
    info.host = on_device.iter().filter(|a| a.kind.is_host()).count() as u64;
    let device_allocs: Vec<&Allocation> = on_device
        .into_iter()
        .filter(|a| !a.kind.is_host())
        .collect();
    let segments = segments_of(t, wall);
    // A clock that cannot be aligned is said as such, before any process is picked by it.
    check_clock(t, wall, export, &device_allocs)?;
    let Pick {
        pid,
        matched,
        matched_segments,
        ..
    } = pick_process(export, &device_allocs, &segments)?;
    info.device = device;
    info.pid = pid;
    let mine: Vec<&Allocation> = device_allocs
        .into_iter()
        .filter(|a| Some(a.pid) == pid)
        .collect();
    info.allocations = mine.len() as u64;
    info.pytorch_segments = matched.len() as u64;
    info.pytorch_segments_before_history = matched_segments
        .iter()
        .filter(|&&i| segments.get(i).is_some_and(|s| s.from_ns.is_none()))
        .count() as u64;
    info.segments_not_in_export = segments.len() as u64 - matched.len() as u64;
    check_clock(t, wall, export, &mine)?;

    let n = t.len();
    // UTC ns of each event (a copy: the trace's strings are written below).
    let utc: Vec<i64> = t.timestamps().map(|x| x.saturating_add(wall)).collect();
    let first_ns = utc.first().copied().unwrap_or(i64::MAX);
    // The first event at or after UTC `ns`: an allocation made then is live from it on.
    let at_or_after = |ns: i64| -> usize { utc.partition_point(|&x| x < ns) };
    let abs = |rel: i64| export.session_start_ns.saturating_add(rel);
    let mut blocks: Vec<(NewBlock, &'static str, ExternalDetail)> = Vec::new();
    // Each call chain's frames and stack, interned once however many allocations share it.
    let mut stacks: HashMap<u32, (Arc<[String]>, StackId)> = HashMap::new();
    for (k, a) in mine.iter().enumerate() {
        if matched.contains(&k) {
            continue;
        }
        if a.start_ns.is_none() {
            info.before_capture += 1;
        }
        if a.end_ns.is_none() {
            info.never_freed += 1;
        }
        let from = a.start_ns.map(abs);
        let to = a.end_ns.map(abs);
        let start = match from {
            Some(ns) if ns > first_ns => {
                let p = at_or_after(ns);
                if p >= n {
                    info.outside_trace += 1;
                    continue;
                }
                Some(Seq(p as u64))
            }
            _ => None,
        };
        let end = match to {
            Some(ns) => {
                if start.is_none() && ns < first_ns {
                    info.outside_trace += 1;
                    continue;
                }
                let p = at_or_after(ns);
                (p < n).then_some(Seq(p as u64))
            }
            None => None,
        };
        if let (Some(s), Some(e)) = (start, end) {
            if e <= s {
                info.between_events += 1;
                continue;
            }
        }
        let source = if a.kind.is_managed() {
            "managed (cudaMallocManaged)"
        } else {
            a.source
        };
        let (frames, stack) = match a.chain {
            Some(c) => stacks
                .entry(c)
                .or_insert_with(|| {
                    let frames = export.chains.get(c as usize).cloned().unwrap_or_default();
                    let ids: Vec<_> = frames.iter().map(|f| t.strings.intern(f)).collect();
                    let stack = t.strings.intern_stack(&ids);
                    (frames, stack)
                })
                .clone(),
            None => (Arc::default(), StackId(0)),
        };
        let name = external_name(a, source);
        let name = t.strings.intern(&name);
        blocks.push((
            NewBlock {
                start,
                end,
                size: Bytes(a.bytes),
                name,
                stack,
                src_id: a.address,
            },
            source,
            ExternalDetail {
                frames,
                kind: a.kind.name(),
                alloc_us: from.map(|ns| ns.div_euclid(1000)),
                free_us: to.map(|ns| ns.div_euclid(1000)),
                pid: a.pid,
                address: a.address,
            },
        ));
    }
    pool_reserves(t, export, pid, device, wall, &mut blocks);
    info.external = blocks.len() as u64;
    let new: Vec<NewBlock> = blocks.iter().map(|b| b.0).collect();
    let ids = t.add_blocks(&new, Category::External);
    for (id, (_, source, detail)) in ids.iter().zip(blocks) {
        let s = t.strings.intern(source);
        t.ext_source.insert(*id, s);
        t.ext_detail.insert(*id, detail);
    }
    info.sources = source_peaks(t, &ids);
    unseen(&mut info, export, t);
    info.warnings.extend(export.notes.iter().cloned());
    for w in &info.warnings {
        t.warn(w.clone());
    }
    t.external_known = true;
    t.nsys = Some(info);
    Ok(())
}

/// `nccl: 4.0 MiB at 0x7f0000200000` — the storage's name.
fn external_name(a: &Allocation, source: &str) -> String {
    let what = a.name.as_deref().map_or(String::new(), |n| format!(" {n}"));
    format!("{source}{what} ({}) at {:#x}", a.kind.name(), a.address)
}

/// The export's device for trace device `ordinal`: the same number, else the export's one
/// device when the file has one CUDA trace (CUDA_VISIBLE_DEVICES renumbers devices).
fn pick_device(export: &NsysExport, ordinal: u32, only: bool, info: &mut NsysInfo) -> Option<u32> {
    let mut devices: Vec<u32> = export.allocations.iter().map(|a| a.device).collect();
    devices.sort_unstable();
    devices.dedup();
    if devices.contains(&ordinal) {
        return Some(ordinal);
    }
    match devices.as_slice() {
        [one] if only => {
            info.warnings.push(format!(
                "nsys: the export's only device is {one}, the trace's is cuda:{ordinal}: taken as the same GPU (CUDA_VISIBLE_DEVICES renumbers devices)"
            ));
            Some(*one)
        }
        _ => {
            info.warnings.push(format!(
                "nsys: the export has no allocation on device {ordinal} (it has {}): no external memory from it for cuda:{ordinal}",
                if devices.is_empty() { "none".to_string() } else { devices.iter().map(u32::to_string).collect::<Vec<_>>().join(", ") }
            ));
            None
        }
    }
}

/// The trace's segments with their wall-clock lives.
fn segments_of(t: &Trace, wall: i64) -> Vec<Segment> {
    (0..t.storage_count())
        .map(|i| AllocId(i as u32))
        .filter(|&id| t.storage_kind(id) == StorageKind::Segment)
        .map(|id| Segment {
            address: t.src_id(id).unwrap_or(0),
            size: t.size(id).0,
            from_ns: (!t.is_from_start(id)).then(|| t.ts(t.start(id)).0.saturating_add(wall)),
            to_ns: t.end(id).map(|e| t.ts(e).0.saturating_add(wall)),
        })
        .collect()
}

/// The process picked for a trace, the indices (into that process's allocations) of the
/// ones that are PyTorch's segments, and the work it took (allocations and candidate
/// segments visited: linear in the allocations and segments, however many processes).
struct Pick {
    pid: Option<u32>,
    matched: HashSet<usize>,
    /// The segments (indices into the trace's) those allocations matched.
    matched_segments: HashSet<usize>,
    #[cfg_attr(not(test), allow(dead_code))]
    work: u64,
}

/// The process whose allocations are the trace's (the most PyTorch segments matched): the
/// allocations grouped by process once, the segments indexed by address and size once.
fn pick_process(
    export: &NsysExport,
    allocs: &[&Allocation],
    segments: &[Segment],
) -> Result<Pick, FormatError> {
    let mut by_pid: HashMap<u32, Vec<&Allocation>> = HashMap::new();
    for a in allocs {
        by_pid.entry(a.pid).or_default().push(a);
    }
    let mut by_key: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
    for (i, s) in segments.iter().enumerate() {
        by_key.entry((s.address, s.size)).or_default().push(i);
    }
    let mut work = (allocs.len() + segments.len()) as u64;
    let mut scored: Vec<(u32, Matches)> = by_pid
        .into_iter()
        .map(|(p, mine)| {
            let (m, w) = match_segments(export, &mine, segments, &by_key);
            work += w;
            (p, m)
        })
        .collect();
    scored.sort_by_key(|(p, m)| (std::cmp::Reverse(m.allocs.len()), *p));
    let pick = |scored: &mut Vec<(u32, Matches)>, work| {
        let (p, m) = scored.swap_remove(0);
        Pick {
            pid: Some(p),
            matched: m.allocs,
            matched_segments: m.segments,
            work,
        }
    };
    match scored.as_slice() {
        [] => Ok(Pick {
            pid: None,
            matched: HashSet::new(),
            matched_segments: HashSet::new(),
            work,
        }),
        [_] => Ok(pick(&mut scored, work)),
        [(a, ma), (b, mb), ..] if ma.allocs.len() == mb.allocs.len() => Err(side(export, format!(
            "the export holds several processes and none is told apart by the trace's segments (pid {a}: {} matched, pid {b}: {} matched): export only the training process (nsys export filters, or one rank per report)",
            ma.allocs.len(), mb.allocs.len()
        ))),
        _ => Ok(pick(&mut scored, work)),
    }
}

/// A process's allocations that are PyTorch's segments (indices into its allocations), and
/// the segments they are (indices into the trace's).
struct Matches {
    allocs: HashSet<usize>,
    segments: HashSet<usize>,
}

/// The allocations that are PyTorch's segments: same address and size (`by_key`: the
/// segments of each), the lives overlapping most (each segment matched once); and the
/// candidates visited.
fn match_segments(
    export: &NsysExport,
    allocs: &[&Allocation],
    segments: &[Segment],
    by_key: &HashMap<(u64, u64), Vec<usize>>,
) -> (Matches, u64) {
    let mut used: HashSet<usize> = HashSet::new();
    let mut out = HashSet::new();
    let mut work = allocs.len() as u64;
    let abs = |rel: Option<i64>| rel.map(|r| export.session_start_ns.saturating_add(r));
    for (k, a) in allocs.iter().enumerate() {
        let Some(cands) = by_key.get(&(a.address, a.bytes)) else {
            continue;
        };
        work += cands.len() as u64;
        let (a0, a1) = (abs(a.start_ns), abs(a.end_ns));
        let best = cands
            .iter()
            .filter(|&&i| !used.contains(&i))
            .filter_map(|&i| segments.get(i).map(|s| (i, s)))
            .map(|(i, s)| (i, overlap(a0, a1, s.from_ns, s.to_ns)))
            .filter(|&(_, o)| o > 0)
            .max_by_key(|&(_, o)| o);
        if let Some((i, _)) = best {
            used.insert(i);
            out.insert(k);
        }
    }
    (
        Matches {
            allocs: out,
            segments: used,
        },
        work,
    )
}

/// The length of the overlap of two lives (None ends are unbounded).
fn overlap(a0: Option<i64>, a1: Option<i64>, b0: Option<i64>, b1: Option<i64>) -> i128 {
    let lo = a0.unwrap_or(i64::MIN).max(b0.unwrap_or(i64::MIN)) as i128;
    let hi = a1.unwrap_or(i64::MAX).min(b1.unwrap_or(i64::MAX)) as i128;
    hi - lo
}

/// Refuses an export whose allocations lie wholly outside the trace's time span: the two
/// clocks cannot be the same run's.
fn check_clock(
    t: &Trace,
    wall: i64,
    export: &NsysExport,
    mine: &[&Allocation],
) -> Result<(), FormatError> {
    let times: Vec<i64> = mine
        .iter()
        .flat_map(|a| [a.start_ns, a.end_ns])
        .flatten()
        .map(|r| export.session_start_ns.saturating_add(r))
        .collect();
    let (Some(&lo), Some(&hi)) = (times.iter().min(), times.iter().max()) else {
        return Ok(());
    };
    let (Some(f), Some(l)) = (t.timestamps().next(), t.timestamps().next_back()) else {
        return Ok(());
    };
    let (f, l) = (f.saturating_add(wall), l.saturating_add(wall));
    if hi < f || lo > l {
        let utc = |ns: i64| crate::device_merge::utc_text(ns.div_euclid(1000));
        return Err(side(export, format!(
            "the export's allocations ({} – {} UTC, from TARGET_INFO_SESSION_START_TIME.utcEpochNs {}) do not overlap {} ({} – {} UTC): the clocks cannot be aligned (another run, or a session start that is not UTC)",
            utc(lo), utc(hi), export.session_start_ns, t.device, utc(f), utc(l)
        )));
    }
    Ok(())
}

/// A cudaMallocAsync pool's size beyond what is handed out, as external storages (each run
/// of one value between two samples).
fn pool_reserves(
    t: &mut Trace,
    export: &NsysExport,
    pid: Option<u32>,
    device: Option<u32>,
    wall: i64,
    blocks: &mut Vec<(NewBlock, &'static str, ExternalDetail)>,
) {
    let mine: Vec<&PoolSample> = export
        .pools
        .iter()
        .filter(|p| Some(p.pid) == pid && Some(p.device) == device)
        .collect();
    let n = t.len();
    let name = t.strings.intern(POOL_RESERVE);
    for w in mine.windows(2).chain(mine.last().map(std::slice::from_ref)) {
        let a = w[0];
        let next = w.get(1).filter(|b| b.pool == a.pool);
        let spare = a.size.saturating_sub(a.utilized);
        if spare == 0 {
            continue;
        }
        let at = |rel: i64| {
            let ns = export.session_start_ns.saturating_add(rel);
            t.ts_partition_point(|x| x.saturating_add(wall) < ns)
        };
        let s = at(a.t_ns);
        let e = next.map(|b| at(b.t_ns));
        if s >= n || e.is_some_and(|e| e <= s) {
            continue;
        }
        blocks.push((
            NewBlock {
                start: Some(Seq(s as u64)),
                end: e.filter(|&e| e < n).map(|e| Seq(e as u64)),
                size: Bytes(spare),
                name,
                stack: crate::trace::StackId(0),
                src_id: a.pool,
            },
            POOL_RESERVE,
            ExternalDetail {
                kind: "pool reserve",
                pid: a.pid,
                address: a.pool,
                ..Default::default()
            },
        ));
    }
}

/// Per source: allocations added and the most bytes live at once on the trace's events.
fn source_peaks(t: &Trace, ids: &[AllocId]) -> Vec<NsysSource> {
    let mut by: Vec<NsysSource> = Vec::new();
    let mut events: HashMap<String, Vec<(u64, i128)>> = HashMap::new();
    for &id in ids {
        let s = t.external_source(id).to_string();
        match by.iter_mut().find(|x| x.source == s) {
            Some(x) => x.allocations += 1,
            None => by.push(NsysSource {
                source: s.clone(),
                allocations: 1,
                bytes: 0,
            }),
        }
        let sz = t.size(id).0 as i128;
        let e = events.entry(s).or_default();
        e.push((
            if t.is_from_start(id) {
                0
            } else {
                t.start(id).0
            },
            sz,
        ));
        if let Some(end) = t.end(id) {
            e.push((end.0, -sz));
        }
    }
    for x in &mut by {
        let mut ev = events.remove(&x.source).unwrap_or_default();
        // At one event, frees and allocations together: the state after it.
        ev.sort_by_key(|&(at, d)| (at, d));
        let (mut cur, mut best, mut i) = (0i128, 0i128, 0usize);
        while i < ev.len() {
            let at = ev[i].0;
            while i < ev.len() && ev[i].0 == at {
                cur += ev[i].1;
                i += 1;
            }
            best = best.max(cur);
        }
        x.bytes = best.max(0) as u64;
    }
    by.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.source.cmp(&b.source)));
    by
}

/// What the export cannot see, said in the report (never counted as 0).
fn unseen(info: &mut NsysInfo, export: &NsysExport, t: &Trace) {
    info.unseen.push(
        "the CUDA context and the driver's own reservations (not allocations: not in the export; typically a few hundred MiB per device)".into(),
    );
    if info.segments_not_in_export > 0 {
        info.unseen.push(format!(
            "{} of the trace's segments have no allocation in the export: memory mapped with cuMemCreate/cuMemMap (expandable segments, VMM) is not recorded there, so VMM mappings of other libraries are unseen too",
            info.segments_not_in_export
        ));
    }
    if !export.has_mem_kind {
        info.warnings.push(format!(
            "nsys: {} is an older export without memKind: every allocation is taken as device memory",
            export.path
        ));
    }
    if !export.has_callchains {
        info.unseen.push("call chains (the export has no CUDA_CALLCHAINS / callchainId): allocations are attributed by pc only (library-internal or other)".into());
    }
    if info.unmatched_frees > 0 {
        info.warnings.push(format!(
            "nsys: {} deallocations have no allocation in the export (made before the capture range and not reported at start = 0): their bytes before the free are unseen",
            info.unmatched_frees
        ));
    }
    if info.between_events > 0 {
        info.warnings.push(format!(
            "nsys: {} allocations were made and freed between two events of {}: no event of the trace sees them",
            info.between_events, t.device
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::nsys::schema::MemKind;

    fn alloc(pid: u32, address: u64, bytes: u64) -> Allocation {
        Allocation {
            pid,
            device: 0,
            context: Some(1),
            address,
            bytes,
            kind: MemKind::Device,
            start_ns: Some(1_000),
            end_ns: None,
            pc: 1,
            source: "other",
            chain: None,
            name: None,
            pool: None,
            row: 1,
        }
    }

    #[test]
    fn many_processes_are_grouped_once_in_work_linear_in_allocations() {
        // 100,000 processes with one allocation each, and the training process whose two
        // allocations are the trace's two segments (same address and size, lives overlapping).
        const P: u32 = 100_000;
        let mut allocations: Vec<Allocation> = (0..P)
            .map(|p| alloc(10_000 + p, 0x10_0000 + u64::from(p), 512))
            .collect();
        allocations.push(alloc(4242, 0x7f00_0000, 2 << 20));
        allocations.push(alloc(4242, 0x7f80_0000, 4 << 20));
        let export = NsysExport {
            session_start_ns: 1_000_000,
            allocations,
            ..Default::default()
        };
        let segments = [
            (0x7f00_0000, 2 << 20),
            (0x7f80_0000, 4 << 20),
            (0x10_0000, 4),
        ]
        .map(|(address, size)| Segment {
            address,
            size,
            from_ns: Some(0),
            to_ns: None,
        });
        let allocs: Vec<&Allocation> = export.allocations.iter().collect();
        let pick = match pick_process(&export, &allocs, &segments) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(pick.pid, Some(4242));
        let want: HashSet<usize> = [0, 1].into();
        assert_eq!(pick.matched, want);
        // Each allocation visited a bounded number of times: grouping, matching, and the
        // candidates of its address and size (one segment each here). Matching each process
        // against all allocations would visit P × P = 10^10.
        let n = allocs.len() as u64 + segments.len() as u64;
        assert!(
            pick.work <= 3 * n,
            "{} visits for {n} allocations and segments",
            pick.work
        );
    }
}

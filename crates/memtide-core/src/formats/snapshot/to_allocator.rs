//! A decoded snapshot as allocator histories ([`crate::allocator::History`], one per CUDA
//! device with entries or segments): each trace entry's action, address, size, stream and
//! pool, and the final segments with their blocks, pool, stream, type and expandability.

use super::raw::{Action, BlockState as RawState, Raw, Segment};
use crate::allocator::sim::AllocConf;
use crate::allocator::{
    BlockState, Entry, FinalBlock, FinalSegment, History, Op, Place, PoolId, PoolKind,
};
use crate::trace::StrId;
use rustc_hash::FxHashMap;
use serde_json::Value;

/// A kept-fields object's value as a u64 (a stream pointer may be written as a negative int).
fn as_u64(v: Option<&Value>) -> u64 {
    v.and_then(|x| x.as_u64().or_else(|| x.as_i64().map(|i| i as u64)))
        .unwrap_or(0)
}

fn pool_id(v: Option<&Value>) -> PoolId {
    match v.and_then(Value::as_array) {
        Some(a) => PoolId(
            a.first().and_then(Value::as_i64).unwrap_or(0),
            a.get(1).and_then(Value::as_i64).unwrap_or(0),
        ),
        None => PoolId(0, 0),
    }
}

fn parse_extra(raw: &Raw, x: StrId) -> serde_json::Map<String, Value> {
    if x.0 == 0 {
        return serde_json::Map::new();
    }
    match serde_json::from_str(raw.strings.text(x)) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

fn op(a: Action) -> Op {
    match a {
        Action::Alloc => Op::Alloc,
        Action::FreeRequested => Op::FreeRequested,
        Action::FreeCompleted => Op::FreeCompleted,
        Action::SegmentAlloc => Op::SegmentAlloc,
        Action::SegmentFree => Op::SegmentFree,
        Action::SegmentMap => Op::SegmentMap,
        Action::SegmentUnmap => Op::SegmentUnmap,
        Action::Oom => Op::Oom,
        _ => Op::Other,
    }
}

pub(crate) fn final_segment(raw: &Raw, s: &Segment) -> FinalSegment {
    let x = parse_extra(raw, s.extra);
    FinalSegment {
        address: s.address,
        total_size: s.total_size,
        stream: as_u64(x.get("stream")),
        pool_id: pool_id(x.get("segment_pool_id")),
        kind: match x.get("segment_type").and_then(Value::as_str) {
            Some("small") => Some(PoolKind::Small),
            Some("large") => Some(PoolKind::Large),
            _ => None,
        },
        expandable: x
            .get("is_expandable")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        blocks: s
            .blocks
            .iter()
            .map(|b| FinalBlock {
                size: b.size,
                requested: b.requested,
                state: match b.state {
                    RawState::Allocated => BlockState::Allocated,
                    RawState::PendingFree => BlockState::PendingFree,
                    RawState::Inactive | RawState::Other => BlockState::Free,
                },
            })
            .collect(),
    }
}

/// The history of CUDA device `d` (entries in trace order; event #i is entry i).
pub(crate) fn history(raw: &Raw, d: usize) -> History {
    let mut h = final_only(raw, d);
    // The entries' places index the pools in order of first use, made below.
    h.pools.truncate(1);
    // Kept-field objects are interned: each distinct one is parsed once, to its place.
    let mut cache: FxHashMap<u32, u32> = FxHashMap::default();
    let mut pool_index: FxHashMap<PoolId, u32> = FxHashMap::default();
    pool_index.insert(PoolId(0, 0), 0);
    let mut place_index: FxHashMap<Place, u32> = FxHashMap::default();
    place_index.insert(Place::default(), 0);
    let rows = raw.devices.get(d).map_or(&[][..], |v| &v[..]);
    h.entries.reserve(rows.len());
    let mut reader = raw.rows.reader();
    for &r in rows {
        let Some(row) = reader.pass(r) else {
            continue;
        };
        let place = match raw.row_extra.get(&r) {
            None => 0,
            Some(&x) => *cache.entry(x.0).or_insert_with(|| {
                let m = parse_extra(raw, x);
                let id = pool_id(m.get("pool_id"));
                let pool = *pool_index.entry(id).or_insert_with(|| {
                    h.pools.push(id);
                    h.pools.len() as u32 - 1
                });
                let place = Place {
                    stream: as_u64(m.get("stream")),
                    pool,
                };
                *place_index.entry(place).or_insert_with(|| {
                    h.places.push(place);
                    h.places.len() as u32 - 1
                })
            }),
        };
        let (addr, size) = match row.action {
            // The oom entry's addr is the driver's free bytes (kept as device_free).
            Action::Oom => (
                raw.device_free.get(&r).copied().unwrap_or(row.addr),
                row.size,
            ),
            _ => (row.addr, row.size),
        };
        h.entries.push(Entry {
            addr,
            size,
            place,
            op: op(row.action),
        });
    }
    h
}

/// The recorded allocator settings (PyTorch's defaults when the file has none or they cannot
/// be read: 512 B rounding, no `max_split_size`).
pub(crate) fn settings(raw: &Raw) -> AllocConf {
    raw.allocator_settings
        .as_deref()
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| AllocConf::from_settings(&v).ok())
        .unwrap_or_default()
}

/// The history of CUDA device `d` without its entries: the final segments only, and every
/// pool the entries name (a pool released before the dump is named by its entries alone:
/// the serving budget's capture ladder says it was there).
pub(crate) fn final_only(raw: &Raw, d: usize) -> History {
    let mut pools = vec![PoolId(0, 0)];
    let mut seen: rustc_hash::FxHashSet<u32> = rustc_hash::FxHashSet::default();
    for r in raw.devices.get(d).map_or(&[][..], |v| &v[..]) {
        if let Some(&x) = raw.row_extra.get(r) {
            if seen.insert(x.0) {
                let id = pool_id(parse_extra(raw, x).get("pool_id"));
                if !pools.contains(&id) {
                    pools.push(id);
                }
            }
        }
    }
    History {
        device: format!("cuda:{d}"),
        conf: settings(raw),
        places: vec![Place::default()],
        pools,
        segments: raw
            .segments
            .iter()
            .filter(|s| s.device == d as u64)
            .map(|s| final_segment(raw, s))
            .collect(),
        ..History::default()
    }
}

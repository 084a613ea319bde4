//! Category sidecar: PyTorch's `export_memory_timeline` categories matched onto a Kineto
//! trace's allocations by time and size (raw `t` = trace ts in ns + `baseTimeNanoseconds`).

use crate::formats::memory_timeline::{Action, Timeline};
use rustc_hash::FxHashMap;

/// How far (ns) a sidecar time may be from the trace's to still match: the raw file is exact,
/// the coalesced `.json` truncates to µs.
const RAW_TOLERANCE_NS: i64 = 2;
const COALESCED_TOLERANCE_NS: i64 = 1000;

/// A category change of some live allocation (INCREMENT_VERSION with a different category).
#[derive(Clone, Copy, Debug)]
pub struct Change {
    pub t: i64,
    pub bytes: i64,
    pub old: Option<u8>,
    pub new: Option<u8>,
}

/// The sidecar, prepared for matching.
pub(crate) struct Sidecar {
    /// (t ns, bytes, category), sorted by t.
    creates: Vec<(i64, i64, Option<u8>)>,
    used: Vec<bool>,
    pub changes: Vec<Change>,
    /// (t ns, bytes) of each DESTROY → the category it had then.
    destroys: FxHashMap<(i64, i64), Option<u8>>,
    tolerance: i64,
    pub coalesced: bool,
}

impl Sidecar {
    pub fn new(tl: Timeline) -> Sidecar {
        let mut s = Sidecar {
            creates: Vec::new(),
            used: Vec::new(),
            changes: Vec::new(),
            destroys: FxHashMap::default(),
            tolerance: RAW_TOLERANCE_NS,
            coalesced: false,
        };
        match tl {
            Timeline::Raw(rows) => {
                let mut i = 0;
                while i < rows.len() {
                    let r = rows[i];
                    match r.action {
                        Action::Create => s.creates.push((r.t, r.bytes, r.cat)),
                        Action::Destroy => {
                            s.destroys.insert((r.t, r.bytes.abs()), r.cat);
                        }
                        Action::IncrementVersion => {
                            if let Some(n) = rows.get(i + 1) {
                                if n.action == Action::IncrementVersion && n.t == r.t {
                                    if n.cat != r.cat {
                                        s.changes.push(Change {
                                            t: r.t,
                                            bytes: r.bytes.abs(),
                                            old: r.cat,
                                            new: n.cat,
                                        });
                                    }
                                    i += 1;
                                }
                            }
                        }
                        Action::Preexisting => {}
                    }
                    i += 1;
                }
            }
            Timeline::Coalesced { times_us, rows } => {
                // Only level rises are visible: each is taken as allocations of that category.
                s.coalesced = true;
                s.tolerance = COALESCED_TOLERANCE_NS;
                let mut prev = [0i64; 8];
                for (t, row) in times_us.iter().zip(&rows) {
                    for k in 0..8 {
                        if row[k] > prev[k] {
                            let cat = if k == 7 { None } else { Some(k as u8) };
                            s.creates.push((t * 1000, row[k] - prev[k], cat));
                        }
                    }
                    prev = *row;
                }
            }
        }
        s.creates.sort_by_key(|c| c.0);
        s.changes.sort_by_key(|c| c.t);
        s.used = vec![false; s.creates.len()];
        s
    }

    fn candidates(&self, t: i64, bytes: i64) -> impl Iterator<Item = usize> + '_ {
        let lo = self.creates.partition_point(|c| c.0 < t - self.tolerance);
        // Coalesced times are PyTorch's `int(t_ns / 1000)` in doubles: usually floored, but a
        // fraction near 1 rounds up to the next µs, so both sides stay open.
        let hi = t + self.tolerance;
        (lo..self.creates.len())
            .take_while(move |&i| self.creates[i].0 <= hi)
            .filter(move |&i| self.creates[i].1 == bytes)
    }

    /// Whether some allocation of `bytes` at `t` has a CREATE to match (without using it).
    pub fn has_match(&self, t: i64, bytes: i64) -> bool {
        self.candidates(t, bytes).any(|i| !self.used[i])
    }

    /// The category of the allocation of `bytes` at `t`: the nearest unused CREATE.
    /// Outer None: no match; inner None: PyTorch's Unknown.
    pub fn take(&mut self, t: i64, bytes: i64) -> Option<Option<u8>> {
        let best = self
            .candidates(t, bytes)
            .filter(|&i| !self.used[i])
            .min_by_key(|&i| (self.creates[i].0 - t).abs())?;
        self.used[best] = true;
        Some(self.creates[best].2)
    }

    /// The category a DESTROY of `bytes` at `t` recorded, if any.
    pub fn destroy_cat(&self, t: i64, bytes: i64) -> Option<Option<u8>> {
        self.destroys.get(&(t, bytes)).copied()
    }
}

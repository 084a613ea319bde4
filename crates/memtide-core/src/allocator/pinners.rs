//! The pinners of a fragmented pool: the live blocks that split its free space so that no
//! free run holds the request, each with the free run its release would have made.

use super::state::{BlockState, PoolKey, State};
use crate::trace::human_bytes;
use serde::Serialize;

/// How many pinners a report names.
pub(crate) const SHOWN: usize = 5;

/// One live block splitting free space of the needed pool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pinner {
    pub address: u64,
    pub size: u64,
    /// The largest free run of the pool had this block been free (it and its free
    /// neighbours merged; the pool's largest free block when that is larger).
    pub largest_free_without: u64,
    /// What it is: its name and the user's frame ("" when the file records neither).
    pub what: String,
    /// Where it was allocated (`#N` as shown; None: before the history began).
    pub allocated_at: Option<u64>,
    #[serde(skip)]
    pub allocated_time_us: Option<f64>,
}

impl Pinner {
    /// One line: `1.172 GiB x2 at train.py:33 (allocated at #9): without it the largest free
    /// run would be 4.000 GiB`.
    pub fn text(&self) -> String {
        let what = if self.what.is_empty() {
            format!("block at {:#x}", self.address)
        } else {
            self.what.clone()
        };
        let when = self
            .allocated_at
            .map_or("before the history began".to_string(), |n| {
                format!("at #{n}")
            });
        format!(
            "{} {what} (allocated {when}): without it the largest free run would be {}",
            human_bytes(self.size),
            human_bytes(self.largest_free_without)
        )
    }
}

/// The live blocks of pool `key` in `st` that have free space beside them, largest merged
/// run first (at most [`SHOWN`]); `what` and `allocated_at` are left for the caller.
pub(crate) fn pinners(st: &State, key: &PoolKey) -> Vec<Pinner> {
    let segs: Vec<_> = st
        .segments()
        .into_iter()
        .filter(|s| s.key == *key)
        .collect();
    let largest = segs.iter().map(|s| s.largest_free_block).max().unwrap_or(0);
    let mut out = Vec::new();
    for s in &segs {
        let b = &s.blocks;
        for (i, x) in b.iter().enumerate() {
            if x.state == BlockState::Free {
                continue;
            }
            let free_at = |j: Option<usize>| {
                j.and_then(|j| b.get(j))
                    .filter(|y| y.state == BlockState::Free)
                    .map_or(0, |y| y.size)
            };
            let (before, after) = (free_at(i.checked_sub(1)), free_at(i.checked_add(1)));
            if before == 0 && after == 0 {
                continue;
            }
            out.push(Pinner {
                address: x.address,
                size: x.size,
                largest_free_without: before
                    .saturating_add(x.size)
                    .saturating_add(after)
                    .max(largest),
                what: String::new(),
                allocated_at: None,
                allocated_time_us: None,
            });
        }
    }
    out.sort_by(|a, b| {
        b.largest_free_without
            .cmp(&a.largest_free_without)
            .then(a.address.cmp(&b.address))
    });
    out.truncate(SHOWN);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::rounding::PoolKind;
    use crate::allocator::state::{PoolId, SegMeta};

    const MIB: u64 = 1 << 20;

    /// A 4096 MiB segment: 1200 free, X2 1200 live, 1696 free: X2 pins 4096.
    #[test]
    fn the_block_between_two_free_runs_pins_their_sum() {
        let meta = SegMeta {
            stream: 0,
            pool_id: PoolId::default(),
            kind: PoolKind::Large,
            expandable: false,
        };
        let mut st = State::new();
        st.map(0, 4096 * MIB, meta);
        st.alloc(1200 * MIB, 1200 * MIB);
        let p = pinners(&st, &meta.key());
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].address, p[0].size), (1200 * MIB, 1200 * MIB));
        assert_eq!(p[0].largest_free_without, 4096 * MIB);
    }
}

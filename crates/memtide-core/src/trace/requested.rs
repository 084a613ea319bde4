//! What callers asked for where a storage's size is a larger allocator block: kept as the
//! difference from the block (four bytes a storage, made on the first one that differs), not
//! a hash map entry per allocation (a CUDA snapshot rounds nearly every request, so the map
//! held one entry per block: 71 MB for a 7 M-entry file).

use super::units::AllocId;
use rustc_hash::FxHashMap;

/// The requested bytes of the storages whose size is more than they asked for.
#[derive(Clone, Debug, Default)]
pub struct Requested {
    /// `size − requested` of each storage (0: the size is what was asked for).
    below: Vec<u32>,
    /// Requests the column cannot hold: above the size, or 4 GiB or more below it.
    other: FxHashMap<AllocId, u64>,
}

impl Requested {
    /// Records that storage `id`, of `size` bytes, was asked for as `requested` bytes.
    pub fn set(&mut self, id: AllocId, requested: u64, size: u64) {
        self.other.remove(&id);
        let below = size
            .checked_sub(requested)
            .and_then(|d| u32::try_from(d).ok());
        match below {
            Some(d) => self.put(id, d),
            None => {
                self.put(id, 0);
                self.other.insert(id, requested);
            }
        }
    }

    fn put(&mut self, id: AllocId, below: u32) {
        let i = id.idx();
        if i >= self.below.len() {
            if below == 0 {
                return;
            }
            self.below.resize(i + 1, 0);
        }
        self.below[i] = below;
    }

    /// What storage `id`, now of `size` bytes, asked for; None when nothing was recorded or
    /// the request equals the size.
    pub fn get(&self, id: AllocId, size: u64) -> Option<u64> {
        let r = match self.below.get(id.idx()).copied().filter(|&d| d > 0) {
            Some(d) => size.checked_sub(u64::from(d))?,
            None => *self.other.get(&id)?,
        };
        (r != size).then_some(r)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_request_below_its_block_is_read_back() {
        let mut r = Requested::default();
        r.set(AllocId(3), 1000, 1024);
        assert_eq!(r.get(AllocId(3), 1024), Some(1000));
        assert_eq!(r.get(AllocId(2), 1024), None);
        assert_eq!(r.get(AllocId(9), 1024), None);
    }

    #[test]
    fn requests_the_column_cannot_hold_are_kept_whole() {
        let mut r = Requested::default();
        r.set(AllocId(0), 10, 5 << 32);
        r.set(AllocId(1), 2048, 1024);
        assert_eq!(r.get(AllocId(0), 5 << 32), Some(10));
        assert_eq!(r.get(AllocId(1), 1024), Some(2048));
    }

    #[test]
    fn setting_it_again_replaces_the_old_request() {
        let mut r = Requested::default();
        r.set(AllocId(0), 2048, 1024);
        r.set(AllocId(0), 1000, 1024);
        assert_eq!(r.get(AllocId(0), 1024), Some(1000));
        r.set(AllocId(0), 1024, 1024);
        assert_eq!(r.get(AllocId(0), 1024), None);
    }
}

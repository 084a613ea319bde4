//! Ids already given to byte spans of a file (a stack's frames as written), so a span seen
//! before is one hash lookup instead of a parse and an intern per frame. Bounded: past
//! [`BYTES_MEMO_CAP`] key bytes new spans are no longer kept (they are read the long way).

use rustc_hash::FxHashMap;

/// The most key bytes a [`BytesMemo`] holds.
pub(crate) const BYTES_MEMO_CAP: usize = 16 << 20;

/// Byte spans and the id each was read as.
#[derive(Debug, Default)]
pub(crate) struct BytesMemo {
    by_bytes: FxHashMap<Box<[u8]>, u32>,
    /// Bytes held by the keys.
    held: usize,
}

impl BytesMemo {
    /// `span` reads as `id` (kept while under the cap).
    pub fn insert(&mut self, span: &[u8], id: u32) {
        if self.held + span.len() <= BYTES_MEMO_CAP {
            self.held += span.len();
            self.by_bytes.insert(span.into(), id);
        }
    }

    /// The id `span` was read as, if it was kept.
    pub fn get(&self, span: &[u8]) -> Option<u32> {
        self.by_bytes.get(span).copied()
    }

    /// Forgets every span (what they were read as no longer holds).
    pub fn clear(&mut self) {
        self.by_bytes.clear();
        self.held = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_kept_up_to_the_cap_and_forgotten_on_clear() {
        let mut m = BytesMemo::default();
        m.insert(b"[\"a\"]", 3);
        assert_eq!(m.get(b"[\"a\"]"), Some(3));
        assert_eq!(m.get(b"[\"a\" ]"), None);
        let big = vec![b'x'; BYTES_MEMO_CAP];
        m.insert(&big, 4);
        assert_eq!(m.get(&big), None, "a span past the cap is not kept");
        m.clear();
        assert_eq!(m.get(b"[\"a\"]"), None);
        m.insert(&big, 4);
        assert_eq!(
            m.get(&big),
            Some(4),
            "after a clear the whole cap is free again"
        );
    }
}

//! The change log's packed entries (eight bytes each: one per event of a big snapshot) read
//! back what was logged, and a change past the last position a log can hold is refused with
//! a doubt on the trace rather than kept at a wrong position.

use memtide_core::trace::{
    AllocId, Bytes, Category, Change, EventKind, Seq, StackId, StorageKind, StrId, Trace, Ts,
};
use proptest::prelude::*;

fn storage(t: &mut Trace) -> AllocId {
    t.new_storage(
        Seq(0),
        Bytes(512),
        Category::Unknown,
        StorageKind::Block,
        StrId(0),
        StackId(0),
        0,
    )
}

#[test]
fn a_change_is_eight_bytes() {
    assert_eq!(std::mem::size_of::<Change>(), 8);
}

proptest! {
    #[test]
    fn a_change_reads_back_what_was_logged(at in 0..=Change::LAST_POSITION, id in any::<u32>(), open in any::<bool>()) {
        let c = Change::new(Seq(at), AllocId(id), open);
        prop_assert_eq!((c.at(), c.storage(), c.open()), (Seq(at), AllocId(id), open));
    }
}

#[test]
fn a_change_past_the_last_position_is_not_kept_and_the_trace_says_so() {
    let mut t = Trace::new("cuda:0", "test", "jsonl");
    t.push_event(Ts(0), EventKind::Alloc);
    let id = storage(&mut t);
    t.log(id, Seq(0), true);
    t.log(id, Seq(Change::LAST_POSITION), false);
    assert_eq!(t.changes.len(), 2);
    assert_eq!(t.changes[1].at(), Seq(Change::LAST_POSITION));
    assert_eq!(t.doubtful_warnings().count(), 0);
    let late = storage(&mut t);
    t.log(late, Seq(Change::LAST_POSITION + 1), true);
    t.log(late, Seq(u64::MAX), false);
    assert_eq!(t.changes.len(), 2, "nothing logged past the last position");
    let doubts: Vec<&str> = t.doubtful_warnings().collect();
    assert_eq!(doubts.len(), 1, "{doubts:?}");
    assert!(doubts[0].contains("2,147,483,647"), "{}", doubts[0]);
}

//! "Retained by view": views alone keeping a storage alive after its base tensor was released,
//! flagged only where it is worth an alarm — views much smaller than the storage — and said
//! plainly where the file records no view sizes (docs/concepts.md).

use crate::trace::{human_bytes, AllocId, Band, Bytes, Seq, Trace};

/// Views are "much smaller" than their storage when together they span at most
/// 1/`SMALL_VIEW_DIVISOR` of it (a quarter): three quarters of the bytes are kept for nothing.
pub(crate) const SMALL_VIEW_DIVISOR: u64 = 4;

/// Why a storage whose base tensor is gone is still live, where that deserves a flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retained {
    /// `views` live views spanning `view_bytes` keep all `storage` bytes alive (the alarm).
    SmallView {
        views: usize,
        view_bytes: Bytes,
        storage: Bytes,
    },
    /// Views alone keep the storage alive; the file records the size of not every one of them.
    UnknownSize,
}

/// How `id` is retained at `at`, when only views hold it and that is worth saying: views that
/// together span at most a quarter of the storage, or views of unknown size. None where the
/// base tensor still holds it, where the views cover most of the storage (ordinary sharing:
/// `.grad` aliases, an optimizer's foreach lists), and for parameters, gradients, optimizer
/// state and buffers whose views' sizes are unknown (kept alive on purpose).
pub fn retained(trace: &Trace, id: AllocId, at: Seq) -> Option<Retained> {
    if !trace.retained_by_view(id, at) {
        return None;
    }
    let storage = trace.size(id);
    let mut views = 0usize;
    let mut spanned = Some(0u64);
    for v in trace.holding_views(id, at) {
        views += 1;
        spanned = match (spanned, v.bytes) {
            (Some(sum), Some(b)) => Some(sum.saturating_add(b.0)),
            _ => None,
        };
    }
    match spanned {
        Some(view_bytes) if views > 0 => (view_bytes.saturating_mul(SMALL_VIEW_DIVISOR)
            <= storage.0)
            .then_some(Retained::SmallView {
                views,
                view_bytes: Bytes(view_bytes),
                storage,
            }),
        _ => (trace.category(id).band() != Band::Persistent).then_some(Retained::UnknownSize),
    }
}

impl Retained {
    /// The bytes the holding views span; None when the file does not record them.
    pub fn view_bytes(self) -> Option<Bytes> {
        match self {
            Retained::SmallView { view_bytes, .. } => Some(view_bytes),
            Retained::UnknownSize => None,
        }
    }

    /// The flag in words: "a 4.000 KiB view keeps 1.000 GiB alive", "2 views (8.000 KiB) keep
    /// 1.000 GiB alive", "retained by a view (size unknown)".
    pub fn words(self) -> String {
        match self {
            Retained::SmallView {
                views: 1,
                view_bytes,
                storage,
            } => format!(
                "a {} view keeps {} alive",
                human_bytes(view_bytes.0),
                human_bytes(storage.0)
            ),
            Retained::SmallView {
                views,
                view_bytes,
                storage,
            } => format!(
                "{views} views ({}) keep {} alive",
                human_bytes(view_bytes.0),
                human_bytes(storage.0)
            ),
            Retained::UnknownSize => "retained by a view (size unknown)".to_string(),
        }
    }

    /// True for the alarm (a view much smaller than its storage), false where the size is
    /// unknown.
    pub fn is_alarm(self) -> bool {
        matches!(self, Retained::SmallView { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::jsonl::{JsonlDecoder, JsonlOptions};

    fn trace(text: &str) -> Trace {
        let mut trace = Trace::new("cuda:0", "t.jsonl", "jsonl");
        let mut dec = JsonlDecoder::new(JsonlOptions::default());
        dec.feed(&mut trace, text.as_bytes())
            .expect("fixture reads");
        dec.finish(&mut trace).expect("fixture ends");
        trace
    }

    const HEAD: &str = "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n";

    fn retained_after(lines: &str, id: u32, at: u64) -> Option<Retained> {
        let t = trace(&format!("{HEAD}{lines}"));
        retained(&t, AllocId(id), Seq(at))
    }

    #[test]
    fn a_small_view_is_the_alarm_with_its_size() {
        // 1 GiB storage, a 4 KiB view, the base released: event 2 is the release.
        let r = retained_after(
            "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":1073741824,\"cat\":\"activation\"}\n\
             {\"t\":2,\"op\":\"view\",\"id\":2,\"of\":1,\"size\":4096}\n\
             {\"t\":3,\"op\":\"release\",\"id\":1}\n",
            0,
            2,
        );
        assert_eq!(
            r,
            Some(Retained::SmallView {
                views: 1,
                view_bytes: Bytes(4096),
                storage: Bytes(1 << 30),
            })
        );
        let r = r.expect("flagged");
        assert_eq!(r.words(), "a 4.000 KiB view keeps 1.000 GiB alive");
        assert!(r.is_alarm());
    }

    #[test]
    fn a_view_spanning_most_of_the_storage_is_ordinary_sharing() {
        // A `.grad`-style alias of the whole storage: no flag, whatever the band.
        for cat in ["activation", "grad"] {
            let r = retained_after(
                &format!(
                    "{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":4096,\"cat\":\"{cat}\"}}\n\
                     {{\"t\":2,\"op\":\"view\",\"id\":2,\"of\":1,\"size\":4096}}\n\
                     {{\"t\":3,\"op\":\"release\",\"id\":1}}\n"
                ),
                0,
                2,
            );
            assert_eq!(r, None, "{cat}");
        }
        // Just over a quarter: not "much smaller".
        let r = retained_after(
            "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":4096}\n\
             {\"t\":2,\"op\":\"view\",\"id\":2,\"of\":1,\"size\":1025}\n\
             {\"t\":3,\"op\":\"release\",\"id\":1}\n",
            0,
            2,
        );
        assert_eq!(r, None);
    }

    #[test]
    fn two_small_views_count_together() {
        let r = retained_after(
            "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":4096,\"cat\":\"activation\"}\n\
             {\"t\":2,\"op\":\"view\",\"id\":2,\"of\":1,\"size\":512}\n\
             {\"t\":3,\"op\":\"view\",\"id\":3,\"of\":1,\"size\":512}\n\
             {\"t\":4,\"op\":\"release\",\"id\":1}\n",
            0,
            3,
        )
        .expect("flagged");
        assert_eq!(r.view_bytes(), Some(Bytes(1024)));
        assert_eq!(r.words(), "2 views (1.000 KiB) keep 4.000 KiB alive");
    }

    #[test]
    fn unknown_sizes_are_said_so_except_for_persistent_storages() {
        let lines = |cat: &str| {
            format!(
                "{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":4096,\"cat\":\"{cat}\"}}\n\
                 {{\"t\":2,\"op\":\"view\",\"id\":2,\"of\":1}}\n\
                 {{\"t\":3,\"op\":\"release\",\"id\":1}}\n"
            )
        };
        let r = retained_after(&lines("activation"), 0, 2).expect("flagged");
        assert_eq!(r, Retained::UnknownSize);
        assert_eq!(r.words(), "retained by a view (size unknown)");
        assert!(!r.is_alarm());
        // An optimizer's foreach views of a gradient: never flagged.
        assert_eq!(retained_after(&lines("grad"), 0, 2), None);
        assert_eq!(retained_after(&lines("param"), 0, 2), None);
    }

    #[test]
    fn a_live_base_is_no_retention() {
        let r = retained_after(
            "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":4096}\n\
             {\"t\":2,\"op\":\"view\",\"id\":2,\"of\":1,\"size\":8}\n",
            0,
            1,
        );
        assert_eq!(r, None);
    }
}

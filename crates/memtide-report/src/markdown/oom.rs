//! The Markdown report's OOM section: each out-of-memory event with its figures
//! ("unavailable" where the source lacks them), the verdict, its reasoning, the advice, the
//! pinners and the fixes checked by replay; then the allocator's state at the end, when the
//! file records it, and the bounds of a history that starts late.

use super::{cell, time_text};
use memtide_core::analysis::Summary;
use memtide_core::trace::human_bytes;
use std::fmt::Write as _;

pub fn ooms(o: &mut String, s: &Summary) {
    for x in &s.ooms {
        let t = x
            .time_us
            .map(|t| format!(" · {}", time_text(s, t)))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "**Out of memory** at event #{}{t} · {}: verdict **{}**\n",
            x.index,
            cell(&x.device),
            x.verdict.name()
        );
        let _ = writeln!(o, "| figure | value |\n|---|---|");
        let verdict = [("verdict", x.verdict.name().to_string())];
        for (k, v) in x.figures().into_iter().chain(verdict).chain(x.details()) {
            let _ = writeln!(o, "| {k} | {} |", cell(&v));
        }
        let _ = writeln!(o);
    }
    if let Some(e) = &s.allocator_at_end {
        let _ = writeln!(
            o,
            "Allocator at the end: {} segments · reserved {} · allocated {} · free in reserve {} · largest free block {}.\n",
            e.segments,
            human_bytes(e.reserved),
            human_bytes(e.allocated),
            human_bytes(e.free_in_reserve),
            human_bytes(e.largest_free_block)
        );
    }
    if let Some(b) = &s.history_bounds {
        let _ = writeln!(o, "History bounds: {}.\n", cell(&b.text));
    }
}

//! `memtide lab`: the cache lab, headless (`--json`, `--text`) or as a screen.

use super::LabArgs;
use anyhow::Result;
use memtide_core::lab::{predict, Lab, MAX_REQUESTS};
use serde_json::json;
use std::process::ExitCode;

/// Runs `requests` requests of a fresh lab.
pub fn simulate(a: &LabArgs) -> Lab {
    let mut lab = Lab::new(a.capacity as usize, a.stride);
    for _ in 0..a.requests.min(MAX_REQUESTS) {
        lab.step();
    }
    lab
}

pub fn run(a: &LabArgs) -> Result<ExitCode> {
    if a.json {
        let lab = simulate(a);
        let p = predict(lab.capacity(), lab.stride());
        let v = json!({
            "model": "fully associative LRU cache of toy entries (not bytes, not GPU memory)",
            "capacity": lab.capacity(),
            "stride": lab.stride(),
            "requests": lab.issued(),
            "prediction": {
                "cycle_length": p.cycle,
                "misses_first_16": p.misses_first16,
            },
            "trace": lab.history().iter().map(|r| json!({
                "i": r.i, "addr": r.addr, "hit": r.hit, "evicted": r.evicted,
            })).collect::<Vec<_>>(),
            "totals": {
                "hits": lab.hits(),
                "misses": lab.misses(),
                "hit_rate": lab.hit_rate(),
            },
            "resident": lab.slots(),
        });
        crate::out_json!("{}", crate::safe_text::json_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    if a.text || !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        let lab = simulate(a);
        let p = predict(lab.capacity(), lab.stride());
        crate::outln!(
            "cache lab: C = {} entries, s = {} (toy entries, not bytes or GPU memory)",
            lab.capacity(),
            lab.stride()
        );
        crate::outln!(
            "prediction: the stride visits {} distinct addresses per cycle → {} misses in the first 16 requests",
            p.cycle, p.misses_first16
        );
        for r in lab.history() {
            let ev = r
                .evicted
                .map(|e| format!(" (evicts {e})"))
                .unwrap_or_default();
            crate::outln!(
                "  #{:<4} addr {:>2}  {}{ev}",
                r.i,
                r.addr,
                if r.hit { "hit" } else { "MISS" }
            );
        }
        crate::outln!(
            "totals: {} hits, {} misses, hit rate {}",
            lab.hits(),
            lab.misses(),
            lab.hit_rate()
                .map_or("-".into(), |h| format!("{:.1}%", h * 100.0))
        );
        return Ok(ExitCode::SUCCESS);
    }
    super::explore::lab(a)
}

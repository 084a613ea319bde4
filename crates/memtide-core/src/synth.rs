//! Synthetic memtide JSONL traces of a realistic shape, for benchmarks and load tests
//! (not for correctness tests, which use hand-computed fixtures and oracles).

use std::fmt::Write as _;

/// A xorshift generator of `seed` (deterministic, not for anything but test shapes).
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut rng = seed | 1;
    move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    }
}

/// Writes `events` JSONL v1 event lines (plus a header) of a training-like workload: ~500
/// distinct stacks, a slowly varying live set of a few hundred to a few thousand storages,
/// step marks every 10,000 events. Deterministic for a given `seed`.
pub fn jsonl(events: u64, seed: u64, out: &mut impl std::io::Write) -> std::io::Result<()> {
    let mut next = xorshift(seed);
    let cats = [
        "activation",
        "temp",
        "param",
        "grad",
        "optimizer",
        "workspace",
    ];
    let stacks: Vec<String> = (0..500)
        .map(|i| {
            format!(
                "[\"model.py:{} forward_{}\",\"train.py:{} train_step\"]",
                10 + i % 97,
                i,
                40 + i % 7
            )
        })
        .collect();
    writeln!(
        out,
        "{{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\",\"capacity\":85899345920}}"
    )?;
    let mut live: Vec<u64> = Vec::new();
    let mut id = 0u64;
    let mut t = 0u64;
    let mut line = String::with_capacity(256);
    let mut target = 1000usize;
    for e in 0..events {
        line.clear();
        t += next() % 3;
        if e % 10_000 == 0 {
            let _ = write!(
                line,
                "{{\"t\":{t},\"op\":\"mark\",\"name\":\"step {}\",\"kind\":\"step\"}}",
                e / 10_000
            );
        } else {
            if e % 50_000 == 0 {
                target = 200 + (next() % 4000) as usize;
            }
            let alloc = live.is_empty() || (live.len() < target && next().is_multiple_of(2));
            if alloc {
                id += 1;
                let size = 512 * (1 + next() % 65536);
                let r = next();
                let cat = cats[(r % cats.len() as u64) as usize];
                let st = &stacks[((r >> 8) % stacks.len() as u64) as usize];
                let _ = write!(
                    line,
                    "{{\"t\":{t},\"op\":\"alloc\",\"id\":{id},\"size\":{size},\"cat\":\"{cat}\",\"name\":\"tensor_{}\",\"stack\":{st}}}",
                    r % 997
                );
                live.push(id);
            } else {
                let k = (next() % live.len() as u64) as usize;
                let victim = live.swap_remove(k);
                let _ = write!(line, "{{\"t\":{t},\"op\":\"free\",\"id\":{victim}}}");
            }
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

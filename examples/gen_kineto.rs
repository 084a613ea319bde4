//! Writes a synthetic Kineto trace of the real shape (pretty-printed like Kineto, `cpu_op` and
//! `python_function` spans with their args, `[memory]` instants, flow events, steps) for the
//! ingest benchmark. Not committed: generate it into target/ or /tmp.
//!
//! `cargo run --release --example gen_kineto -- OUT.json SIZE_MB [old]`
//!
//! `old` writes the shape of older PyTorch (2021): `[memory]` events with only `Bytes`,
//! `Device Type` and `Device Id` (no `Addr`, no totals), on cuda:0.

use std::fs::File;
use std::io::{BufWriter, Write};

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

const OPS: [&str; 8] = [
    "aten::empty",
    "aten::empty_strided",
    "aten::mm",
    "aten::add",
    "aten::mul",
    "aten::clamp_min",
    "aten::_to_copy",
    "aten::native_layer_norm",
];
const PY: [&str; 6] = [
    "torch/nn/modules/module.py(1775): _call_impl",
    "torch/nn/modules/linear.py(134): forward",
    "torch/nn/functional.py(2910): layer_norm",
    "train.py(88): train_step",
    "<built-in method add of Tensor object at 0x7f1ea367e640>",
    "torch/optim/adamw.py(431): _single_tensor_adamw",
];

struct Alloc {
    ts: u64, // ns
    addr: u64,
    bytes: u64,
    free_ts: u64,
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let out = args
        .get(1)
        .cloned()
        .unwrap_or("target/kineto-big.json".into());
    let size_mb: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1100);
    let old = args.get(3).is_some_and(|s| s == "old");
    let target = size_mb * 1_000_000;
    let pid = 27247;
    let tid = 27247;
    let base: u64 = 5_077_464_335_096_375; // ns, relative to baseTimeNanoseconds
    let mut rng = Rng(42);
    let mut w = BufWriter::with_capacity(1 << 20, File::create(&out)?);
    write!(
        w,
        "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n  \"with_stack\": 1,\n  \"profile_memory\": 1,\n  \"record_shapes\": 1,\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1790857026000000000,\n  \"traceEvents\": ["
    )?;
    let mut written: u64 = 300;
    let mut first = true;
    let mut sep = |w: &mut BufWriter<File>| -> std::io::Result<()> {
        if first {
            first = false;
            Ok(())
        } else {
            w.write_all(b",")
        }
    };
    // Each op: a python frame enclosing a cpu_op enclosing one allocation; a free of an older
    // allocation follows. Spans are written first (as Kineto does), memory events after.
    let mut allocs: Vec<Alloc> = Vec::new();
    let mut live: Vec<usize> = Vec::new();
    let mut t = base;
    let mut ev_idx = 0u64;
    let mut step = 0u64;
    let mut ops_in_step = 0u64;
    let mut buf = Vec::with_capacity(4096);
    while written < target * 82 / 100 {
        if ops_in_step == 0 {
            let dur = 2_000_000_000u64;
            buf.clear();
            write!(
                buf,
                "\n  {{\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{step}\", \"pid\": {pid}, \"tid\": {tid},\n    \"ts\": {}.{:03}, \"dur\": {}.{:03},\n    \"args\": {{\n      \"External id\": {ev_idx},\"Record function id\": 0, \"Ev Idx\": {ev_idx}\n    }}\n  }}",
                t / 1000,
                t % 1000,
                dur / 1000,
                dur % 1000
            )?;
            sep(&mut w)?;
            w.write_all(&buf)?;
            written += buf.len() as u64 + 1;
            ev_idx += 1;
        }
        let py_dur = 20_000 + rng.below(20_000);
        let py = PY[rng.below(PY.len() as u64) as usize];
        let op = OPS[rng.below(OPS.len() as u64) as usize];
        let (d0, d1) = (rng.below(512) + 1, rng.below(4096) + 1);
        buf.clear();
        write!(
            buf,
            "\n  {{\n    \"ph\": \"X\",\n    \"cat\": \"python_function\",\n    \"name\": \"{py}\",\n    \"pid\": {pid},\n    \"tid\": {tid},\n    \"ts\": {}.{:03},\n    \"dur\": {}.{:03}\n    ,\n    \"args\": {{\n      \"Python parent id\": {}, \"Python id\": {}, \"Ev Idx\": {ev_idx}\n    }}\n  }}",
            t / 1000,
            t % 1000,
            py_dur / 1000,
            py_dur % 1000,
            ev_idx / 2,
            ev_idx
        )?;
        sep(&mut w)?;
        w.write_all(&buf)?;
        written += buf.len() as u64 + 1;
        ev_idx += 1;
        // A leaf Python call that allocates nothing (most python_function events are).
        let leaf_t = t + 200;
        buf.clear();
        write!(
            buf,
            "\n  {{\n    \"ph\": \"X\",\n    \"cat\": \"python_function\",\n    \"name\": \"<built-in function isinstance>\",\n    \"pid\": {pid},\n    \"tid\": {tid},\n    \"ts\": {}.{:03},\n    \"dur\": 0.412\n    ,\n    \"args\": {{\n      \"CallFrom\": \"torch/nn/modules/module.py:1963\", \"Python parent id\": {}, \"Python id\": {}, \"Ev Idx\": {ev_idx}\n    }}\n  }}",
            leaf_t / 1000,
            leaf_t % 1000,
            ev_idx - 1,
            ev_idx
        )?;
        sep(&mut w)?;
        w.write_all(&buf)?;
        written += buf.len() as u64 + 1;
        ev_idx += 1;
        let op_t = t + 1_000;
        let op_dur = py_dur - 2_000;
        buf.clear();
        write!(
            buf,
            "\n  {{\n    \"ph\": \"X\",\n    \"cat\": \"cpu_op\",\n    \"name\": \"{op}\",\n    \"pid\": {pid},\n    \"tid\": {tid},\n    \"ts\": {}.{:03},\n    \"dur\": {}.{:03}\n    ,\n    \"args\": {{\n      \"External id\": {ev_idx},\"Sequence number\": {}, \"Fwd thread id\": 0, \"Record function id\": 0, \"Concrete Inputs\": [\"\", \"\", \"\"], \"Input type\": [\"float\", \"float\", \"Scalar\"], \"Input Strides\": [[{d1}, 1], [{d1}, 1], []], \"Input Dims\": [[{d0}, {d1}], [{d0}, {d1}], []], \"Ev Idx\": {ev_idx}\n    }}\n  }}",
            op_t / 1000,
            op_t % 1000,
            op_dur / 1000,
            op_dur % 1000,
            ev_idx / 3
        )?;
        sep(&mut w)?;
        w.write_all(&buf)?;
        written += buf.len() as u64 + 1;
        ev_idx += 1;
        // One allocation inside the op; a free of a random live one (keeps ~300 live).
        let bytes = 4 * d0 * d1;
        let at = op_t + 500;
        let i = allocs.len();
        allocs.push(Alloc {
            ts: at,
            addr: 0x7f00_0000_0000 + (i as u64) * 4096,
            bytes,
            free_ts: u64::MAX,
        });
        live.push(i);
        if live.len() > 300 || (live.len() > 1 && rng.below(4) == 0) {
            let k = rng.below(live.len() as u64 - 1) as usize;
            let j = live.swap_remove(k);
            allocs[j].free_ts = op_t + op_dur - 300;
        }
        written += 2 * 330; // the memory events written below
        t += py_dur + 500;
        ops_in_step = (ops_in_step + 1) % 20_000;
        if ops_in_step == 0 {
            step += 1;
        }
    }
    // [memory] events, in time order.
    let mut mem: Vec<(u64, i64, u64)> = Vec::with_capacity(allocs.len() * 2);
    for a in &allocs {
        mem.push((a.ts, a.bytes as i64, a.addr));
        if a.free_ts != u64::MAX {
            mem.push((a.free_ts, -(a.bytes as i64), a.addr));
        }
    }
    mem.sort_by_key(|m| m.0);
    let mut total: i64 = 0;
    for (ts, bytes, addr) in mem {
        total += bytes;
        buf.clear();
        if old {
            write!(
                buf,
                "\n  {{\n    \"ph\": \"i\", \"s\": \"t\", \"name\": \"[memory]\",\n    \"pid\": {pid}, \"tid\": {tid},\n    \"ts\": {},\n    \"args\": {{\n      \"Device Type\": 1, \"Device Id\": 0, \"Bytes\": {bytes}\n    }}\n  }}",
                ts / 1000
            )?;
        } else {
            write!(
                buf,
                "\n  {{\n    \"ph\": \"i\",\n    \n    \"cat\": \"cpu_instant_event\",\n    \"s\": \"t\",\n    \"name\": \"[memory]\",\n    \"pid\": {pid},\n    \"tid\": {tid},\n    \"ts\": {}.{:03}\n    ,\n    \"args\": {{\n      \"Total Reserved\": 0, \"Total Allocated\": {total}, \"Bytes\": {bytes}, \"Device Id\": -1, \"Device Type\": 0, \"Addr\": {addr}, \"finished\": false, \"Ev Idx\": {ev_idx}\n    }}\n  }}",
                ts / 1000,
                ts % 1000
            )?;
        }
        sep(&mut w)?;
        w.write_all(&buf)?;
        ev_idx += 1;
    }
    write!(w, "\n  ],\"traceName\": \"synthetic.json\" }}\n")?;
    w.flush()?;
    eprintln!("wrote {out}");
    Ok(())
}

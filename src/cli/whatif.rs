//! `memtide whatif FILE [--alloc-conf CONF]... [--capacity SIZE]`: replays the trace's
//! allocations and frees through a model of PyTorch's caching allocator under the file's own
//! settings and each `--alloc-conf`, and prints reserved peak, allocated peak, segments,
//! fragmentation at the reserved peak and any OOM side by side with what the file recorded
//! (`memtide_core::allocator::sim`).

use super::WhatifArgs;
use anyhow::Result;
use std::process::ExitCode;

pub fn run(a: &WhatifArgs) -> Result<ExitCode> {
    let r = memtide_report::whatif::replay(
        &a.file,
        &(&a.input).into(),
        &a.alloc_conf,
        a.capacity.as_deref(),
        &mut super::load::say,
    )?;
    if a.json {
        crate::out_json!("{}", crate::safe_text::json_pretty(&r.json()?)?);
    } else {
        crate::outln!("{}", r.text().trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

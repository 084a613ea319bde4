//! `memtide oom MESSAGE [--json]`: PyTorch's OOM message alone explained by the report layer
//! (`memtide_report::oom_message`), where no trace was kept.

use super::OomArgs;
use anyhow::Result;
use std::process::ExitCode;

pub fn run(a: &OomArgs) -> Result<ExitCode> {
    let r = memtide_report::oom_message::explain_message(&a.file)?;
    if a.json {
        crate::out_json!(
            "{}",
            crate::safe_text::json_pretty(&serde_json::to_value(&r)?)?
        );
    } else {
        crate::outln!("{}", r.text().trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

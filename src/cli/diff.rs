//! `memtide diff A B`: two runs compared ([`memtide_report::compare`]), printed as text,
//! `--json` or `--markdown`; `--require-parity` turns the fair comparison's verdict into the
//! exit code. On a terminal without an output flag, the explorer's diff page.

use super::DiffArgs;
use anyhow::Result;
use std::process::ExitCode;

pub fn run(a: &DiffArgs) -> Result<ExitCode> {
    if !a.json
        && !a.markdown
        && !a.require_parity
        && std::io::IsTerminal::is_terminal(&std::io::stdout())
    {
        return super::explore::diff(&a.a, &a.b, &a.input);
    }
    let c =
        memtide_report::compare::compare(&a.a, &a.b, &(&a.input).into(), &mut super::load::say)?;
    if a.json {
        crate::out_json!("{}", crate::safe_text::json_pretty(&c.json())?);
    } else if a.markdown {
        crate::outln!("{}", c.markdown().trim_end_matches('\n'));
    } else {
        crate::outln!("{}", c.text().trim_end_matches('\n'));
    }
    Ok(parity_exit(a, &c.f))
}

/// `--require-parity`: exit 1 when the runs did different work, 2 when the files cannot
/// tell (a gate that could not check fails too); said on stderr either way.
fn parity_exit(a: &DiffArgs, f: &memtide_core::analysis::Fair) -> ExitCode {
    use memtide_core::analysis::Verdict;
    if !a.require_parity {
        return ExitCode::SUCCESS;
    }
    match f.parity.verdict {
        Verdict::DifferentWork => {
            crate::errln!("memtide: parity required: {}", f.parity.words);
            ExitCode::from(1)
        }
        Verdict::CannotTell => {
            crate::errln!(
                "memtide: parity required but not checkable: {} (exit 2: the gate could not check)",
                f.parity.words
            );
            ExitCode::from(2)
        }
        Verdict::SameWork => ExitCode::SUCCESS,
    }
}

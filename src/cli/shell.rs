//! Shell habits: completion scripts (clap_complete) and the man page (clap_mangen), both
//! generated from the same argument definitions the parser uses.

use super::Cli;
use anyhow::Context;
use clap::{Args, CommandFactory, ValueEnum};
use std::io::Write;
use std::process::ExitCode;

/// The shells `memtide completions` writes a script for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// `memtide completions SHELL`: the completion script on stdout.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    use clap_complete::Shell as S;
    let shell = match args.shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
        Shell::Elvish => S::Elvish,
        Shell::Powershell => S::PowerShell,
    };
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "memtide", &mut buf);
    write_stdout(&buf)
}

/// `memtide man`: the man page (roff) on stdout: `memtide man > memtide.1`.
pub fn man() -> anyhow::Result<ExitCode> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut buf)
        .context("rendering the man page")?;
    write_stdout(&buf)
}

/// Writes generated text to stdout; a closed pipe (`| head`) is not an error.
fn write_stdout(buf: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match out.write_all(buf).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(ExitCode::SUCCESS),
    }
}

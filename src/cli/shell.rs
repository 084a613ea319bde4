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
    let page = String::from_utf8(buf).context("rendering the man page: not UTF-8")?;
    write_stdout(commands_without_pages(&page).as_bytes())
}

/// Where the man page sends a reader for a command's options.
const OPTIONS_OF_A_COMMAND: &str =
    ".PP\nEach command's options: \\fBmemtide\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR\n";

/// clap_mangen lists each subcommand as a page of its own (`memtide-NAME` in section 1); only
/// `memtide(1)` is generated, so the section becomes COMMANDS, each entry `memtide NAME` in
/// bold, and it ends by saying where a command's options are.
fn commands_without_pages(page: &str) -> String {
    let mut out = String::with_capacity(page.len() + OPTIONS_OF_A_COMMAND.len());
    let mut in_commands = false;
    for line in page.lines() {
        if line.starts_with(".SH ") {
            if in_commands {
                out.push_str(OPTIONS_OF_A_COMMAND);
            }
            in_commands = line == ".SH SUBCOMMANDS";
            if in_commands {
                out.push_str(".SH COMMANDS\n");
                continue;
            }
        }
        let page_name = line
            .strip_prefix("memtide\\-")
            .and_then(|rest| rest.strip_suffix("(1)"))
            .filter(|_| in_commands);
        match page_name {
            Some(name) => out.push_str(&format!("\\fBmemtide {name}\\fR\n")),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if in_commands {
        out.push_str(OPTIONS_OF_A_COMMAND);
    }
    out
}

/// Writes generated text to stdout; a closed pipe (`| head`) is not an error.
fn write_stdout(buf: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match out.write_all(buf).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(ExitCode::SUCCESS),
    }
}

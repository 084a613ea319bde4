//! A first argument that is neither a file nor a command, but close to a command's name
//! (`memtide sumary F`): refused with "did you mean `summary`?" before any screen opens.

use clap::CommandFactory;
use std::path::Path;

/// The command `word` most likely misspells, when it is close to one.
pub fn did_you_mean(word: &str) -> Option<String> {
    let names: Vec<String> = super::Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect();
    names
        .into_iter()
        .map(|n| (strsim::damerau_levenshtein(word, &n), n))
        .filter(|(d, n)| *d <= 2.min(n.len() / 2) || (word.len() >= 3 && n.starts_with(word)))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// An error when the explorer's first file does not exist: "did you mean" when it names a
/// command misspelled, else "no such file" (unless `following`: a followed file may not be
/// written yet).
pub fn check_first_file(files: &[std::path::PathBuf], following: bool) -> anyhow::Result<()> {
    let Some(first) = files.first() else {
        return Ok(());
    };
    if Path::new(first).exists() {
        return Ok(());
    }
    let word = first.to_string_lossy();
    if let Some(cmd) = did_you_mean(&word) {
        anyhow::bail!(
            "'{}' is neither a file nor a command; did you mean `memtide {cmd}`? (`memtide --help` lists the commands)",
            crate::safe_text::one_line(&word)
        );
    }
    if !following {
        anyhow::bail!(
            "cannot open {}: no such file or directory",
            crate::safe_text::one_line(&word)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[test]
    fn close_words_name_their_command_and_others_none() {
        assert_eq!(did_you_mean("sumary").as_deref(), Some("summary"));
        assert_eq!(did_you_mean("summray").as_deref(), Some("summary"));
        assert_eq!(did_you_mean("chek").as_deref(), Some("check"));
        assert_eq!(did_you_mean("whatfi").as_deref(), Some("whatif"));
        assert_eq!(did_you_mean("plto").as_deref(), Some("plot"));
        assert_eq!(did_you_mean("sum").as_deref(), Some("summary"));
        assert_eq!(did_you_mean("train.pickle"), None);
        assert_eq!(did_you_mean("x"), None);
        assert_eq!(did_you_mean("run3.json"), None);
    }
}

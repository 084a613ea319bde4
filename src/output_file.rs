//! Files memtide writes (reports): written to a temporary file beside the target and renamed
//! over it, so a reader never sees half a file, and never written over one of the inputs.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::Path;

/// Whether `a` and `b` name the same existing file (hard links and symlinks included).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => same_meta(&x, &y),
        _ => false,
    }
}

#[cfg(unix)]
fn same_meta(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_meta(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.len() == b.len() && a.modified().ok() == b.modified().ok()
}

/// Writes `bytes` to `path` atomically (temporary file in the same directory, then rename);
/// refuses when `path` is one of `inputs`.
pub fn write_atomically(path: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<()> {
    if let Some(i) = inputs.iter().find(|i| same_file(i, path)) {
        bail!(
            "{} is the input {}: memtide never writes over what it reads; choose another file",
            path.display(),
            i.display()
        );
    }
    if path.exists() && !path.is_file() {
        bail!("{} exists and is not a regular file", path.display());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let tmp = dir.join(format!(".{name}.memtide-{}.tmp", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

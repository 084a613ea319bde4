//! Every file memtide writes (pictures, reports, replays, the explorer's exports) goes through
//! here, so that an output is never one of the run's inputs (compared by file identity: the
//! same file by another name, a hard link or a symlink is refused before anything is opened
//! for writing), never lands in a file someone planted (the temporary file is created
//! exclusively, under an unpredictable name), never replaces a symlink or a special file, and
//! an existing file keeps its permissions and, where the process may, its owner.
//!
//! - `-` is standard output.
//! - A regular file (new, or existing: the one a symlink at the path points to, in that
//!   file's own directory) is replaced atomically: written to a temporary file beside it,
//!   synced, renamed over it, so a reader never sees half a file ([`write_atomically`]).
//! - A character device, FIFO or socket (`/dev/null`), and an open descriptor
//!   (`/dev/stdout`, `/proc/self/fd/N`, `/dev/fd/N`) are written in place.
//! - A symlink to nothing and a directory are refused.
//!
//! [`open_stream`] opens an output that is written progressively (`replay`): the same checks,
//! but no temporary file (a follower reads it as it grows).
//!
//! [`append`] adds to the end of a file instead (`check --report-append`, and `--report` on
//! `$GITHUB_STEP_SUMMARY`): the same checks, one `O_APPEND` write, never through a symlink
//! swapped in after the checks (the file opened must be the file checked).

use anyhow::{bail, Context, Result};
use std::fs::{File, Metadata, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The output path that means standard output.
pub const STDOUT: &str = "-";

/// Whether `path` is `-` (standard output).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == STDOUT
}

/// `path` for messages: `standard output` for `-`.
pub fn shown(path: &Path) -> String {
    if is_stdout(path) {
        "standard output".into()
    } else {
        path.display().to_string()
    }
}

/// Whether `a` and `b` name the same existing file (hard links and symlinks included).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => same_meta(&x, &y),
        _ => false,
    }
}

#[cfg(unix)]
fn same_meta(a: &Metadata, b: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_meta(a: &Metadata, b: &Metadata) -> bool {
    a.len() == b.len() && a.modified().ok() == b.modified().ok()
}

/// Where the bytes go once the path is looked at.
#[derive(Debug)]
enum Target {
    Stdout,
    /// A regular file at this path (symlinks resolved), with its metadata when it exists.
    Regular {
        path: PathBuf,
        existing: Option<Metadata>,
    },
    /// A device, FIFO, socket or open descriptor: written in place through the given path.
    InPlace(PathBuf),
}

/// Refuses `path` when it is one of `inputs` (by identity: device and inode).
pub fn refuse_inputs(path: &Path, inputs: &[&Path]) -> Result<()> {
    let Ok(out) = std::fs::metadata(path) else {
        return Ok(()); // nothing there yet (or a dangling link, refused when resolved)
    };
    // Only a file someone could lose: /dev/null "is" no input even when one reads it.
    if !out.is_file() {
        return Ok(());
    }
    for input in inputs {
        if std::fs::metadata(input).is_ok_and(|m| same_meta(&m, &out)) {
            bail!(
                "{} is the input {}: memtide never overwrites what it reads; choose another file",
                path.display(),
                input.display()
            );
        }
    }
    Ok(())
}

/// Whether `path` is standard output, or an existing device, FIFO, socket or open descriptor
/// (`/dev/null`, `/dev/stdout`): written in place, with no name to take a format from.
pub fn is_special(path: &Path) -> bool {
    is_stdout(path)
        || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
        || (std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
            && is_descriptor(path))
}

/// Whether following `path`'s symlinks passes through an open descriptor (`/proc/…/fd/N`,
/// `/dev/fd/N`, `/dev/stdout`): such a file is written in place, never replaced.
fn is_descriptor(path: &Path) -> bool {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        if p.starts_with("/proc") || p.starts_with("/dev/fd") {
            return true;
        }
        let Ok(next) = std::fs::read_link(&p) else {
            return false;
        };
        p = match p.parent() {
            Some(dir) if next.is_relative() => dir.join(next),
            _ => next,
        };
    }
    false
}

/// Checks `path` against `inputs` and finds what writing it means.
fn resolve(path: &Path, inputs: &[&Path]) -> Result<Target> {
    if is_stdout(path) {
        return Ok(Target::Stdout);
    }
    refuse_inputs(path, inputs)?;
    let link = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Target::Regular {
                path: path.to_path_buf(),
                existing: None,
            })
        }
        Err(e) => return Err(e).with_context(|| format!("cannot write {}", path.display())),
        Ok(m) => m,
    };
    if !link.file_type().is_symlink() {
        return match link {
            m if m.is_dir() => bail!("{} is a directory; give a file name", path.display()),
            m if m.is_file() => Ok(Target::Regular {
                path: path.to_path_buf(),
                existing: Some(m),
            }),
            _ => Ok(Target::InPlace(path.to_path_buf())),
        };
    }
    let Ok(meta) = std::fs::metadata(path) else {
        bail!(
            "{} is a symbolic link to nothing: memtide does not create a file through a dangling link (remove the link, or give the path it should point to)",
            path.display()
        );
    };
    if meta.is_dir() {
        bail!(
            "{} is a link to a directory; give a file name",
            path.display()
        );
    }
    if !meta.is_file() || is_descriptor(path) {
        return Ok(Target::InPlace(path.to_path_buf()));
    }
    // The file the link points to is replaced in its own directory; the link stays.
    match std::fs::canonicalize(path) {
        Ok(real) if std::fs::metadata(&real).is_ok_and(|m| same_meta(&m, &meta)) => {
            Ok(Target::Regular {
                path: real,
                existing: Some(meta),
            })
        }
        _ => Ok(Target::InPlace(path.to_path_buf())),
    }
}

/// Writes `bytes` to `path` (see the module notes: `-`, regular files atomically, special
/// files in place); refuses when `path` is one of `inputs`.
pub fn write_atomically(path: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<()> {
    write_to(path, bytes, inputs, replace, "cannot write")
}

/// How a regular file is written: replaced, or appended to.
type WriteRegular = fn(&Path, &[u8], Option<&Metadata>) -> std::io::Result<()>;

/// Writes `bytes` where `path` resolves to: standard output, a special file in place, or a
/// regular file by `regular` (`failed` starts the error).
fn write_to(
    path: &Path,
    bytes: &[u8],
    inputs: &[&Path],
    regular: WriteRegular,
    failed: &str,
) -> Result<()> {
    match resolve(path, inputs)? {
        Target::Stdout => write_stdout(bytes),
        Target::InPlace(p) => write_in_place(&p, bytes),
        Target::Regular {
            path: real,
            existing,
        } => regular(&real, bytes, existing.as_ref())
            .with_context(|| format!("{failed} {}", path.display())),
    }
}

/// Opens `path` for a progressive write (a replay): standard output for `-`, a regular file
/// truncated in place (through a symlink; its mode and owner stay) or created exclusively, a
/// special file as it is; refuses when `path` is one of `inputs`, before opening anything.
pub fn open_stream(path: &Path, inputs: &[&Path]) -> Result<Box<dyn Write + Send>> {
    let opened: std::io::Result<Box<dyn Write + Send>> = match resolve(path, inputs)? {
        Target::Stdout => return Ok(Box::new(std::io::stdout())),
        Target::InPlace(p) => open_in_place(&p).map(|f| Box::new(f) as _),
        Target::Regular {
            path: real,
            existing: Some(_),
        } => OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(real)
            .map(|f| Box::new(f) as _),
        Target::Regular {
            path: real,
            existing: None,
        } => OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(real)
            .map(|f| Box::new(f) as _),
    };
    opened.with_context(|| format!("cannot write {}", path.display()))
}

/// Appends `bytes` to `path` (see the module notes): standard output for `-`, a special file
/// in place, a regular file (new, or the one a symlink at the path points to) opened with
/// `O_APPEND` and written once — never replaced, so what others wrote there stays. A blank
/// line separates the bytes from a file that already holds text. Refuses when `path` is one
/// of `inputs`.
pub fn append(path: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<()> {
    write_to(path, bytes, inputs, append_regular, "cannot append to")
}

/// Opens the regular file `path` for appending: the file `existing` describes (refused when
/// another took its place since), or a new one created exclusively.
fn open_for_append(path: &Path, existing: Option<&Metadata>) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).append(true);
    let Some(m) = existing else {
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o666);
        }
        return o.create_new(true).open(path);
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW);
    }
    let f = o.open(path)?;
    let now = f.metadata()?;
    if !now.is_file() || !same_meta(&now, m) {
        return Err(std::io::Error::other(
            "the file changed while it was being opened; not written",
        ));
    }
    Ok(f)
}

fn append_regular(path: &Path, bytes: &[u8], existing: Option<&Metadata>) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = open_for_append(path, existing)?;
    // A blank line after what is there, so a Markdown block starts on its own.
    let len = f.metadata()?.len();
    let mut last = [0u8; 2];
    let tail = len.min(2) as usize;
    if tail > 0 {
        f.seek(SeekFrom::Start(len - tail as u64))?;
        f.read_exact(&mut last[..tail])?;
    }
    let sep: &[u8] = match (tail, &last[..tail]) {
        (0, _) => b"",
        (_, [.., b'\n', b'\n']) => b"",
        (_, [.., b'\n']) => b"\n",
        _ => b"\n\n",
    };
    // One write: O_APPEND puts it at the end even when another writer appended meanwhile.
    let mut all = Vec::with_capacity(sep.len() + bytes.len());
    all.extend_from_slice(sep);
    all.extend_from_slice(bytes);
    f.write_all(&all)?;
    f.sync_all()
}

fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        // The reader has what it wanted (`| head`).
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("cannot write to standard output"),
    }
}

/// Opens a special file or descriptor for writing: appending, so a descriptor the shell
/// opened with `>>` keeps what it holds (and one opened with `>` is empty anyway).
fn open_in_place(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().append(true).open(path)
}

fn write_in_place(path: &Path, bytes: &[u8]) -> Result<()> {
    open_in_place(path)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.flush()))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Replaces the regular file `path` with `bytes` through an exclusive temporary file in its
/// directory; an existing file's mode (and owner, where allowed) carry over.
fn replace(path: &Path, bytes: &[u8], existing: Option<&Metadata>) -> std::io::Result<()> {
    let (tmp, mut f) = create_temporary(path, existing)?;
    let written = (|| {
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A new file beside `path` named `.NAME.<random>.memtide.tmp`, created with O_EXCL (a file
/// or symlink already there is never opened), with the existing file's permissions or the
/// usual ones for a new file (0666 less the umask).
fn create_temporary(path: &Path, existing: Option<&Metadata>) -> std::io::Result<(PathBuf, File)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let mut last = None;
    for attempt in 0..16u32 {
        let tmp = dir.join(format!(".{name}.{:016x}.memtide.tmp", random(attempt)));
        let mut o = OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o666);
        }
        match o.open(&tmp) {
            Ok(f) => {
                if let Some(m) = existing {
                    // The owner first: a change of owner clears set-user-ID bits.
                    keep_owner(&f, m);
                    // Exactly the old mode (the umask applied at creation is undone).
                    f.set_permissions(m.permissions())?;
                }
                return Ok((tmp, f));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary file name was free")))
}

/// Gives the new file the old one's owner and group where the process may (root, or a group
/// the user belongs to); otherwise it stays the user's, as any new file would.
fn keep_owner(f: &File, m: &Metadata) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if std::os::unix::fs::fchown(f, Some(m.uid()), Some(m.gid())).is_err() {
            let _ = std::os::unix::fs::fchown(f, None, Some(m.gid()));
        }
    }
    #[cfg(not(unix))]
    let _ = (f, m);
}

/// 64 unpredictable bits: std's randomly keyed hasher over the process id, the time and
/// `salt`.
fn random(salt: u32) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u32(salt);
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_differ_and_a_planted_file_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.md");
        let (a, _fa) = create_temporary(&out, None).unwrap();
        let (b, _fb) = create_temporary(&out, None).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.parent(), Some(dir.path()));
        let n = a.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            n.starts_with(".r.md.") && n.ends_with(".memtide.tmp"),
            "{n}"
        );
    }

    #[test]
    fn descriptors_are_told_by_their_links() {
        assert!(is_descriptor(Path::new("/proc/self/fd/1")));
        assert!(is_descriptor(Path::new("/dev/fd/2")));
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("x");
        std::fs::write(&plain, b"x").unwrap();
        assert!(!is_descriptor(&plain));
        #[cfg(unix)]
        {
            let l = dir.path().join("l");
            std::os::unix::fs::symlink("/proc/self/fd/1", &l).unwrap();
            assert!(is_descriptor(&l));
        }
    }
}

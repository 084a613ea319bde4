//! String and stack interner: a million events sharing 500 stacks store 500 stacks.
//!
//! A frame (`file:line:name`) whose file or name is long is kept as parts: the file and the
//! name are interned once and the frame entry holds their ids and the line, so 100,000
//! frames of one 1 MiB file name cost 100,000 small entries, not 100 GB of text. Its text
//! is formatted only when asked for ([`Interner::str`] gives a `Cow`).

use super::units::{StackId, StrId};
use rustc_hash::FxHashMap;
use std::borrow::Cow;

/// Frames whose file and name together are longer than this are kept as parts.
pub(crate) const LONG_FRAME: usize = 256;

#[derive(Debug, Clone)]
enum Entry {
    Text(Box<str>),
    /// `file:line:name` kept as parts (ids of interned texts).
    Frame {
        file: StrId,
        line: i64,
        name: StrId,
    },
}

/// Deduplicating store of strings and stacks (frame lists, innermost first).
#[derive(Debug, Default, Clone)]
pub struct Interner {
    strings: Vec<Entry>,
    str_ids: FxHashMap<Box<str>, StrId>,
    frame_ids: FxHashMap<(StrId, i64, StrId), StrId>,
    stacks: Vec<Box<[StrId]>>,
    /// Stack ids by a 64-bit hash of their frames (the frames themselves are in `stacks`:
    /// stored once, hashed two ids at a time).
    stack_by_hash: FxHashMap<u64, StackId>,
    /// A stack whose hash an earlier, different stack already has (practically never).
    stack_clash: FxHashMap<Box<[StrId]>, StackId>,
}

/// The hash of a stack's frames, two frame ids per word.
fn hash_frames(frames: &[StrId]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    let mut pairs = frames.chunks_exact(2);
    for p in &mut pairs {
        h.write_u64(u64::from(p[0].0) | u64::from(p[1].0) << 32);
    }
    if let [x] = pairs.remainder() {
        h.write_u32(x.0);
    }
    h.write_usize(frames.len());
    h.finish()
}

impl Interner {
    pub fn new() -> Self {
        let mut i = Interner::default();
        // StrId(0) is the empty string, StackId(0) the empty stack: "absent" costs nothing.
        i.intern("");
        i.intern_stack(&[]);
        i
    }

    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.str_ids.get(s) {
            return id;
        }
        let id = StrId(self.strings.len() as u32);
        let b: Box<str> = s.into();
        self.strings.push(Entry::Text(b.clone()));
        self.str_ids.insert(b, id);
        id
    }

    /// Interns the frame `file:line:name`: as one text when short, else as parts sharing
    /// the file's and the name's text with every other frame of them.
    pub fn intern_frame(&mut self, file: &str, line: i64, name: &str) -> StrId {
        if file.len() + name.len() <= LONG_FRAME {
            use std::fmt::Write as _;
            let mut buf = String::with_capacity(file.len() + name.len() + 24);
            let _ = write!(buf, "{file}:{line}:{name}");
            return self.intern(&buf);
        }
        let file = self.intern(file);
        let name = self.intern(name);
        self.intern_frame_ids(file, line, name)
    }

    /// Interns a frame kept as parts from the ids of its file and name (already interned
    /// here), so a caller that caches those ids never rehashes a long file name.
    pub fn intern_frame_ids(&mut self, file: StrId, line: i64, name: StrId) -> StrId {
        if let Some(&id) = self.frame_ids.get(&(file, line, name)) {
            return id;
        }
        let id = StrId(self.strings.len() as u32);
        self.strings.push(Entry::Frame { file, line, name });
        self.frame_ids.insert((file, line, name), id);
        id
    }

    /// Interns entry `id` of `other` here (a frame kept as parts stays parts).
    pub fn intern_from(&mut self, other: &Interner, id: StrId) -> StrId {
        match other.strings.get(id.0 as usize) {
            Some(Entry::Text(t)) => self.intern(t),
            Some(&Entry::Frame { file, line, name }) => {
                let (file, name) = (other.text(file), other.text(name));
                self.intern_frame(file, line, name)
            }
            None => StrId(0),
        }
    }

    pub fn lookup(&self, s: &str) -> Option<StrId> {
        self.str_ids.get(s).copied()
    }

    pub fn intern_stack(&mut self, frames: &[StrId]) -> StackId {
        let h = hash_frames(frames);
        let clash = match self.stack_by_hash.get(&h) {
            Some(&id) if self.stack(id) == frames => return id,
            Some(_) => match self.stack_clash.get(frames) {
                Some(&id) => return id,
                None => true,
            },
            None => false,
        };
        let id = StackId(self.stacks.len() as u32);
        self.stacks.push(frames.into());
        if clash {
            self.stack_clash.insert(frames.into(), id);
        } else {
            self.stack_by_hash.insert(h, id);
        }
        id
    }

    /// The text of `id`; a frame kept as parts is formatted here.
    pub fn str(&self, id: StrId) -> Cow<'_, str> {
        match self.strings.get(id.0 as usize) {
            Some(Entry::Text(t)) => Cow::Borrowed(t),
            Some(&Entry::Frame { file, line, name }) => {
                Cow::Owned(format!("{}:{line}:{}", self.text(file), self.text(name)))
            }
            None => Cow::Borrowed(""),
        }
    }

    /// The text of `id` as one-line fields show it: within
    /// [`TEXT_CAP`](crate::clip::TEXT_CAP) bytes ([`crate::clip`]); a frame kept as parts is
    /// formatted from its shortened parts, never whole.
    pub fn shown(&self, id: StrId) -> Cow<'_, str> {
        match self.strings.get(id.0 as usize) {
            Some(Entry::Text(t)) => crate::clip::clip(t),
            Some(&Entry::Frame { file, line, name }) => Cow::Owned(crate::clip::joined(
                self.text(file),
                &format!(":{line}:"),
                self.text(name),
            )),
            None => Cow::Borrowed(""),
        }
    }

    /// A frame kept as parts: the ids of its file and name, and its line.
    pub fn frame_ids(&self, id: StrId) -> Option<(StrId, i64, StrId)> {
        match self.strings.get(id.0 as usize) {
            Some(&Entry::Frame { file, line, name }) => Some((file, line, name)),
            _ => None,
        }
    }

    /// A frame kept as parts: its file, line and name.
    pub fn frame_parts(&self, id: StrId) -> Option<(&str, i64, &str)> {
        match self.strings.get(id.0 as usize) {
            Some(&Entry::Frame { file, line, name }) => {
                Some((self.text(file), line, self.text(name)))
            }
            _ => None,
        }
    }

    /// Whether the text of `id` contains `pat`, without formatting a frame kept as parts.
    pub fn contains(&self, id: StrId, pat: &str) -> bool {
        match self.frame_parts(id) {
            None => self.str(id).contains(pat),
            Some((file, line, name)) => {
                if file.contains(pat) || name.contains(pat) {
                    return true;
                }
                // A match across a separator: the file's tail, the line, the name's head.
                let k = pat.len();
                let tail = (file.len().saturating_sub(k)..=file.len())
                    .find(|&i| file.is_char_boundary(i))
                    .map_or("", |i| &file[i..]);
                let head = (0..=k.min(name.len()))
                    .rev()
                    .find(|&i| name.is_char_boundary(i))
                    .map_or("", |i| &name[..i]);
                format!("{tail}:{line}:{head}").contains(pat)
            }
        }
    }

    /// The text of a plain entry (names, marks, JSON text: never frames kept as parts,
    /// for which it gives "").
    pub fn text(&self, id: StrId) -> &str {
        match self.strings.get(id.0 as usize) {
            Some(Entry::Text(t)) => t,
            _ => "",
        }
    }

    pub fn stack(&self, id: StackId) -> &[StrId] {
        self.stacks.get(id.0 as usize).map(|s| &**s).unwrap_or(&[])
    }

    /// The rows of stack `id`, innermost first: each frame as a one-line field shows it (a
    /// long text shortened), a run of one frame (a recursion) as one row `frame (×N)`; past
    /// `max` rows the rest are counted in a last row (`… N more frames`).
    pub fn stack_rows(&self, id: StackId, max: usize) -> Vec<String> {
        let frames = self.stack(id);
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(&f) = frames.get(i) {
            let run = frames[i..].iter().take_while(|&&g| g == f).count();
            if out.len() == max {
                out.push(format!(
                    "… {} more frames",
                    crate::trace::units::grouped((frames.len() - i) as u64)
                ));
                break;
            }
            let text = self.shown(f);
            out.push(if run > 1 {
                format!("{text} (×{})", crate::trace::units::grouped(run as u64))
            } else {
                text.into_owned()
            });
            i += run;
        }
        out
    }

    pub fn string_count(&self) -> usize {
        self.strings.len()
    }

    pub fn stack_count(&self) -> usize {
        self.stacks.len()
    }

    /// All interned strings with their ids (for search); frames kept as parts are formatted
    /// one at a time.
    pub fn strings(&self) -> impl Iterator<Item = (StrId, Cow<'_, str>)> {
        (0..self.strings.len()).map(|i| (StrId(i as u32), self.str(StrId(i as u32))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_whose_hashes_clash_stay_apart() {
        let mut i = Interner::new();
        let (a, b) = (i.intern("a.py:1 f"), i.intern("b.py:2 g"));
        let sa = i.intern_stack(&[a, b]);
        // Pretend [b] hashes like [a, b]: its lookup finds sa, whose frames differ.
        i.stack_by_hash.insert(hash_frames(&[b]), sa);
        let sb = i.intern_stack(&[b]);
        assert_ne!(sa, sb);
        assert_eq!(i.stack(sb), &[b]);
        assert_eq!(i.intern_stack(&[b]), sb, "found again in the clash map");
        assert_eq!(i.intern_stack(&[a, b]), sa);
        assert_eq!(i.stack_count(), 3, "the empty stack, [a, b], [b]");
    }

    #[test]
    fn shared_stacks_are_stored_once() {
        let mut i = Interner::new();
        let a = i.intern("train.py:12 build");
        let b = i.intern("model.py:3 forward");
        let s1 = i.intern_stack(&[a, b]);
        let s2 = i.intern_stack(&[a, b]);
        let s3 = i.intern_stack(&[b, a]);
        assert_eq!(s1, s2);
        assert_ne!(s1, s3);
        assert_eq!(i.stack_count(), 3); // empty + two
        assert_eq!(i.str(a), "train.py:12 build");
        assert_eq!(i.intern("train.py:12 build"), a);
    }

    #[test]
    fn long_frames_share_their_file() {
        let mut i = Interner::new();
        let file = "f".repeat(1 << 20);
        let a = i.intern_frame(&file, 1, "g");
        let b = i.intern_frame(&file, 2, "g");
        assert_ne!(a, b);
        assert_eq!(i.intern_frame(&file, 1, "g"), a);
        assert_eq!(i.str(b), format!("{file}:2:g"));
        assert!(i.contains(b, "ff:2:g"));
        assert!(!i.contains(b, "ff:3:g"));
        let mut j = Interner::new();
        let c = j.intern_from(&i, b);
        assert_eq!(j.frame_parts(c), Some((file.as_str(), 2, "g")));
        // Short frames stay one text, equal to the same text interned as is.
        assert_eq!(i.intern_frame("a.py", 3, "h"), i.intern("a.py:3:h"));
    }
}

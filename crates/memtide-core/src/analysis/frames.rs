//! Readable frames: which frame of a stack is the user's own code, and how to print it short.
//!
//! Every input format hands frames over as text (see `parse_frame`): snapshot frames
//! `file:line:name`, JSONL stacks `file:line name`, Kineto's enclosing span names
//! `path/file.py(123): name`, and op or module names without a file (`aten::addmm`,
//! `nn.Module: Linear_0`). A frame is *internal* when it is PyTorch, an installed package
//! (site-packages, dist-packages), the standard library (`/lib/python3.X/`), `<frozen …>` or
//! another `<…>` pseudo-file, a built-in or op name, an unsymbolised `??` frame, a non-Python
//! file, or matches a user pattern (`[[frames]] internal = "my_lib/"` in the rules TOML);
//! `[[frames]] user = "…"` makes a match user code whatever else it is.
//! The *user frame* of a stack is its innermost frame that is not internal.

use crate::clip::{clip, joined};
use crate::trace::{StackId, StrId, Trace};
use serde::Deserialize;
use std::borrow::Cow;

/// A bad `[[frames]]` table in the rules TOML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameRulesError {
    #[error("rules TOML: {0}")]
    Toml(String),
    #[error("[[frames]] entry {0}: needs a non-empty `internal` or `user` pattern")]
    Empty(usize),
}

/// User patterns for telling user code from library code (substrings of the frame's file,
/// or of its name when it has no file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameRules {
    /// Frames matching one of these are internal (never the user frame).
    pub internal: Vec<String>,
    /// Frames matching one of these are user code, even under site-packages.
    pub user: Vec<String>,
}

#[derive(Deserialize)]
struct FramesFile {
    #[serde(default)]
    frames: Vec<RawFrames>,
}

#[derive(Deserialize)]
struct RawFrames {
    #[serde(default)]
    internal: Option<String>,
    #[serde(default)]
    user: Option<String>,
}

impl FrameRules {
    /// The `[[frames]]` tables of a rules TOML (other tables are ignored).
    pub fn parse(text: &str) -> Result<FrameRules, FrameRulesError> {
        let f: FramesFile =
            toml::from_str(text).map_err(|e| FrameRulesError::Toml(e.to_string()))?;
        let mut r = FrameRules::default();
        for (i, t) in f.frames.into_iter().enumerate() {
            let mut any = false;
            if let Some(p) = t.internal.filter(|p| !p.is_empty()) {
                r.internal.push(p);
                any = true;
            }
            if let Some(p) = t.user.filter(|p| !p.is_empty()) {
                r.user.push(p);
                any = true;
            }
            if !any {
                return Err(FrameRulesError::Empty(i + 1));
            }
        }
        Ok(r)
    }
}

/// A frame split into its parts; `file` is empty for op, module and built-in names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub file: &'a str,
    pub line: Option<u64>,
    pub name: &'a str,
}

fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Splits a frame text in any of the shapes the readers produce (an FX suffix
/// ` [fx …]`, see [`fx_location`], is not part of the name).
pub(crate) fn parse_frame(f: &str) -> Frame<'_> {
    let f = match f.ends_with(']').then(|| f.find(" [fx")).flatten() {
        Some(i) => &f[..i],
        None => f,
    };
    let bare = Frame {
        file: "",
        line: None,
        name: f,
    };
    if f.starts_with("aten::")
        || f.starts_with("autograd::")
        || f.starts_with("nn.Module: ")
        || f.starts_with("<built-in")
    {
        return bare;
    }
    // Kineto: `path/file.py(123): name`.
    // (`find` by the `)` alone: a `char` search is `memchr`, cheap on very long names.)
    let mut close = f.match_indices(')').map(|(i, _)| i);
    if let Some(p) = close.find(|&i| f[i..].starts_with("): ")) {
        let head = &f[..p];
        if let Some(o) = head.rfind('(') {
            if let (true, Some(line)) = (o > 0, digits(&head[o + 1..])) {
                return Frame {
                    file: &head[..o],
                    line: Some(line),
                    name: &f[p + 3..],
                };
            }
        }
    }
    // Snapshot: `file:line:name`.
    let mut it = f.rsplitn(3, ':');
    if let (Some(name), Some(line), Some(file)) = (it.next(), it.next(), it.next()) {
        if let Some(line) = digits(line) {
            return Frame {
                file,
                line: Some(line),
                name,
            };
        }
    }
    // JSONL: `file:line name`.
    if let Some((head, name)) = f.split_once(' ') {
        if let Some((file, line)) = head.rsplit_once(':') {
            if let Some(line) = digits(line) {
                return Frame {
                    file,
                    line: Some(line),
                    name,
                };
            }
        }
    }
    bare
}

/// The model source line of a frame of Inductor/FX-generated code (a snapshot taken with
/// `augment_with_fx_traces=True`; the reader appends ` [fx op=… node=… from: File "…", line
/// N, in f: code]` to the frame's name): `(file, line, function, node name)`.
pub(crate) fn fx_location(text: &str) -> Option<(&str, u64, &str, &str)> {
    if !text.ends_with(']') {
        return None;
    }
    let i = text.find(" [fx")?;
    let fx = &text[i..];
    let node = fx
        .split_once(" node=")
        .map_or("", |(_, r)| r.split([' ', ']']).next().unwrap_or(""));
    let (file, line, func) = traceback_line(fx.split_once("from: ")?.1)?;
    Some((file, line, func, node))
}

/// Whether a frame's name carries an FX suffix (` [fx …]`, see [`fx_location`]).
pub(crate) fn has_fx(name: &str) -> bool {
    name.ends_with(']') && name.contains(" [fx")
}

/// `File "path", line 12, in forward` (a Python traceback line; what follows is ignored).
pub(crate) fn traceback_line(s: &str) -> Option<(&str, u64, &str)> {
    let r = s.trim_start().strip_prefix("File \"")?;
    let (file, r) = r.split_once("\", line ")?;
    let (line, r) = r.split_once(", in ")?;
    let func = r.split([':', ' ', ']', '\n']).next().unwrap_or("");
    Some((file, digits(line)?, func))
}

/// Whether `file` belongs to PyTorch, an installed package, the standard library or a
/// pseudo-file, by the built-in rules alone.
fn builtin_internal(file: &str) -> bool {
    if file.is_empty() || file.starts_with("??") {
        return true;
    }
    if file.starts_with("<ipython-input") {
        return false;
    }
    if !(file.ends_with(".py") || file.ends_with(".ipynb")) {
        return true;
    }
    let f: Cow<str> = if file.contains('\\') {
        Cow::Owned(file.replace('\\', "/"))
    } else {
        Cow::Borrowed(file)
    };
    f.starts_with('<') || internal_component(&f)
}

/// Whether a `/`-separated path has a component that makes it library code: a directory
/// ending in `site-packages` or `dist-packages`, a `torch` or `triton` directory, a
/// `torchinductor…` component, or `lib/python…` / `lib64/python…` (the substrings
/// `site-packages/`, `dist-packages/`, `torch/` at the start, `/torch/`, `/triton/`,
/// `/torchinductor`, `/lib/python`, `/lib64/python`). One pass over the components: the
/// separator search is `memchr`, so a very long file name costs its length once.
fn internal_component(f: &str) -> bool {
    let comps: Vec<&str> = f.split('/').collect();
    let n = comps.len();
    comps.iter().enumerate().any(|(i, &c)| {
        let (first, last) = (i == 0, i + 1 == n);
        let dir = !last && (c.ends_with("site-packages") || c.ends_with("dist-packages"));
        let torch = !last && c == "torch";
        let inner = !first && (c.starts_with("torchinductor") || (!last && c == "triton"));
        let stdlib = !first
            && (c == "lib" || c == "lib64")
            && comps
                .get(i + 1)
                .is_some_and(|next| next.starts_with("python"));
        dir || torch || inner || stdlib
    })
}

impl FrameRules {
    /// Whether the frame is library code, not the user's.
    pub fn is_internal(&self, fr: &Frame<'_>) -> bool {
        let key = if fr.file.is_empty() { fr.name } else { fr.file };
        if self.user.iter().any(|p| key.contains(p.as_str())) {
            return false;
        }
        self.internal.iter().any(|p| key.contains(p.as_str())) || builtin_internal(fr.file)
    }
}

/// A library file without its install prefix: `torch/nn/functional.py` for
/// `/usr/lib/python3.11/site-packages/torch/nn/functional.py`, `python3.11/json/decoder.py`
/// for the standard library.
pub(crate) fn short_library_path(file: &str) -> &str {
    for marker in [
        "site-packages/",
        "dist-packages/",
        "site-packages\\",
        "dist-packages\\",
    ] {
        if let Some(i) = file.rfind(marker) {
            return &file[i + marker.len()..];
        }
    }
    for marker in ["/torch/", "\\torch\\"] {
        if let Some(i) = file.rfind(marker) {
            return &file[i + 1..];
        }
    }
    if let Some(i) = file.find("/lib/python") {
        return &file[i + 5..];
    }
    file
}

fn is_sep(c: char) -> bool {
    c == '/' || c == '\\'
}

/// How to print the frames of one trace: its rules and the common project root of its user
/// frames (the longest directory prefix all their files share).
#[derive(Clone, Debug, Default)]
pub struct FrameView {
    pub rules: FrameRules,
    /// Stripped from user files when printed (ends with `/`, or empty).
    pub root: String,
}

/// A stack's readable frames.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackFrames {
    /// The user frame as `file.py:123 function` (file shortened), or empty.
    pub user: String,
    /// The user frame's text as the source gave it (full path), or empty.
    pub user_full: String,
    /// The innermost frame's function or op (`relu`, `aten::addmm`), or empty.
    pub innermost: String,
    /// The module path the stack shows (`layers.3.mlp`, from `nn.Module: …` spans), or empty.
    pub module: String,
    /// The FX node of compiled code the user frame was read from (`addmm`), or empty.
    pub fx_node: String,
    /// What the stack is in plain words where its innermost function is an internal name a
    /// user does not know (`gradient` for `AccumulateGrad`, `optimizer state` for
    /// `_init_group`, `autograd backward` for the engine's thread), or empty.
    pub plain: String,
}

/// The plain word for a frame whose name is PyTorch-internal, if it has one.
fn plain_word(text: &str, name: &str) -> Option<&'static str> {
    if text.contains("AccumulateGrad") {
        Some("gradient")
    } else if name == "_init_group" || name.contains("_init_state") {
        Some("optimizer state")
    } else if text.contains("autograd::Engine::")
        || text.contains("autograd::generated::")
        || name == "_engine_run_backward"
        || name == "run_backward"
    {
        Some("autograd backward")
    } else {
        None
    }
}

impl FrameView {
    /// The view of `trace`'s frames under `rules` (one pass over its distinct stacks).
    pub fn new(trace: &Trace, rules: &FrameRules) -> FrameView {
        let mut root: Option<String> = None;
        let mut seen_files = rustc_hash::FxHashSet::default();
        // A frame's part in the root depends on the frame alone: each is read once (a deep
        // recursion repeats one frame).
        let mut seen = rustc_hash::FxHashSet::default();
        for sid in 0..trace.strings.stack_count() {
            for &f in trace.strings.stack(StackId(sid as u32)) {
                if !seen.insert(f) {
                    continue;
                }
                // A frame kept as parts (a long file name) is judged once per file: its
                // verdict and directory depend on the file alone.
                if let Some((file_id, _, name_id)) = trace.strings.frame_ids(f) {
                    let file = trace.strings.text(file_id);
                    let plain = !file.is_empty() && !has_fx(trace.strings.text(name_id));
                    if plain && !seen_files.insert(file_id) {
                        continue;
                    }
                }
                let text = trace.strings.str(f);
                let fr = match fx_location(&text) {
                    Some((file, line, name, _)) => Frame {
                        file,
                        line: Some(line),
                        name,
                    },
                    None => parse_frame(&text),
                };
                if rules.is_internal(&fr) {
                    continue;
                }
                let dir = match fr.file.rfind(is_sep) {
                    Some(i) => &fr.file[..=i],
                    None => "",
                };
                root = Some(match root {
                    None => dir.to_string(),
                    Some(mut r) => {
                        r.truncate(common_dir(&r, dir).len());
                        r
                    }
                });
            }
        }
        FrameView {
            rules: rules.clone(),
            root: root.unwrap_or_default(),
        }
    }

    /// `file.py:123 function`, the file shortened (user files lose the project root); within
    /// [`TEXT_CAP`](crate::clip::TEXT_CAP) bytes, a long file or name cut (`joined`).
    pub fn show(&self, fr: &Frame<'_>) -> String {
        if fr.file.is_empty() {
            return clip(fr.name).into_owned();
        }
        let file = if self.rules.is_internal(fr) {
            short_library_path(fr.file)
        } else {
            fr.file.strip_prefix(self.root.as_str()).unwrap_or(fr.file)
        };
        match fr.line {
            Some(l) => joined(file, &format!(":{l} "), fr.name),
            None => joined(file, " ", fr.name),
        }
    }

    /// The readable frames of a stack (frames innermost first).
    pub fn of_frames<'a>(&self, frames: impl IntoIterator<Item = Cow<'a, str>>) -> StackFrames {
        self.of_sources(frames.into_iter().map(FrameSource::Text))
    }

    /// The readable frames of stack `sid` of `trace`. Frames kept as parts (long file
    /// names) are read from their parts, never formatted whole, so a long name shared by
    /// many frames costs its length only where it is shown.
    pub fn of_stack(&self, trace: &Trace, sid: StackId) -> StackFrames {
        let strings = &trace.strings;
        let stack = strings.stack(sid);
        // A frame repeated at once (a recursion) tells nothing new, unless it is a module's.
        let module = |id| match strings.frame_parts(id) {
            Some((_, _, name)) => name.starts_with("nn.Module: "),
            None => strings.str(id).starts_with("nn.Module: "),
        };
        self.of_sources(
            stack
                .iter()
                .enumerate()
                .filter(|&(i, &id)| i == 0 || stack[i - 1] != id || module(id))
                .map(|(_, &id)| match strings.frame_parts(id) {
                    Some((file, line, name)) => FrameSource::Parts(file, line, name),
                    None => FrameSource::Text(strings.str(id)),
                }),
        )
    }

    /// [`StackFrames::innermost`] of stack `sid` alone: the other figures of
    /// [`FrameView::of_stack`] judge every frame's file, this reads frames only up to the
    /// first that names a function (the stack tree asks only this, once per stack).
    pub(crate) fn innermost(&self, trace: &Trace, sid: StackId) -> String {
        let strings = &trace.strings;
        for &id in strings.stack(sid) {
            let src = match strings.frame_parts(id) {
                Some((file, line, name)) => FrameSource::Parts(file, line, name),
                None => FrameSource::Text(strings.str(id)),
            }
            .plain();
            let (fr, text) = src.frame();
            if names_a_function(&fr, text) {
                return clip(fr.name).into_owned();
            }
        }
        String::new()
    }

    fn of_sources<'a>(&self, frames: impl IntoIterator<Item = FrameSource<'a>>) -> StackFrames {
        let mut out = StackFrames::default();
        let mut modules: Vec<String> = Vec::new();
        let mut plain: Option<&'static str> = None;
        let mut backward = false;
        for src in frames {
            let src = src.plain();
            let (fr, text) = src.frame();
            if out.innermost.is_empty() && names_a_function(&fr, text) {
                out.innermost = clip(fr.name).into_owned();
            }
            // The innermost internal name with a plain word (a user frame further out does
            // not hide that the allocation is a gradient or optimizer state).
            if plain.is_none() && out.user.is_empty() {
                let t = match (text, &src) {
                    (Some(t), _) => Cow::Borrowed(t),
                    (None, FrameSource::Parts(file, line, name)) => {
                        Cow::Owned(judged_text(file, *line, name))
                    }
                    (None, FrameSource::Text(t)) => Cow::Borrowed(t.as_ref()),
                };
                // Judged on the name's first 4 KiB, as the frame's text is (a shared 1 MiB
                // name is scanned once per use otherwise).
                plain = plain_word(
                    &t,
                    &fr.name[..crate::clip::floor_char_boundary(fr.name, 4096)],
                );
                backward |= plain.is_some_and(|w| w != "optimizer state");
            }
            if out.user.is_empty() {
                if let Some((file, line, name, node)) = text.and_then(fx_location) {
                    // Generated code: the model's line it was compiled from.
                    let src = Frame {
                        file,
                        line: Some(line),
                        name,
                    };
                    if !self.rules.is_internal(&src) {
                        out.user = self.show(&src);
                        out.user_full = joined(file, &format!(":{line}:"), name);
                        out.fx_node = clip(node).into_owned();
                    }
                }
            }
            if out.user.is_empty() && !self.rules.is_internal(&fr) {
                out.user = self.show(&fr);
                out.user_full = src.shown();
            }
            if let Some(m) = fr.name.strip_prefix("nn.Module: ") {
                modules.push(clip(m).into_owned());
            }
        }
        modules.reverse();
        out.module = clip(&modules.join(".")).into_owned();
        out.plain = plain.unwrap_or_default().to_string();
        // A backward allocation on the autograd engine's thread has no frame of the user's
        // and no named function (only C++ frames): say so, never the thread's entry point.
        if out.user.is_empty() && out.innermost.is_empty() && backward {
            out.user = "autograd backward".to_string();
        }
        out
    }
}

/// One frame of a stack as the interner holds it: text, or the parts of a frame with a long
/// file name (see `Interner::intern_frame`).
/// A frame kept as parts (a very long file or name) as the rules judge it: its file's last and
/// its name's first 4 KiB. The rules look at path tails and names, and scanning a shared
/// 1 MiB name once per use would be quadratic.
pub(crate) fn judged_text(file: &str, line: i64, name: &str) -> String {
    const KEPT: usize = 4096;
    let cut = (file.len().saturating_sub(KEPT)..=file.len())
        .find(|&i| file.is_char_boundary(i))
        .unwrap_or(file.len());
    let end = (0..=name.len().min(KEPT))
        .rev()
        .find(|&i| name.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}:{line}:{}", &file[cut..], &name[..end])
}

/// Judgments of frames made once per frame, for analyses that read every stack of a run:
/// a frame kept as text is read once whatever the stacks sharing it; one kept as parts is
/// read as [`judged_text`] gives it, once per (file, name) pair — the line is left out of
/// the key, as no judgment made here reads it (they look for words and paths, none of which
/// spans `:line:`). So 100,000 frames of one 1 MiB file name at distinct lines cost one
/// read of its bounded ends, not 100,000 copies of the whole name.
pub(crate) struct JudgedFrames<T> {
    by_text: rustc_hash::FxHashMap<StrId, T>,
    by_parts: rustc_hash::FxHashMap<(StrId, StrId), T>,
}

impl<T: Copy> JudgedFrames<T> {
    pub(crate) fn new() -> JudgedFrames<T> {
        JudgedFrames {
            by_text: Default::default(),
            by_parts: Default::default(),
        }
    }

    /// `judge`'s verdict on frame `f` of `trace`.
    pub(crate) fn of(&mut self, trace: &Trace, f: StrId, judge: impl FnOnce(&str) -> T) -> T {
        let strings = &trace.strings;
        if let Some((file, line, name)) = strings.frame_ids(f) {
            return *self.by_parts.entry((file, name)).or_insert_with(|| {
                judge(&judged_text(strings.text(file), line, strings.text(name)))
            });
        }
        *self
            .by_text
            .entry(f)
            .or_insert_with(|| judge(&strings.str(f)))
    }

    /// The verdicts on stack `sid`'s frames, innermost first.
    pub(crate) fn stack(
        &mut self,
        trace: &Trace,
        sid: StackId,
        judge: impl Fn(&str) -> T,
    ) -> Vec<T> {
        trace
            .strings
            .stack(sid)
            .iter()
            .map(|&f| self.of(trace, f, &judge))
            .collect()
    }
}

enum FrameSource<'a> {
    Text(Cow<'a, str>),
    Parts(&'a str, i64, &'a str),
}

/// Whether a frame (and its text, for one kept as text) names a function the user would
/// call innermost: named, symbolised, and no thread's entry point (libstdc++'s
/// `execute_native_thread_routine`, libc's `start_thread`/`clone`).
fn names_a_function(fr: &Frame<'_>, text: Option<&str>) -> bool {
    let unsymbolised = match text {
        Some(t) => t.starts_with("??"),
        None => fr.file.starts_with("??"),
    };
    let thread_entry = matches!(
        fr.name,
        "execute_native_thread_routine" | "start_thread" | "clone" | "__clone" | "__clone3"
    );
    !fr.name.is_empty() && !unsymbolised && !thread_entry
}

impl<'a> FrameSource<'a> {
    /// The frame read from its text or parts, and its text where it is kept as one.
    fn frame(&self) -> (Frame<'_>, Option<&str>) {
        match self {
            FrameSource::Text(t) => (parse_frame(t), Some(t.as_ref())),
            FrameSource::Parts(file, line, name) => (
                Frame {
                    file,
                    line: u64::try_from(*line).ok(),
                    name,
                },
                None,
            ),
        }
    }

    /// The frame's text (`file:line:name` for parts).
    fn text(&self) -> Cow<'a, str> {
        match self {
            FrameSource::Text(t) => t.clone(),
            FrameSource::Parts(file, line, name) => Cow::Owned(format!("{file}:{line}:{name}")),
        }
    }

    /// The frame's text as shown, within [`TEXT_CAP`](crate::clip::TEXT_CAP) bytes.
    fn shown(&self) -> String {
        match self {
            FrameSource::Text(t) => clip(t).into_owned(),
            FrameSource::Parts(file, line, name) => joined(file, &format!(":{line}:"), name),
        }
    }

    /// Parts that only their text reads right (a negative line, an FX suffix) as text.
    fn plain(self) -> FrameSource<'a> {
        match self {
            FrameSource::Parts(_, line, name) if line < 0 || has_fx(name) => {
                FrameSource::Text(self.text())
            }
            other => other,
        }
    }
}

/// The longest common directory prefix of two directory paths (each empty or ending in `/`).
fn common_dir<'a>(a: &'a str, b: &str) -> &'a str {
    // The usual case (the root found so far is already `b`'s prefix) in one comparison.
    if b.starts_with(a) && a.ends_with(is_sep) {
        return a;
    }
    let mut end = 0;
    for ((i, ca), cb) in a.char_indices().zip(b.chars()) {
        if ca != cb {
            break;
        }
        if is_sep(ca) {
            end = i + 1;
        }
    }
    &a[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stack whose frames have long file names (kept as parts by the interner) reads the
    /// same from its parts as from its frames' formatted text.
    #[test]
    fn frames_kept_as_parts_read_as_their_text() {
        let long = format!("/home/me/{}/model.py", "p".repeat(300));
        let lib = format!(
            "/usr/lib/python3.11/site-packages/{}/torch/nn/f.py",
            "q".repeat(300)
        );
        let mut t = Trace::new("cuda:0", "test", "test");
        let frames = [
            t.strings.intern_frame(&lib, 1777, "relu"),
            t.strings.intern_frame(&long, 44, "forward"),
            t.strings.intern_frame(&long, 9, "main"),
            t.strings.intern("train.py:3:<module>"),
        ];
        assert!(t.strings.frame_parts(frames[1]).is_some(), "kept as parts");
        let sid = t.strings.intern_stack(&frames);
        let v = FrameView::new(&t, &FrameRules::default());
        let texts: Vec<String> = frames
            .iter()
            .map(|&f| t.strings.str(f).into_owned())
            .collect();
        let by_text = v.of_frames(texts.iter().map(|s| Cow::Borrowed(s.as_str())));
        let by_parts = v.of_stack(&t, sid);
        assert_eq!(by_parts, by_text);
        assert_eq!(by_parts.innermost, "relu");
        assert!(
            by_parts.user.ends_with("model.py:44 forward"),
            "{}",
            by_parts.user
        );
    }

    /// The substring rules `internal_component` stands for, as first written.
    fn by_substrings(f: &str) -> bool {
        f.contains("site-packages/")
            || f.contains("dist-packages/")
            || f.contains("/lib/python")
            || f.contains("/lib64/python")
            || f.starts_with("torch/")
            || f.contains("/torch/")
            || f.contains("/torchinductor")
            || f.contains("/triton/")
    }

    proptest::proptest! {
        #[test]
        fn components_agree_with_the_substring_rules(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "", "torch", "triton", "lib", "lib64", "python3.11", "python", "site-packages",
                "my-site-packages", "dist-packages", "torchinductor_x", "torchvision", "a",
                "train.py", "libpython", "pythonic", "xtorch", "torch.py",
            ]), 1..7)
        ) {
            let f = parts.join("/");
            proptest::prop_assert_eq!(internal_component(&f), by_substrings(&f), "{}", f);
        }
    }

    #[test]
    fn parses_every_shape() {
        let f = parse_frame("/usr/lib/python3.11/site-packages/torch/nn/functional.py:1777:relu");
        assert_eq!(
            f.file,
            "/usr/lib/python3.11/site-packages/torch/nn/functional.py"
        );
        assert_eq!(f.line, Some(1777));
        assert_eq!(f.name, "relu");
        let k = parse_frame("models/net.py(42): forward");
        assert_eq!(
            (k.file, k.line, k.name),
            ("models/net.py", Some(42), "forward")
        );
        let j = parse_frame("train.py:12 build");
        assert_eq!((j.file, j.line, j.name), ("train.py", Some(12), "build"));
        let o = parse_frame("aten::addmm");
        assert_eq!((o.file, o.line, o.name), ("", None, "aten::addmm"));
        let m = parse_frame("nn.Module: Linear_0");
        assert_eq!(m.file, "");
        let c = parse_frame("C:\\x\\train.py:3:main");
        assert_eq!(
            (c.file, c.line, c.name),
            ("C:\\x\\train.py", Some(3), "main")
        );
    }

    #[test]
    fn internal_rules() {
        let r = FrameRules::default();
        let int = |s: &str| r.is_internal(&parse_frame(s));
        assert!(int(
            "/usr/lib/python3.11/site-packages/torch/nn/functional.py:1:relu"
        ));
        assert!(int("/usr/lib/python3/dist-packages/numpy/core.py:1:f"));
        assert!(int("/usr/lib/python3.11/contextlib.py:81:inner"));
        assert!(int("<frozen runpy>:198:_run_module_as_main"));
        assert!(int(
            "/home/me/pytorch/torch/autograd/__init__.py:1:backward"
        ));
        assert!(int("??:0:c10::alloc"));
        assert!(int("aten::empty_strided"));
        assert!(int("/pytorch/c10/cuda/CUDACachingAllocator.cpp:100:malloc"));
        assert!(!int("/home/me/proj/train.py:12:main"));
        assert!(!int("<ipython-input-3-abc>:2:<module>"));
        let mine = FrameRules::parse(
            "[[frames]]\ninternal = \"proj/utils/\"\n[[frames]]\nuser = \"site-packages/mypkg/\"\n",
        )
        .expect("parses");
        assert!(mine.is_internal(&parse_frame("/home/me/proj/utils/x.py:1:f")));
        assert!(!mine.is_internal(&parse_frame("/venv/site-packages/mypkg/m.py:1:f")));
        assert!(matches!(
            FrameRules::parse("[[frames]]\ninternal = \"\"\n"),
            Err(FrameRulesError::Empty(1))
        ));
        assert!(matches!(
            FrameRules::parse("[[frames]\n"),
            Err(FrameRulesError::Toml(_))
        ));
        // Category rules in the same file are not this parser's business.
        assert_eq!(
            FrameRules::parse("[[rule]]\nmatch = \"x\"\nband = \"persistent\"\n"),
            Ok(FrameRules::default())
        );
    }

    #[test]
    fn user_frame_innermost_and_root() {
        let v = FrameView {
            rules: FrameRules::default(),
            root: "/home/me/proj/".into(),
        };
        let stack = [
            "/usr/lib/python3.11/site-packages/torch/nn/functional.py:1777:relu",
            "/home/me/proj/models/mlp.py:30:forward",
            "/home/me/proj/train.py:12:main",
        ];
        let s = v.of_frames(stack.iter().map(|s| Cow::Borrowed(*s)));
        assert_eq!(s.user, "models/mlp.py:30 forward");
        assert_eq!(s.user_full, "/home/me/proj/models/mlp.py:30:forward");
        assert_eq!(s.innermost, "relu");
        let lib = parse_frame(stack[0]);
        assert_eq!(v.show(&lib), "torch/nn/functional.py:1777 relu");
        let k = [
            "aten::empty",
            "nn.Module: Linear_0",
            "nn.Module: Block_3",
            "x.py(3): f",
        ];
        let s = v.of_frames(k.iter().map(|s| Cow::Borrowed(*s)));
        assert_eq!(s.innermost, "aten::empty");
        assert_eq!(s.module, "Block_3.Linear_0");
        assert_eq!(s.user, "x.py:3 f");
        let fx = "/tmp/torchinductor_u/xy/cxy.py:12:call [fx op=call_function node=addmm target=aten.addmm.default from: File \"/home/me/proj/model.py\", line 9, in forward: y = self.fc(x)]";
        assert_eq!(
            fx_location(fx),
            Some(("/home/me/proj/model.py", 9, "forward", "addmm"))
        );
        assert_eq!(parse_frame(fx).name, "call");
        let s = v.of_frames([
            Cow::Borrowed(fx),
            Cow::Borrowed("/home/me/proj/train.py:40:main"),
        ]);
        assert_eq!(
            (s.user.as_str(), s.fx_node.as_str()),
            ("model.py:9 forward", "addmm")
        );
        assert_eq!(s.innermost, "call");
        assert_eq!(
            traceback_line("File \"/w/model.py\", line 9, in forward"),
            Some(("/w/model.py", 9, "forward"))
        );
        assert_eq!(traceback_line("line 9"), None);
        assert_eq!(common_dir("/a/b/c/", "/a/b/d/"), "/a/b/");
        assert_eq!(common_dir("/a/bc/", "/a/bd/"), "/a/");
        assert_eq!(common_dir("", "/a/"), "");
        assert_eq!(common_dir("D:\\p\\a\\", "D:\\p\\b\\"), "D:\\p\\");
        assert_eq!(
            short_library_path("C:\\Py\\Lib\\site-packages\\torch\\nn\\functional.py"),
            "torch\\nn\\functional.py"
        );
    }
}

//! The live set at an instant as a tree of stacks (root = outermost frame), bytes per node.
//!
//! A storage's path is its stack read outermost first: every frame ([`TreeFrames::All`]) or
//! only its user frames ([`TreeFrames::User`], see [`super::frames`]), the innermost frame
//! (op or function) closing a path that has no user frame. A storage is counted in every node
//! of its path and as an *own* allocation of its last node (the root's when the path is
//! empty), so every node's bytes are its own bytes plus its children's.
//!
//! A path is bounded, so the tree's depth is too whatever the stacks (every walk over a tree
//! recurses once per level): a run of identical consecutive levels is one level
//! `train.py:3 f (×150,000)` (a recursion), and a path still longer than
//! `PATH_OUTER` + `PATH_INNER` levels keeps its outermost and innermost ones with one
//! level `… N frames …` between, N the frames left out. A level's text is at most
//! `crate::clip::TEXT_CAP` bytes (see [`crate::clip`]).

use super::frames::{has_fx, parse_frame, short_library_path, Frame, FrameView};
use crate::clip::{clip_to, joined, TEXT_CAP};
use crate::trace::units::grouped;
use crate::trace::{AllocId, StackId, StrId, Trace};
use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

/// Outermost levels a long path keeps.
pub(crate) const PATH_OUTER: usize = 64;
/// Innermost levels a long path keeps.
pub(crate) const PATH_INNER: usize = 64;

/// Which frames make the tree's levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TreeFrames {
    /// User frames only (library frames collapsed away).
    #[default]
    User,
    /// Every frame of the stack.
    All,
}

/// One node: a frame, with the bytes and storages live under it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TreeNode {
    /// The frame as printed (`train.py:12 main`); `(all)` for the root.
    pub frame: String,
    /// Bytes live under this node (own + children's, + omitted when bounded).
    pub bytes: u64,
    pub count: usize,
    /// Bytes of storages whose path ends here.
    pub self_bytes: u64,
    pub self_count: usize,
    /// Biggest first (ties by frame text).
    pub children: Vec<TreeNode>,
    /// Bytes of children left out by [`TreeNode::bounded`] (0 in a full tree).
    pub omitted_bytes: u64,
    pub omitted_count: usize,
}

/// The tree of the storages `ids` (live at one instant).
pub fn stack_tree(trace: &Trace, ids: &[AllocId], view: &FrameView, mode: TreeFrames) -> TreeNode {
    stack_tree_counted(trace, ids, view, mode).0
}

/// [`stack_tree`] and the work it took ([`TreeWork`]).
pub(crate) fn stack_tree_counted(
    trace: &Trace,
    ids: &[AllocId],
    view: &FrameView,
    mode: TreeFrames,
) -> (TreeNode, TreeWork) {
    let before = COMPARES.get();
    // Storages share few stacks: group by stack first, then walk each stack once.
    let mut by_stack: FxHashMap<StackId, (u64, usize)> = FxHashMap::default();
    for &id in ids {
        let e = by_stack.entry(trace.stack_id(id)).or_insert((0, 0));
        e.0 += trace.size(id).0;
        e.1 += 1;
    }
    let mut stacks: Vec<(StackId, (u64, usize))> = by_stack.into_iter().collect();
    stacks.sort_by_key(|(s, _)| s.0);
    let mut b = Builder::default();
    let mut files = FileVerdicts::default();
    for (sid, (bytes, count)) in stacks {
        let path = path_of(trace, sid, view, mode, &mut files);
        b.insert(path, bytes, count);
    }
    let (root, mut work) = b.finish();
    let after = COMPARES.get();
    work.key_compares = after.0 - before.0;
    work.text_compares += after.1 - before.1;
    (root, work)
}

/// What building one tree took, counted where it is done: the levels inserted (every
/// level of every stack's path), the nodes made, and the comparisons of child keys (a
/// node and an interned frame) and of level texts (interning them, ordering them once).
/// Each stays within a small multiple of the levels (times log for the ordering) however
/// many siblings share a parent or however long their texts' shared prefix is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TreeWork {
    pub levels: u64,
    pub nodes: u64,
    pub key_compares: u64,
    pub text_compares: u64,
}

thread_local! {
    /// Comparisons of ([`ChildKey`], [`Text`]) made on this thread, for [`TreeWork`].
    static COMPARES: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A node's child: the parent node and the child's interned frame.
#[derive(Clone, Copy, Eq)]
struct ChildKey {
    parent: u32,
    frame: u32,
}

impl Hash for ChildKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        (self.parent, self.frame).hash(h);
    }
}

impl PartialEq for ChildKey {
    fn eq(&self, o: &ChildKey) -> bool {
        COMPARES.set({
            let (k, t) = COMPARES.get();
            (k + 1, t)
        });
        self.parent == o.parent && self.frame == o.frame
    }
}

/// A level's text as the interning table holds it.
#[derive(Eq)]
struct Text(String);

impl Hash for Text {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.hash(h);
    }
}

impl PartialEq for Text {
    fn eq(&self, o: &Text) -> bool {
        COMPARES.set({
            let (k, t) = COMPARES.get();
            (k, t + 1)
        });
        self.0 == o.0
    }
}

/// A node while the tree is built: its frame (an index into the interned texts; the root
/// has none) and its children, found by [`ChildKey`].
#[derive(Default)]
struct Slot {
    frame: u32,
    bytes: u64,
    count: usize,
    self_bytes: u64,
    self_count: usize,
    children: Vec<u32>,
}

/// The tree under construction: nodes in an arena, each level text interned once, a node's
/// child found by one hash lookup of (node, frame) — never by scanning its siblings.
struct Builder {
    texts: FxHashMap<Text, u32>,
    nodes: Vec<Slot>,
    child: FxHashMap<ChildKey, u32>,
    levels: u64,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder {
            texts: FxHashMap::default(),
            nodes: vec![Slot::default()],
            child: FxHashMap::default(),
            levels: 0,
        }
    }
}

impl Builder {
    /// Adds one stack's path, outermost level first: its bytes and count in every node of
    /// the path, and as its last node's own.
    fn insert(&mut self, path: Vec<String>, bytes: u64, count: usize) {
        // Saturating: a reader that skips the load-time overflow check (the fuzz driver)
        // must not panic here; the CLI refuses such traces before any tree is built.
        let mut at = 0u32;
        self.add(at, bytes, count);
        for level in path {
            self.levels += 1;
            let next = self.texts.len() as u32;
            let frame = *self.texts.entry(Text(level)).or_insert(next);
            let fresh = self.nodes.len() as u32;
            let key = ChildKey { parent: at, frame };
            let node = *self.child.entry(key).or_insert(fresh);
            if node == fresh {
                self.nodes.push(Slot {
                    frame,
                    ..Slot::default()
                });
                if let Some(p) = self.nodes.get_mut(at as usize) {
                    p.children.push(node);
                }
            }
            at = node;
            self.add(at, bytes, count);
        }
        if let Some(n) = self.nodes.get_mut(at as usize) {
            n.self_bytes = n.self_bytes.saturating_add(bytes);
            n.self_count += count;
        }
    }

    fn add(&mut self, at: u32, bytes: u64, count: usize) {
        if let Some(n) = self.nodes.get_mut(at as usize) {
            n.bytes = n.bytes.saturating_add(bytes);
            n.count += count;
        }
    }

    /// The finished tree: children biggest first, ties by frame text (the texts ordered
    /// once, each sibling list then sorted by bytes and that rank).
    fn finish(self) -> (TreeNode, TreeWork) {
        let mut texts: Vec<String> = vec![String::new(); self.texts.len()];
        for (Text(t), id) in self.texts {
            if let Some(slot) = texts.get_mut(id as usize) {
                *slot = t;
            }
        }
        let mut compared = 0u64;
        let mut by_text: Vec<u32> = (0..texts.len() as u32).collect();
        by_text.sort_unstable_by(|&a, &b| {
            compared += 1;
            texts[a as usize].cmp(&texts[b as usize])
        });
        let mut rank = vec![0u32; texts.len()];
        for (r, &id) in by_text.iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        let mut nodes = self.nodes;
        for i in 0..nodes.len() {
            let mut kids = std::mem::take(&mut nodes[i].children);
            kids.sort_unstable_by(|&a, &b| {
                let (a, b) = (&nodes[a as usize], &nodes[b as usize]);
                b.bytes
                    .cmp(&a.bytes)
                    .then_with(|| rank[a.frame as usize].cmp(&rank[b.frame as usize]))
            });
            nodes[i].children = kids;
        }
        let work = TreeWork {
            levels: self.levels,
            nodes: nodes.len() as u64,
            key_compares: 0,
            text_compares: compared,
        };
        let mut root = to_node(&nodes, &texts, 0);
        root.frame = "(all)".into();
        (root, work)
    }
}

/// Node `i` of the arena and everything under it as a [`TreeNode`].
fn to_node(nodes: &[Slot], texts: &[String], i: u32) -> TreeNode {
    let Some(n) = nodes.get(i as usize) else {
        return TreeNode::default();
    };
    TreeNode {
        frame: texts.get(n.frame as usize).cloned().unwrap_or_default(),
        bytes: n.bytes,
        count: n.count,
        self_bytes: n.self_bytes,
        self_count: n.self_count,
        children: n
            .children
            .iter()
            .map(|&c| to_node(nodes, texts, c))
            .collect(),
        omitted_bytes: 0,
        omitted_count: 0,
    }
}

/// For frames kept as parts (long file names), each file's verdict and shown suffix, worked
/// out once: whether it is library code, and where its printed form starts (after the
/// project root, or at its library path), so a long name shared by many frames is read once.
#[derive(Default)]
struct FileVerdicts(FxHashMap<StrId, (bool, usize)>);

impl FileVerdicts {
    fn of(&mut self, view: &FrameView, id: StrId, fr: &Frame<'_>) -> (bool, usize) {
        *self.0.entry(id).or_insert_with(|| {
            let internal = view.rules.is_internal(fr);
            let shown = if internal {
                short_library_path(fr.file)
            } else {
                fr.file.strip_prefix(view.root.as_str()).unwrap_or(fr.file)
            };
            (internal, fr.file.len() - shown.len())
        })
    }
}

/// A path's levels as they are found, outermost first: runs of one text folded, the middle
/// of a long path left out as it goes (memory bounded by the levels kept).
#[derive(Default)]
struct Levels {
    /// The outermost levels: (text, frames in its run).
    head: Vec<(String, u64)>,
    /// The innermost levels so far.
    tail: VecDeque<(String, u64)>,
    /// Frames left out between the two.
    left_out: u64,
    /// Frames pushed so far.
    frames: u64,
}

impl Levels {
    fn last(&self) -> Option<&str> {
        self.tail
            .back()
            .or_else(|| self.head.last())
            .map(|(t, _)| t.as_str())
    }

    /// One more frame of the last level's text.
    fn repeat(&mut self) {
        let last = match self.tail.back_mut() {
            Some(l) => Some(l),
            None => self.head.last_mut(),
        };
        if let Some((_, run)) = last {
            *run += 1;
            self.frames += 1;
        }
    }

    fn push(&mut self, text: String) {
        self.frames += 1;
        let last = match self.tail.back_mut() {
            Some(l) => Some(l),
            None => self.head.last_mut(),
        };
        if let Some((t, run)) = last.filter(|(t, _)| *t == text) {
            let _ = t;
            *run += 1;
            return;
        }
        match () {
            _ if self.head.len() < PATH_OUTER => self.head.push((text, 1)),
            _ => {
                self.tail.push_back((text, 1));
                if self.tail.len() > PATH_INNER {
                    if let Some((_, run)) = self.tail.pop_front() {
                        self.left_out += run;
                    }
                }
            }
        }
    }

    /// The levels' texts: a run as `text (×N)`, the left-out middle as `… N frames …`.
    fn finish(self) -> Vec<String> {
        let shown = |(t, run): (String, u64)| {
            if run == 1 {
                t
            } else {
                format!("{} (×{})", clip_to(&t, TEXT_CAP - 32), grouped(run))
            }
        };
        let mut out: Vec<String> = self.head.into_iter().map(shown).collect();
        if self.left_out > 0 {
            out.push(format!("… {} frames …", grouped(self.left_out)));
        }
        out.extend(self.tail.into_iter().map(shown));
        out
    }
}

/// A stack's levels, outermost first (bounded, see the module's doc).
fn path_of(
    trace: &Trace,
    sid: StackId,
    view: &FrameView,
    mode: TreeFrames,
    files: &mut FileVerdicts,
) -> Vec<String> {
    let strings = &trace.strings;
    let mut path = Levels::default();
    // The previous frame and whether it made a level: a frame repeated at once (a
    // recursion) repeats that level without being read again.
    let mut prev: Option<(StrId, u64)> = None;
    for &id in strings.stack(sid).iter().rev() {
        if let Some((p, levels)) = prev {
            if p == id {
                if levels != path.frames {
                    path.repeat();
                }
                continue;
            }
        }
        prev = Some((id, path.frames));
        // A frame kept as parts, readable from its parts (as `FrameView::show` prints it).
        if let Some((file_id, line, name_id)) = strings.frame_ids(id) {
            let (file, name) = (strings.text(file_id), strings.text(name_id));
            if let (Ok(line), false, false) = (u64::try_from(line), file.is_empty(), has_fx(name)) {
                if file.starts_with("??") {
                    continue;
                }
                let fr = Frame {
                    file,
                    line: Some(line),
                    name,
                };
                let (internal, from) = files.of(view, file_id, &fr);
                if mode == TreeFrames::All || !internal {
                    path.push(joined(&file[from..], &format!(":{line} "), name));
                }
                continue;
            }
        }
        let text = strings.str(id);
        if text.starts_with("??") {
            continue;
        }
        let fr = parse_frame(&text);
        if mode == TreeFrames::All || !view.rules.is_internal(&fr) {
            path.push(view.show(&fr));
        }
    }
    if mode == TreeFrames::User {
        // The innermost op or function says what the user frame called.
        let inner = view.innermost(trace, sid);
        if !inner.is_empty() && path.last().is_none_or(|l| !l.ends_with(inner.as_str())) {
            path.push(inner);
        }
    }
    path.finish()
}

impl TreeNode {
    /// The top of the tree: `depth` levels below this node at most, the `width` biggest
    /// children of each node; what is left out is counted in `omitted_bytes`/`omitted_count`,
    /// so `bytes = self_bytes + Σ children.bytes + omitted_bytes` still holds at every node.
    pub fn bounded(&self, depth: usize, width: usize) -> TreeNode {
        let keep = if depth == 0 { 0 } else { width };
        let children: Vec<TreeNode> = self
            .children
            .iter()
            .take(keep)
            .map(|c| c.bounded(depth.saturating_sub(1), width))
            .collect();
        let left = &self.children[children.len().min(self.children.len())..];
        TreeNode {
            frame: self.frame.clone(),
            bytes: self.bytes,
            count: self.count,
            self_bytes: self.self_bytes,
            self_count: self.self_count,
            children,
            omitted_bytes: self.omitted_bytes + left.iter().map(|c| c.bytes).sum::<u64>(),
            omitted_count: self.omitted_count + left.iter().map(|c| c.count).sum::<usize>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Category, EventKind, StorageKind, Ts};

    /// Levels of a stack whose frames are kept as parts (long file names) equal the levels
    /// of the same frames kept as text, in both modes.
    #[test]
    fn frames_kept_as_parts_give_the_levels_of_their_text() {
        let long = format!("/home/me/{}/model.py", "p".repeat(300));
        let lib = format!(
            "/usr/lib/python3.11/site-packages/{}/torch/nn/f.py",
            "q".repeat(300)
        );
        let frames = [
            (lib.as_str(), 1777, "relu"),
            (&long, 44, "forward"),
            (&long, 9, "main"),
        ];
        let mut parts = Trace::new("cuda:0", "t", "test");
        let mut text = Trace::new("cuda:0", "t", "test");
        let p: Vec<StrId> = frames
            .iter()
            .map(|&(f, l, n)| parts.strings.intern_frame(f, l, n))
            .collect();
        let x: Vec<StrId> = frames
            .iter()
            .map(|&(f, l, n)| text.strings.intern(&format!("{f}:{l}:{n}")))
            .collect();
        assert!(
            parts.strings.frame_parts(p[0]).is_some() && text.strings.frame_parts(x[0]).is_none()
        );
        let (sp, sx) = (
            parts.strings.intern_stack(&p),
            text.strings.intern_stack(&x),
        );
        for mode in [TreeFrames::User, TreeFrames::All] {
            let vp = FrameView::new(&parts, &Default::default());
            let vx = FrameView::new(&text, &Default::default());
            assert_eq!(vp.root, vx.root);
            let a = path_of(&parts, sp, &vp, mode, &mut FileVerdicts::default());
            let b = path_of(&text, sx, &vx, mode, &mut FileVerdicts::default());
            assert_eq!(a, b, "{mode:?}");
            assert!(
                a.iter().any(|l| l.ends_with("model.py:44 forward")),
                "{a:?}"
            );
        }
    }

    fn build(stacks: &[(&[&str], u64)]) -> (Trace, Vec<AllocId>) {
        let mut t = Trace::new("cuda:0", "t", "test");
        let stacks: Vec<(Vec<StrId>, u64)> = stacks
            .iter()
            .map(|(frames, size)| (frames.iter().map(|f| t.strings.intern(f)).collect(), *size))
            .collect();
        let ids = live(&mut t, &stacks);
        (t, ids)
    }

    /// One storage live per stack (frames innermost first, as a trace holds them).
    fn live(t: &mut Trace, stacks: &[(Vec<StrId>, u64)]) -> Vec<AllocId> {
        let mut ids = Vec::new();
        for (i, (frames, size)) in stacks.iter().enumerate() {
            let sid = t.strings.intern_stack(frames);
            t.push_event(Ts(i as i64), EventKind::Alloc);
            let name = t.strings.intern("");
            let id = t.open(
                crate::trace::Bytes(*size),
                Category::Activation,
                StorageKind::Block,
                name,
                sid,
                i as u64,
            );
            ids.push(id);
        }
        ids
    }

    /// The tree as it was built before interning (each child found by scanning its
    /// siblings' texts): the oracle the interned build must equal, node for node.
    fn scanned_tree(
        trace: &Trace,
        ids: &[AllocId],
        view: &FrameView,
        mode: TreeFrames,
    ) -> TreeNode {
        fn insert(node: &mut TreeNode, path: &[String], bytes: u64, count: usize) {
            node.bytes = node.bytes.saturating_add(bytes);
            node.count += count;
            let Some((first, rest)) = path.split_first() else {
                node.self_bytes = node.self_bytes.saturating_add(bytes);
                node.self_count += count;
                return;
            };
            let i = match node.children.iter().position(|c| &c.frame == first) {
                Some(i) => i,
                None => {
                    node.children.push(TreeNode {
                        frame: first.clone(),
                        ..TreeNode::default()
                    });
                    node.children.len() - 1
                }
            };
            insert(&mut node.children[i], rest, bytes, count);
        }
        fn sort(node: &mut TreeNode) {
            node.children
                .sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.frame.cmp(&b.frame)));
            for c in &mut node.children {
                sort(c);
            }
        }
        let mut root = TreeNode {
            frame: "(all)".into(),
            ..TreeNode::default()
        };
        let mut files = FileVerdicts::default();
        let mut sids: Vec<StackId> = ids.iter().map(|&id| trace.stack_id(id)).collect();
        sids.sort_by_key(|s| s.0);
        sids.dedup();
        for sid in sids {
            let (bytes, count) = ids
                .iter()
                .filter(|&&id| trace.stack_id(id) == sid)
                .fold((0, 0), |(b, c), &id| (b + trace.size(id).0, c + 1));
            insert(
                &mut root,
                &path_of(trace, sid, view, mode, &mut files),
                bytes,
                count,
            );
        }
        sort(&mut root);
        root
    }

    /// Stacks of every shape the tree meets: shared outer frames, ties in bytes, a library
    /// frame, a recursion run, a long path cut in the middle, an empty stack, long file
    /// names kept as parts. The interned build equals the scanning one in both modes.
    #[test]
    fn interned_build_equals_the_sibling_scan() {
        let mut t = Trace::new("cuda:0", "t", "test");
        let long = format!("/p/{}/m.py", "q".repeat(2000));
        let lib = "/venv/lib/python3.11/site-packages/torch/nn/functional.py";
        let mut stacks: Vec<(Vec<StrId>, u64)> = Vec::new();
        for i in 0..60i64 {
            let mut f = vec![
                t.strings.intern_frame(lib, 1777 + i % 2, "relu"),
                t.strings.intern_frame(&long, i % 7, "forward"),
                t.strings.intern_frame("/p/train.py", 9 + i % 3, "main"),
            ];
            if i % 5 == 0 {
                let r = t.strings.intern_frame("/p/r.py", 3, "rec");
                f.splice(1..1, std::iter::repeat_n(r, 40 + i as usize));
            }
            if i % 11 == 0 {
                let deep: Vec<StrId> = (0..300)
                    .map(|k| t.strings.intern_frame("/p/d.py", k, "d"))
                    .collect();
                f.splice(1..1, deep);
            }
            stacks.push((f, 100 * (1 + (i as u64 % 4))));
        }
        stacks.push((Vec::new(), 7));
        // Innermost frames that name no function: unsymbolised, a thread's entry, nameless.
        let odd: Vec<StrId> = ["??:0:0x7f00", "/lib/libc.so.6:0:start_thread", "/p/n.py:3:"]
            .iter()
            .map(|f| t.strings.intern(f))
            .collect();
        let user = t.strings.intern("/p/a.py:1:f");
        stacks.push((vec![odd[0], odd[1], odd[2], user], 5));
        stacks.push((vec![odd[1]], 3));
        let ids = live(&mut t, &stacks);
        let view = FrameView::new(&t, &Default::default());
        // The tree's innermost function is the one the whole stack's reading gives.
        for &id in &ids {
            let sid = t.stack_id(id);
            assert_eq!(view.innermost(&t, sid), view.of_stack(&t, sid).innermost);
        }
        let odd_sid = |k: usize| t.stack_id(ids[ids.len() - k]);
        assert_eq!(
            (
                view.innermost(&t, odd_sid(2)),
                view.innermost(&t, odd_sid(1))
            ),
            ("f".to_string(), String::new())
        );
        for mode in [TreeFrames::User, TreeFrames::All] {
            let got = stack_tree(&t, &ids, &view, mode);
            assert_eq!(got, scanned_tree(&t, &ids, &view, mode), "{mode:?}");
            assert!(got.children.len() >= 3, "{mode:?}: {}", got.children.len());
        }
    }

    /// Issue 47's hostile shapes: `n` storages of distinct lines under one parent, whose
    /// texts share a 1 KiB head (a 1 MiB file name, clipped) and differ only at the end,
    /// then the same storages under a 100-level chain. Every count is bounded by the levels
    /// held: a child found by scanning its siblings makes n²/2 ≈ 50,000,000 key or text
    /// comparisons here, past each bound below by over 100×.
    #[test]
    fn building_is_linear_in_the_levels_held() {
        let n = 10_000usize;
        let file = format!("/long/{}/train.py", "d".repeat(1 << 20));
        let mut t = Trace::new("cuda:0", "t", "test");
        let chain: Vec<StrId> = (0..100)
            .map(|k| t.strings.intern_frame("/p/c.py", k, "c"))
            .collect();
        // The file's text interned once (as a reader shares it), each frame of its parts.
        let (file, name) = (t.strings.intern(&file), t.strings.intern("forward"));
        let mut stacks = Vec::new();
        for deep in [false, true] {
            for i in 0..n {
                let mut f = vec![t.strings.intern_frame_ids(file, i as i64, name)];
                if deep {
                    f.extend(chain.iter().rev());
                }
                stacks.push((f, 512));
            }
        }
        let ids = live(&mut t, &stacks);
        let view = FrameView::new(&t, &Default::default());
        let (tree, work) = stack_tree_counted(&t, &ids, &view, TreeFrames::All);
        // Ground truth from the construction: n paths of 1 level, n of 101.
        let levels = (n + n * 101) as u64;
        assert_eq!(work.levels, levels);
        // The root, its n + 1 children, the chain's 99 more, its last level's n.
        assert_eq!(work.nodes, (1 + n + 1 + 99 + n) as u64);
        assert_eq!(tree.children.len(), n + 1);
        let texts = (n + 100) as u64;
        assert!(
            work.key_compares <= 2 * levels,
            "{} key comparisons for {levels} levels",
            work.key_compares
        );
        // One per level found interned, and the texts ordered once (n log n).
        let log = 64 - texts.leading_zeros() as u64;
        assert!(
            work.text_compares <= 2 * levels + 2 * texts * log,
            "{} text comparisons for {levels} levels, {texts} texts",
            work.text_compares
        );
        // The siblings' texts share their first 1,000 bytes and differ at the end.
        let a = &tree.children[1].frame;
        let b = &tree.children[2].frame;
        assert!(a.len() > 1000 && a.len() <= TEXT_CAP, "{}", a.len());
        assert_eq!(a[..1000], b[..1000]);
        assert_ne!(a, b);
    }

    #[test]
    fn user_tree_sums_and_collapses() {
        let relu = "/venv/lib/python3.11/site-packages/torch/nn/functional.py:1777:relu";
        let (t, ids) = build(&[
            (&[relu, "/p/m.py:3:forward", "/p/train.py:9:main"], 100),
            (&["/p/m.py:4:forward", "/p/train.py:9:main"], 50),
            (&[], 7),
        ]);
        let view = FrameView::new(&t, &Default::default());
        assert_eq!(view.root, "/p/");
        let tree = stack_tree(&t, &ids, &view, TreeFrames::User);
        assert_eq!((tree.bytes, tree.count, tree.self_bytes), (157, 3, 7));
        let main = &tree.children[0];
        assert_eq!((main.frame.as_str(), main.bytes), ("train.py:9 main", 150));
        assert_eq!(main.children[0].frame, "m.py:3 forward");
        assert_eq!(main.children[0].children[0].frame, "relu");
        assert_eq!(main.children[1].bytes, 50);
        let all = stack_tree(&t, &ids, &view, TreeFrames::All);
        let leaf = &all.children[0].children[0].children[0];
        assert_eq!(leaf.frame, "torch/nn/functional.py:1777 relu");
        let b = tree.bounded(1, 1);
        assert_eq!(b.children.len(), 1);
        assert!(b.children[0].children.is_empty());
        assert_eq!(b.children[0].omitted_bytes, 150);
        let b0 = tree.bounded(0, 5);
        assert_eq!((b0.omitted_bytes, b0.omitted_count), (150, 2));
    }
}

//! The live panel's tree grouping: the core's stack tree (`analysis::tree`, root = outermost
//! frame) flattened into the rows on screen — top-level nodes first, an expanded node's
//! children under it — filtered by a query (a node shows when its frame or a descendant's
//! matches; matches are revealed). Pure functions, called by the reducer; one visit per
//! node whatever the tree's depth or width (a node's path is a fixed-size key, not its
//! frames joined).

use memtide_core::analysis::TreeNode;
use rustc_hash::FxHashSet;
use std::hash::{Hash, Hasher};

/// One visible row of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeRow {
    /// 0 for the root's children.
    pub depth: usize,
    /// The node's path (its frames from the root): its key in the expanded set.
    pub path: TreePath,
    pub frame: String,
    pub bytes: u64,
    pub count: usize,
    /// Bytes of storages whose path ends at this node.
    pub self_bytes: u64,
    pub children: usize,
    pub expanded: bool,
    /// Its frame matches the filter.
    pub matched: bool,
}

/// A node's path from the root as a 128-bit digest of its frames, so the same frames give
/// the same key in the tree of another instant, and a key costs the same at any depth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TreePath(u64, u64);

impl TreePath {
    /// The path of `frame` under this one.
    pub fn child(self, frame: &str) -> TreePath {
        let half = |seed: u64| {
            let mut h = std::hash::DefaultHasher::new();
            (seed, self.0, self.1, frame).hash(&mut h);
            h.finish()
        };
        TreePath(half(1), half(2))
    }
}

/// The visible rows of `root`'s tree: children of expanded nodes, and with a non-empty
/// `filter` (case-insensitive substring of a frame) only nodes on a path to a match, those
/// paths opened.
pub fn flatten(root: &TreeNode, expanded: &FxHashSet<TreePath>, filter: &str) -> Vec<TreeRow> {
    let mut out = Vec::new();
    let f = filter.to_lowercase();
    for c in &root.children {
        walk(c, 0, TreePath::default(), expanded, &f, &mut out);
    }
    out
}

/// Whether `frame` holds `f` (lowercase), ignoring case: every frame the filter reads.
fn matches(frame: &str, f: &str) -> bool {
    #[cfg(test)]
    tests::READ.with(|r| r.set(r.get() + 1));
    frame.to_lowercase().contains(f)
}

/// Puts `n`'s row and its shown descendants' in `out`; returns whether `n` or a
/// descendant matches `f`. With a filter every node is visited once, its row pushed and
/// taken back when nothing under it matches; without one, only open nodes are entered.
fn walk(
    n: &TreeNode,
    depth: usize,
    parent: TreePath,
    expanded: &FxHashSet<TreePath>,
    f: &str,
    out: &mut Vec<TreeRow>,
) -> bool {
    let path = parent.child(&n.frame);
    let matched = !f.is_empty() && matches(&n.frame, f);
    let at = out.len();
    out.push(TreeRow {
        depth,
        path,
        frame: n.frame.clone(),
        bytes: n.bytes,
        count: n.count,
        self_bytes: n.self_bytes,
        children: n.children.len(),
        expanded: false,
        matched,
    });
    let wanted = !n.children.is_empty() && expanded.contains(&path);
    let (shown, open) = if f.is_empty() {
        if wanted {
            for c in &n.children {
                walk(c, depth + 1, path, expanded, f, out);
            }
        }
        (true, wanted)
    } else {
        // A child's rows stay only where something under it matches.
        let mut below = false;
        for c in &n.children {
            below |= walk(c, depth + 1, path, expanded, f, out);
        }
        (matched || below, wanted || below)
    };
    if !shown {
        out.truncate(at);
        return false;
    }
    if let Some(r) = out.get_mut(at) {
        r.expanded = open;
    }
    shown
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn node(frame: &str, bytes: u64, children: Vec<TreeNode>) -> TreeNode {
        TreeNode {
            frame: frame.into(),
            bytes,
            count: 1,
            children,
            ..TreeNode::default()
        }
    }

    fn sample() -> TreeNode {
        node(
            "(all)",
            30,
            vec![
                node(
                    "train.py:10 main",
                    20,
                    vec![node("model.py:5 forward", 20, vec![])],
                ),
                node("data.py:3 load", 10, vec![]),
            ],
        )
    }

    #[test]
    fn collapsed_shows_top_level_and_expanding_shows_children() {
        let t = sample();
        let mut ex = FxHashSet::default();
        let rows = flatten(&t, &ex, "");
        let frames: Vec<&str> = rows.iter().map(|r| r.frame.as_str()).collect();
        assert_eq!(frames, ["train.py:10 main", "data.py:3 load"]);
        assert!(!rows[0].expanded);
        ex.insert(rows[0].path);
        let rows = flatten(&t, &ex, "");
        let frames: Vec<&str> = rows.iter().map(|r| r.frame.as_str()).collect();
        assert_eq!(
            frames,
            ["train.py:10 main", "model.py:5 forward", "data.py:3 load"]
        );
        assert_eq!(rows[1].depth, 1);
    }

    thread_local! {
        /// Frames read by the filter on this thread.
        pub(super) static READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    fn read() -> u64 {
        READ.with(|r| r.get())
    }

    /// `width` chains of `depth` levels under the root, every level's text 1 KiB long and
    /// shared by all but its last bytes; the innermost of chain 7 says `needle`.
    fn comb(width: usize, depth: usize) -> (TreeNode, usize) {
        let head = "x".repeat(1000);
        let mut nodes = 0;
        let children = (0..width)
            .map(|w| {
                let mut n = node(&format!("{head} {w}:{depth} leaf"), 1, vec![]);
                if w == 7 {
                    n.frame.push_str(" needle");
                }
                nodes += 1;
                for d in (0..depth - 1).rev() {
                    n = node(&format!("{head} {w}:{d}"), 1, vec![n]);
                    nodes += 1;
                }
                n
            })
            .collect();
        (node("(all)", 1, children), nodes)
    }

    /// A filter reads each frame once (a node's own match and its subtree's are found in
    /// the same visit): reading a subtree again for every ancestor would read the matching
    /// chain's 129 levels some 65 times over. The rows are that chain, open to its match.
    #[test]
    fn a_filter_reads_every_frame_once() {
        let (t, nodes) = comb(100, 129);
        let before = read();
        let rows = flatten(&t, &FxHashSet::default(), "NEEDLE");
        assert_eq!(read() - before, nodes as u64);
        assert_eq!(rows.len(), 129);
        assert!(rows[..128].iter().all(|r| r.expanded && !r.matched));
        assert!(rows[128].matched && rows[128].frame.ends_with("needle"));
        assert_eq!(rows[128].depth, 128);
        // Without a filter, nothing is read and only the top level shows.
        let before = read();
        let rows = flatten(&t, &FxHashSet::default(), "");
        assert_eq!((read() - before, rows.len()), (0, 100));
    }

    /// 100,000 top-level children: one row each, one frame read each; expanding a node
    /// deep in a chain shows its child by the same key in a tree built again.
    #[test]
    fn wide_and_deep_trees_flatten_in_one_visit_per_node() {
        let (t, _) = comb(100_000, 1);
        let before = read();
        let rows = flatten(&t, &FxHashSet::default(), "leaf");
        assert_eq!(read() - before, 100_000);
        assert_eq!(rows.len(), 100_000);
        let (t, _) = comb(3, 129);
        let mut ex = FxHashSet::default();
        let mut rows = flatten(&t, &ex, "");
        for d in 0..128 {
            // Open chain 0's deepest row so far.
            let deepest = rows.iter().position(|r| r.depth == d).unwrap();
            ex.insert(rows[deepest].path);
            rows = flatten(&comb(3, 129).0, &ex, "");
        }
        assert_eq!(rows.len(), 3 + 128);
        assert_eq!(rows[128].depth, 128);
        assert!(
            rows[128].frame.ends_with(" 0:129 leaf"),
            "{}",
            &rows[128].frame[1000..]
        );
    }

    #[test]
    fn a_filter_keeps_paths_to_matches_open() {
        let t = sample();
        let rows = flatten(&t, &FxHashSet::default(), "FORWARD");
        let frames: Vec<&str> = rows.iter().map(|r| r.frame.as_str()).collect();
        assert_eq!(frames, ["train.py:10 main", "model.py:5 forward"]);
        assert!(rows[1].matched && !rows[0].matched);
        assert!(flatten(&t, &FxHashSet::default(), "nothing").is_empty());
    }
}

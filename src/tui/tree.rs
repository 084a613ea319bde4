//! The live panel's tree grouping: the core's stack tree (`analysis::tree`, root = outermost
//! frame) flattened into the rows on screen — top-level nodes first, an expanded node's
//! children under it — filtered by a query (a node shows when its frame or a descendant's
//! matches; matches are revealed). Pure functions, called by the reducer.

use memtide_core::analysis::tree::TreeNode;
use rustc_hash::FxHashSet;

/// One visible row of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeRow {
    /// 0 for the root's children.
    pub depth: usize,
    /// The node's path (frames from the root joined by [`SEP`]): its key in the expanded set.
    pub path: String,
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

/// Separates the frames of a node's path.
pub const SEP: char = '\u{1f}';

/// The visible rows of `root`'s tree: children of expanded nodes, and with a non-empty
/// `filter` (case-insensitive substring of a frame) only nodes on a path to a match, those
/// paths opened.
pub fn flatten(root: &TreeNode, expanded: &FxHashSet<String>, filter: &str) -> Vec<TreeRow> {
    let mut out = Vec::new();
    let f = filter.to_lowercase();
    for c in &root.children {
        walk(c, 0, String::new(), expanded, &f, &mut out);
    }
    out
}

/// Whether `n` or a descendant matches `f`.
fn has_match(n: &TreeNode, f: &str) -> bool {
    n.frame.to_lowercase().contains(f) || n.children.iter().any(|c| has_match(c, f))
}

fn walk(
    n: &TreeNode,
    depth: usize,
    parent: String,
    expanded: &FxHashSet<String>,
    f: &str,
    out: &mut Vec<TreeRow>,
) {
    if !f.is_empty() && !has_match(n, f) {
        return;
    }
    let path = if parent.is_empty() {
        n.frame.clone()
    } else {
        format!("{parent}{SEP}{}", n.frame)
    };
    let below_match = !f.is_empty() && n.children.iter().any(|c| has_match(c, f));
    let open = !n.children.is_empty() && (expanded.contains(&path) || below_match);
    out.push(TreeRow {
        depth,
        path: path.clone(),
        frame: n.frame.clone(),
        bytes: n.bytes,
        count: n.count,
        self_bytes: n.self_bytes,
        children: n.children.len(),
        expanded: open,
        matched: !f.is_empty() && n.frame.to_lowercase().contains(f),
    });
    if open {
        for c in &n.children {
            walk(c, depth + 1, path.clone(), expanded, f, out);
        }
    }
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
        ex.insert(rows[0].path.clone());
        let rows = flatten(&t, &ex, "");
        let frames: Vec<&str> = rows.iter().map(|r| r.frame.as_str()).collect();
        assert_eq!(
            frames,
            ["train.py:10 main", "model.py:5 forward", "data.py:3 load"]
        );
        assert_eq!(rows[1].depth, 1);
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

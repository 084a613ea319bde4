//! How the reports (text and Markdown) show a stack frame: shared by `summary`, `check`,
//! `diff` and `markdown`, below all of them.

use memtide_core::analysis::live::LiveEntry;

/// A frame without the site-packages prefix (`torch/nn/functional.py:1777:relu`).
pub fn short_frame(f: &str) -> &str {
    for marker in ["site-packages/", "dist-packages/"] {
        if let Some(i) = f.rfind(marker) {
            return &f[i + marker.len()..];
        }
    }
    f
}

/// A live row's frame as the reports show it: the user frame (`file.py:123 function`) with
/// the innermost op beside it (`train.py:41 step  ← aten::addmm`), or the top frame as the
/// file gives it when `all_frames` or when the stack has no user frame.
pub fn shown_frame(e: &LiveEntry, all_frames: bool) -> String {
    if all_frames || e.user_frame.is_empty() {
        short_frame(&e.frame).to_string()
    } else if e.innermost.is_empty() || e.user_frame.ends_with(e.innermost.as_str()) {
        e.user_frame.clone()
    } else {
        format!("{}  ← {}", e.user_frame, e.innermost)
    }
}

//! How the reports (text and Markdown) show a stack frame: shared by `summary`, `check`,
//! `diff` and `markdown`, below all of them.

use memtide_core::analysis::{Grown, LiveEntry};

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
    shown_frame_of(&e.frame, &e.user_frame, &e.innermost, all_frames)
}

/// [`shown_frame`] from a row's top frame, user frame and innermost op.
pub fn shown_frame_of(frame: &str, user_frame: &str, innermost: &str, all_frames: bool) -> String {
    if all_frames || user_frame.is_empty() {
        short_frame(frame).to_string()
    } else if innermost.is_empty() || user_frame.ends_with(innermost) {
        user_frame.to_string()
    } else {
        format!("{user_frame}  ← {innermost}")
    }
}

/// An owner's frame, short, with A's line where the owner moved between the runs
/// (`opt.py:73 step (A: line 76)`).
pub fn moved_frame(x: &Grown) -> String {
    let frame = short_frame(&x.frame);
    match x.moved_from() {
        Some(line) => format!("{frame} (A: line {line})"),
        None => frame.to_string(),
    }
}

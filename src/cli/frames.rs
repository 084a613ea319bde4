//! How the reports (text and Markdown) show a stack frame: shared by `summary` and
//! `markdown`, below both.

/// A frame without the site-packages prefix (`torch/nn/functional.py:1777:relu`).
pub fn short_frame(f: &str) -> &str {
    for marker in ["site-packages/", "dist-packages/"] {
        if let Some(i) = f.rfind(marker) {
            return &f[i + marker.len()..];
        }
    }
    f
}

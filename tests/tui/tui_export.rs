//! The explorer's `e`: the visible range is written as SVG next to the trace, and the status
//! line says where.

use memtide::tui::testing::Harness;
use std::path::Path;

#[test]
fn e_exports_the_view_next_to_the_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/train-3steps.jsonl");
    let trace = dir.path().join("run.jsonl");
    std::fs::copy(&src, &trace).expect("copy");
    let mut h = Harness::open(&trace, 100, 30);
    h.press("e");
    let svgs: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .collect();
    assert_eq!(svgs.len(), 1, "one picture written: {svgs:?}");
    let text = std::fs::read_to_string(&svgs[0]).expect("svg");
    assert!(text.starts_with("<svg"), "{}", &text[..80.min(text.len())]);
    assert!(
        text.contains("9,999,220,736 B"),
        "the peak of the whole view"
    );
    let name = svgs[0]
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_string();
    assert!(h.screen().contains("wrote"), "{}", h.screen());
    assert!(name.starts_with("run.jsonl.view-0-"), "{name}");
    // Zoomed in, the file names the range it shows.
    h.press("+++");
    h.press("e");
    let n = std::fs::read_dir(dir.path()).expect("dir").count();
    assert_eq!(n, 3, "the trace and two pictures");
}

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

/// Issue 47 item 6: an export at the name of an input read through `--oom-message` is
/// refused, and the input is left as it was (the explorer's inputs are the door's
/// `OpenOptions::side_files`, `--nsys` among them: tested in the core).
#[test]
fn e_never_overwrites_a_side_file_at_the_export_s_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("run.jsonl");
    std::fs::copy(root.join("sample-traces/train-3steps.jsonl"), &trace).expect("copy");
    // The name the export takes, learnt from a first export in another directory.
    let name = {
        let other = tempfile::tempdir().expect("tempdir");
        let t = other.path().join("run.jsonl");
        std::fs::copy(&trace, &t).expect("copy");
        Harness::open(&t, 100, 30).press("e");
        std::fs::read_dir(other.path())
            .expect("dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .find(|n| n.to_string_lossy().ends_with(".svg"))
            .expect("an export")
    };
    let message = root.join("tests/fixtures/oom/cuda_oom_message.txt");
    {
        let at = dir.path().join(&name);
        std::fs::copy(&message, &at).expect("copy the side file");
        let before = std::fs::read(&at).expect("read");
        let opts = memtide_core::open::OpenOptions {
            oom_message: Some(memtide_core::open::read_oom_message(&at).expect("message")),
            ..Default::default()
        };
        let app = memtide::tui::app::App::new(
            trace.clone(),
            opts,
            memtide::tui::theme::Theme::default(),
            false,
        );
        let mut h = Harness::with_app(app, 100, 30);
        h.press("e");
        assert_eq!(std::fs::read(&at).expect("read"), before, "overwritten");
        assert!(
            h.screen().contains("export failed") && h.screen().contains("is the input"),
            "{}",
            h.screen()
        );
    }
}

//! `memtide plot`: the SVG parses as XML, the stacked height of the peak column equals the
//! peak to the pixel, the label carries the exact bytes of `summary --json`, and a PNG of the
//! sample decodes to the asked size.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn memtide() -> Command {
    Command::new(env!("CARGO_BIN_EXE_memtide"))
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample-traces")
        .join(name)
}

fn plot(file: &Path, out: &Path, extra: &[&str]) {
    let o = memtide()
        .arg("plot")
        .arg(file)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn peak_bytes(file: &Path) -> u64 {
    let o = memtide()
        .args(["summary", "--json"])
        .arg(file)
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    v["peak"]["bytes"].as_u64().expect("peak")
}

fn attr(n: roxmltree::Node, k: &str) -> f64 {
    n.attribute(k)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("attribute {k}"))
}

#[test]
fn svg_peak_column_is_the_peak_to_the_pixel() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in [
        "train-3steps.jsonl",
        "cuda-oom.pickle",
        "cuda-oom.pt.trace.json.gz",
    ] {
        let f = sample(name);
        let out = dir.path().join("p.svg");
        plot(&f, &out, &[]);
        let text = std::fs::read_to_string(&out).expect("svg");
        let doc = roxmltree::Document::parse(&text).expect("the SVG is XML");
        let chart = doc
            .descendants()
            .find(|n| n.attribute("id") == Some("chart"))
            .expect("chart group");
        let (y0, ytop, top) = (
            attr(chart, "data-y0"),
            attr(chart, "data-ytop"),
            attr(chart, "data-top-bytes"),
        );
        let peak = peak_bytes(&f);
        assert!(top >= peak as f64, "{name}: the axis holds the peak");
        let col = doc
            .descendants()
            .find(|n| n.attribute("id") == Some("peak-column"))
            .expect("peak column");
        assert_eq!(attr(col, "data-bytes") as u64, peak, "{name}");
        let stacked: f64 = col
            .children()
            .filter(|n| n.has_tag_name("rect"))
            .map(|r| attr(r, "height"))
            .sum();
        let want = peak as f64 / top * (y0 - ytop);
        // Each rectangle's height is written to 0.01 px.
        assert!(
            (stacked - want).abs() <= 0.05,
            "{name}: stacked {stacked} px, peak is {want} px"
        );
        let label = doc
            .descendants()
            .find(|n| n.attribute("id") == Some("peak-label"))
            .and_then(|n| n.text())
            .expect("peak label");
        let grouped: Vec<String> = peak
            .to_string()
            .as_bytes()
            .rchunks(3)
            .rev()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        assert!(
            label.contains(&format!("({} B)", grouped.join(","))),
            "{name}: {label}"
        );
        // One path per non-empty band, and the step marks of the sample.
        assert!(doc
            .descendants()
            .any(|n| n.attribute("data-band") == Some("persistent")));
        assert_eq!(
            doc.descendants()
                .filter(|n| n.attribute("class") == Some("step"))
                .count(),
            3,
            "{name}: three steps"
        );
    }
}

#[test]
fn svg_snapshot_of_a_small_plot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("small.svg");
    plot(
        &sample("train-3steps.jsonl"),
        &out,
        &["--width", "320", "--height", "160"],
    );
    insta::assert_snapshot!(std::fs::read_to_string(&out).expect("svg"));
}

#[test]
fn png_renders_at_the_asked_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("p.png");
    plot(
        &sample("cuda-oom.pickle"),
        &out,
        &["--width", "640", "--height", "300"],
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&out).expect("png"),
    ));
    let reader = decoder.read_info().expect("a PNG");
    let info = reader.info();
    assert_eq!((info.width, info.height), (640, 300));
}

#[test]
fn plot_refuses_bad_sizes_and_its_input() {
    let f = sample("train-3steps.jsonl");
    let o = memtide()
        .arg("plot")
        .arg(&f)
        .args(["-o", "/tmp/x.svg", "--width", "5"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("t.jsonl");
    std::fs::copy(&f, &copy).expect("copy");
    let o = memtide()
        .arg("plot")
        .arg(&copy)
        .arg("-o")
        .arg(&copy)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        std::fs::read(&copy).expect("read"),
        std::fs::read(&f).expect("read")
    );
}

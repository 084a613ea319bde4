//! `memtide plot`: the SVG parses as XML, the stacked height of the peak column equals the
//! peak to the pixel, the label carries the exact bytes of `summary --json`, and a PNG of the
//! sample decodes to the asked size.

use std::path::Path;

use crate::support::repo::memtide;

use crate::support::repo::sample;

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

fn plot_two(a: &Path, b: &Path, out: &Path, extra: &[&str]) {
    let o = memtide()
        .arg("plot")
        .arg(a)
        .arg(b)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn grouped(n: u64) -> String {
    n.to_string()
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join(",")
}

/// The points of every polyline of `class`, as (x, y).
fn points(doc: &roxmltree::Document, class: &str) -> Vec<(f64, f64)> {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some(class))
        .flat_map(|n| {
            n.attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').expect("x,y");
                    (x.parse().expect("x"), y.parse().expect("y"))
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn two_runs_on_one_scale_with_both_peaks_exact() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (a, b) in [
        ("train-3steps.jsonl", "train-leak.jsonl"),
        ("train-checkpointed.jsonl", "train-3steps.jsonl"),
        ("cuda-oom.pickle", "train-3steps.jsonl"),
    ] {
        let (fa, fb) = (sample(a), sample(b));
        let out = dir.path().join("d.svg");
        plot_two(&fa, &fb, &out, &[]);
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
        // Each file's peak from its own `summary --json`, run separately.
        for (k, f) in [("a", &fa), ("b", &fb)] {
            let peak = peak_bytes(f);
            assert!(top >= peak as f64, "{a} {b}: the scale holds both peaks");
            let dot = doc
                .descendants()
                .find(|n| n.attribute("id") == Some(&format!("peak-{k}")))
                .expect("peak marker");
            assert_eq!(attr(dot, "data-bytes") as u64, peak, "{a} {b} {k}");
            let want = y0 - peak as f64 / top * (y0 - ytop);
            assert!((attr(dot, "cy") - want).abs() <= 0.01, "{a} {b} {k}");
            // The run's line reaches its peak and nothing higher (to the 0.01 px written).
            let highest = points(&doc, &format!("total-{k}"))
                .into_iter()
                .map(|p| p.1)
                .fold(f64::INFINITY, f64::min);
            assert!(
                (highest - want).abs() <= 0.01,
                "{a} {b} {k}: {highest} vs {want}"
            );
            let label = doc
                .descendants()
                .find(|n| n.attribute("id") == Some(&format!("peak-label-{k}")))
                .and_then(|n| n.text())
                .expect("peak label");
            assert!(label.contains(&format!("({} B)", grouped(peak))), "{label}");
            let legend = doc
                .descendants()
                .find(|n| n.attribute("class") == Some(&format!("legend-{k}")))
                .and_then(|n| n.text())
                .expect("legend");
            let file = f.file_name().expect("name").to_string_lossy().into_owned();
            assert!(
                legend.starts_with(&format!("{} {file} · ", k.to_uppercase())),
                "{legend}"
            );
        }
        // Every sample has three step marks: the spans begin at steps 0, 1 and 2 (after the
        // setup before them), so three boundary lines; the lines stay inside the chart.
        assert_eq!(
            doc.descendants()
                .filter(|n| n.attribute("class") == Some("step"))
                .count(),
            3,
            "{a} {b}"
        );
        // The OOM sample's one OOM is marked in its run's colour; the JSONL samples have none.
        let ooms = |class: &str| {
            doc.descendants()
                .filter(|n| n.attribute("class") == Some(class))
                .count()
        };
        let want = |name: &str| usize::from(name == "cuda-oom.pickle");
        assert_eq!(
            (ooms("oom-a"), ooms("oom-b")),
            (want(a), want(b)),
            "{a} {b}"
        );
        for k in ["a", "b"] {
            for (x, y) in points(&doc, &format!("total-{k}")) {
                assert!((86.0..=1176.01).contains(&x) && (ytop..=y0).contains(&y));
            }
        }
    }
}

#[test]
fn two_runs_align_their_steps_on_the_same_columns() {
    // Step 1 of the plain run and of the leaky run occupy the same horizontal span, though
    // the runs have different event counts: the peak of each lies in the span named step 1
    // / step 2 (sample-traces/README.md: A peaks in step 1, B in step 2).
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("d.svg");
    plot_two(
        &sample("train-3steps.jsonl"),
        &sample("train-leak.jsonl"),
        &out,
        &[],
    );
    let text = std::fs::read_to_string(&out).expect("svg");
    let doc = roxmltree::Document::parse(&text).expect("xml");
    let bounds: Vec<f64> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("step"))
        .map(|n| attr(n, "x1"))
        .collect();
    let x = |id: &str| {
        attr(
            doc.descendants()
                .find(|n| n.attribute("id") == Some(id))
                .expect("marker"),
            "cx",
        )
    };
    let (xa, xb) = (x("peak-a"), x("peak-b"));
    assert!(
        bounds[1] < xa && xa < bounds[2],
        "A's peak in step 1: {xa} {bounds:?}"
    );
    assert!(bounds[2] < xb, "B's peak in step 2: {xb} {bounds:?}");
}

#[test]
fn two_run_snapshot_png_and_refusals() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("small.svg");
    let (a, b) = (
        sample("train-3steps.jsonl"),
        sample("train-checkpointed.jsonl"),
    );
    plot_two(&a, &b, &out, &["--width", "360", "--height", "200"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).display().to_string();
    insta::assert_snapshot!(std::fs::read_to_string(&out)
        .expect("svg")
        .replace(&root, "<repo>"));
    let png = dir.path().join("d.png");
    plot_two(&a, &b, &png, &["--width", "500", "--height", "200"]);
    let reader = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png).expect("png"),
    ))
    .read_info()
    .expect("a PNG");
    assert_eq!((reader.info().width, reader.info().height), (500, 200));
    let o = memtide()
        .arg("plot")
        .arg(&a)
        .arg(&b)
        .args(["-o", "/tmp/never.svg", "--window", "steady"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--window"));
    let o = memtide()
        .arg("plot")
        .arg(&a)
        .arg(&b)
        .args(["-o", "/tmp/never.svg", "--height", "150"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(!Path::new("/tmp/never.svg").exists());
}

#[test]
fn two_runs_with_faint_bands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (
        sample("train-3steps.jsonl"),
        sample("train-checkpointed.jsonl"),
    );
    let count = |extra: &[&str]| {
        let out = dir.path().join("b.svg");
        plot_two(&a, &b, &out, extra);
        let text = std::fs::read_to_string(&out).expect("svg");
        let doc = roxmltree::Document::parse(&text).expect("xml");
        let bands = |k: &str| -> Vec<String> {
            doc.descendants()
                .filter(|n| n.attribute("class") == Some(&format!("band-{k}")))
                .map(|n| n.attribute("data-band").expect("band").to_string())
                .collect()
        };
        (bands("a"), bands("b"))
    };
    // Both samples hold persistent, activation, workspace and external bytes (and no unknown).
    let want = ["persistent", "activation", "workspace", "external"];
    let (ba, bb) = count(&["--bands"]);
    assert_eq!(ba, want);
    assert_eq!(bb, want);
    assert_eq!(count(&[]), (vec![], vec![]));
    // --bands needs a second run.
    let o = memtide()
        .arg("plot")
        .arg(&a)
        .args(["-o", "/tmp/never.svg", "--bands"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
}

/// `--capacity` draws the capacity line the user gives, over the file's own figure.
#[test]
fn capacity_flag_draws_the_line_given() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("c.svg");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/train-3steps.jsonl");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(["plot", "--capacity", "12GiB", "-o"])
        .arg(&out)
        .arg(&sample)
        .status()
        .expect("runs");
    assert!(st.success());
    let svg = std::fs::read_to_string(&out).expect("svg");
    assert!(svg.contains("id=\"capacity\""), "no capacity line");
    assert!(svg.contains("capacity 12.00 GiB"), "not the given figure");
    assert!(
        !svg.contains("capacity 16.00 GiB"),
        "the file's own figure was drawn"
    );
}

//! The persistent split by what tensors are (issue 50): a course-style transformer whose own
//! modules make their parameters in their own `__init__` and whose own Adam makes its state
//! in its own `__init__` (tests/fixtures/course, by tools/gen_course_transformer.py, recorded
//! allocator-faithfully by an allocator model independent of memtide). No torch frame says
//! "parameter" or "optimizer state". The hand counts are in each fixture's .truth.json.

use crate::support::repo::{root, summary_json};
use serde_json::Value;

fn truth(name: &str) -> Value {
    let p = root().join(format!("tests/fixtures/course/{name}.truth.json"));
    serde_json::from_slice(&std::fs::read(p).expect("truth")).expect("json")
}

/// `got` within 2 % of `want` (blocks are rounded up to 512 B, and a large block may keep an
/// unsplit remainder beside its tensor).
fn within_2_percent(what: &str, got: &Value, want: &Value) {
    let (g, w) = (got.as_f64().unwrap_or(-1.0), want.as_f64().unwrap_or(0.0));
    assert!(
        g >= w && g <= w * 1.02,
        "{what}: {got} against the hand count {want}"
    );
}

fn check(name: &str) {
    let j = summary_json(&root().join(format!("tests/fixtures/course/{name}.pickle")));
    let t = truth(name);
    let p = &j["peak"]["persistent"];
    within_2_percent("params", &p["params"], &t["params"]);
    within_2_percent("optimizer state", &p["optimizer"], &t["optimizer"]);
    // The peak is at the end of a forward: no gradient is live.
    assert_eq!(p["grads"], serde_json::json!(0), "{p}");
    assert!(
        p["model"]
            .as_str()
            .is_some_and(|m| m.starts_with("Adam-like")),
        "{p}"
    );
    // The state was made in the optimizer's own `__init__`, before any step: not lazily.
    let b = &j["boundary"];
    assert_eq!(b["lazy_state"], Value::Null, "{b}");
    assert_eq!(b["full_updates"], serde_json::json!(3), "{b}");
    assert!(
        b["words"]
            .as_str()
            .is_some_and(|w| w.contains("allocated before the first step")),
        "{b}"
    );
}

#[test]
fn own_modules_and_an_in_place_adam_split_into_parameters_and_state() {
    check("inplace_adam");
}

/// The optimizer rebinds every tensor each step (`state["m"] = new_m`,
/// `p.data = p.data - lr * …`): the new tensors are the same parameters and states.
#[test]
fn an_adam_that_replaces_its_tensors_every_step_keeps_them_what_they_were() {
    check("replacing_adam");
}

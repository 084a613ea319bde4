//! The persistent band at an instant split into parameters, gradients, optimizer state and
//! buffers, with bytes per parameter when the parameter count is known, and which usual
//! model (fp32/bf16 weights, Adam/SGD state) the figures fit, if any.

use crate::index::Index;
use crate::trace::{AllocId, Category, Trace, FLAG_INFERRED};

/// The persistent breakdown at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct Persistent {
    /// Every persistent byte (params + grads + optimizer + buffers + other).
    pub total: u64,
    /// None when the source splits nothing (every persistent byte is `other`). With inferred
    /// categories that found no parameter, `params` is None too, and so is `grads` when no
    /// gradient was found either: those figures are unknown, not 0.
    pub params: Option<u64>,
    pub grads: Option<u64>,
    pub optimizer: Option<u64>,
    pub buffers: Option<u64>,
    /// Persistent bytes of no finer category (inferred "persistent").
    pub other: u64,
    /// Blocks of private pools (CUDA graphs' pools, `MemPool`s): category `private_pool`.
    pub private_pool: u64,
    /// Parameters (elements), from the source's header (`param_count`); None when unknown.
    pub param_count: Option<u64>,
    /// `total / param_count`.
    pub bytes_per_param: Option<f64>,
    /// `recorded` (all categories from the source) or `inferred` (some guessed).
    pub source: &'static str,
    /// The usual model the figures fit (`fp32 Adam: 16`), or why none fits.
    pub model: String,
}

/// The breakdown of the storages `ids` (live at one instant); None when none is persistent.
pub fn persistent(trace: &Trace, ids: &[AllocId]) -> Option<Persistent> {
    let (mut p, mut g, mut o, mut b, mut other) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut pool = 0u64;
    let mut any = false;
    let mut inferred = false;
    for &id in ids {
        let cat = trace.category(id);
        if cat.band() != crate::trace::Band::Persistent {
            continue;
        }
        any = true;
        inferred |= trace.flags(id) & FLAG_INFERRED != 0;
        let n = trace.size(id).0;
        match cat {
            Category::Param => p += n,
            Category::Grad => g += n,
            Category::Optimizer => o += n,
            Category::Buffer => b += n,
            Category::PrivatePool => pool += n,
            _ => other += n,
        }
    }
    if !any {
        return None;
    }
    let split = p + g + o + b > 0;
    // Inferred categories with no parameter among them: the weights were allocated before
    // the recording began or their stacks do not say what they are; they may well be among
    // the unknown bytes, so "0 parameters" would be a guess.
    let params_known = split && !(inferred && p == 0);
    let total = p + g + o + b + other + pool;
    let param_count = param_count(trace);
    let bytes_per_param = param_count
        .filter(|&n| n > 0 && params_known)
        .map(|n| (p + g + o) as f64 / n as f64);
    Some(Persistent {
        total,
        params: params_known.then_some(p),
        // `params_known` and `g > 0` each imply `split`.
        grads: (params_known || g > 0).then_some(g),
        optimizer: split.then_some(o),
        buffers: split.then_some(b),
        other,
        private_pool: pool,
        param_count,
        bytes_per_param,
        source: if inferred { "inferred" } else { "recorded" },
        model: if params_known {
            fit(p, g, o, param_count)
        } else if split {
            "parameters and gradients not identified: allocated before the recording began or not recognisable from their stacks; they may be among the unknown bytes".into()
        } else {
            "not split: the source records no parameter/gradient/optimizer categories".into()
        },
    })
}

/// Why an *inferred* split is doubtful: more optimizer state or gradient bytes than any usual
/// training set-up holds per parameter byte (optimizer state over 6× the parameters, the
/// most mixed-precision Adam keeps: fp32 master weights and two fp32 moments for 2-byte
/// weights; gradients over 2×), as when forward activations are read as optimizer state.
/// Fewer gradients than parameters (a peak inside backward) is usual, not doubtful. None when
/// the split fits, or when the categories were recorded.
pub(crate) fn doubt(p: &Persistent) -> Option<String> {
    let params = p.params.filter(|&n| n > 0)?;
    if p.source != "inferred" {
        return None;
    }
    let ratio = |x: Option<u64>| x.unwrap_or(0) as f64 / params as f64;
    let (g, o) = (ratio(p.grads), ratio(p.optimizer));
    (o > 6.05 || g > 2.05).then(|| {
        format!(
            "the inferred persistent split at the peak fits no usual model (optimizer = {o:.2}× params, grads = {g:.2}× params): some stacks were likely misread (pass --rules to correct them)"
        )
    })
}

/// Every doubt `summary` reports on the whole run (its `doubtful_warnings`): the reader's
/// doubtful warnings, then [`doubt`] on the split at the global peak. What the explorer marks
/// as doubtful.
pub(crate) fn run_doubts(trace: &Trace, index: &Index) -> Vec<String> {
    let mut out: Vec<String> = trace.doubtful_warnings().map(String::from).collect();
    let at_peak = super::global_peak(trace, index)
        .and_then(|p| persistent(trace, &p.live(trace, index)))
        .and_then(|p| doubt(&p));
    out.extend(at_peak);
    out
}

/// `param_count` from the source's header: a top-level key, or one inside its `meta` object.
pub(crate) fn param_count(trace: &Trace) -> Option<u64> {
    for (k, v) in &trace.meta {
        if k == "param_count" {
            if let Ok(n) = v.trim().parse::<u64>() {
                return Some(n);
            }
        }
        if k == "meta" {
            let parsed: Option<serde_json::Value> = serde_json::from_str(v).ok();
            if let Some(n) = parsed.and_then(|m| m.get("param_count").and_then(|x| x.as_u64())) {
                return Some(n);
            }
        }
    }
    None
}

fn near(x: f64, want: f64) -> bool {
    (x - want).abs() <= 0.02 * want.max(1.0)
}

/// Which usual training set-up `params`/`grads`/`optimizer` bytes fit.
fn fit(params: u64, grads: u64, opt: u64, count: Option<u64>) -> String {
    if params == 0 {
        return "no parameters found: no model fits".into();
    }
    let g = grads as f64 / params as f64;
    let o = opt as f64 / params as f64;
    let state = if opt == 0 {
        Some("no optimizer state")
    } else if near(o, 2.0) {
        Some("Adam")
    } else if near(o, 1.0) {
        Some("SGD with momentum")
    } else {
        None
    };
    let grads_ok = grads == 0 || near(g, 1.0);
    // Fewer gradients than parameters at the peak: a backward under way (it has made some so
    // far), or gradients made before the recording that nothing pairs with.
    let partial = !grads_ok && g < 1.0;
    let dtype = count.filter(|&n| n > 0).map(|n| params as f64 / n as f64);
    match (state, grads_ok, dtype) {
        (Some(s), false, _) if partial => {
            let like = if opt == 0 {
                s.to_string()
            } else {
                format!("{s}-like")
            };
            format!(
                "{like} (optimizer = {o:.2}× params, grads = {g:.2}× params: fewer gradients than parameters live at the peak: a backward under way, or some not recorded)"
            )
        }
        (Some(s), true, Some(d)) if near(d, 4.0) || near(d, 2.0) => {
            let name = if near(d, 4.0) { "fp32" } else { "bf16/fp16" };
            let expect = d * (1.0 + if grads == 0 { 0.0 } else { 1.0 } + o.round());
            format!("{name} {s}: {expect:.0}")
        }
        (Some(s), true, None) => format!(
            "{s}-like (optimizer = {o:.2}× params, grads = {g:.2}× params); parameter count unknown"
        ),
        _ => format!(
            "fits no usual model (grads = {g:.2}× params, optimizer = {o:.2}× params{})",
            dtype.map_or(String::new(), |d| format!(", {d:.2} B per weight"))
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn fits() {
        assert_eq!(fit(40, 40, 80, Some(10)), "fp32 Adam: 16");
        assert_eq!(fit(20, 20, 40, Some(10)), "bf16/fp16 Adam: 8");
        assert_eq!(fit(40, 40, 40, Some(10)), "fp32 SGD with momentum: 12");
        assert!(fit(40, 40, 80, None).starts_with("Adam-like"));
        assert!(fit(40, 40, 130, Some(10)).starts_with("fits no usual model"));
        assert!(fit(40, 40, 80, Some(3)).starts_with("fits no usual model"));
        assert!(fit(0, 0, 80, None).starts_with("no parameters found"));
        // Mid-backward: some gradients made.
        assert!(fit(40, 4, 80, None).starts_with("Adam-like"));
        assert!(
            fit(40, 4, 80, Some(10)).contains("fewer gradients than parameters live at the peak")
        );
        assert!(fit(40, 4, 130, None).starts_with("fits no usual model"));
    }

    /// Storages of the given categories, inferred or recorded, all live.
    fn trace_of(cats: &[Category], inferred: bool) -> (Trace, Vec<AllocId>) {
        use crate::trace::{Bytes, Seq, StackId, StorageKind, StrId};
        let mut t = Trace::new("cuda:0", "test", "snapshot");
        let ids = cats
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let id = t.new_storage(
                    Seq(0),
                    Bytes(100),
                    Category::Unknown,
                    StorageKind::Block,
                    StrId(0),
                    StackId(0),
                    i as u64,
                );
                t.set_category(id, c, inferred);
                id
            })
            .collect::<Vec<_>>();
        (t, ids)
    }

    #[test]
    fn inferred_optimizer_state_without_parameters_leaves_parameters_unknown() {
        let (t, ids) = trace_of(&[Category::Optimizer, Category::Optimizer], true);
        let p = persistent(&t, &ids).unwrap();
        assert_eq!(
            p.params, None,
            "no parameter identified is not 0 parameters"
        );
        assert_eq!(p.optimizer, Some(200));
        assert_eq!(p.bytes_per_param, None);
        assert_eq!(p.grads, None, "no gradient identified either");
        assert!(
            p.model
                .starts_with("parameters and gradients not identified"),
            "{}",
            p.model
        );
        // Recorded categories say what they say: no parameter means 0.
        let (t, ids) = trace_of(&[Category::Optimizer], false);
        let p = persistent(&t, &ids).unwrap();
        assert_eq!(p.params, Some(0));
        // Inferred with parameters found: the split is given.
        let (t, ids) = trace_of(&[Category::Param, Category::Optimizer], true);
        let p = persistent(&t, &ids).unwrap();
        assert_eq!((p.params, p.optimizer), (Some(100), Some(100)));
    }
}

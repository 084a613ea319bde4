//! Category inference for traces that carry none (snapshots; Kineto without a sidecar),
//! DESIGN §4: user rules, then frames, then lifetime.
//!
//! Order (first match wins), per block storage:
//! 1. a user rule (`[[rule]] match = "optimizer.py" band = "persistent"`) whose text occurs
//!    in a frame;
//! 2. optimizer-state creation (`_init_group`) → optimizer; parameter creation (module
//!    `__init__`, `to()`/`cuda()`/`_apply`, `Parameter`) → param;
//! 3. freed within a few events of its alloc → temp (workspace);
//! 4. other optimizer code (`/optim/`, `step`) → optimizer;
//! 5. made under `backward` and still alive when the next optimizer phase starts → grad,
//!    otherwise → autograd_detail (backward intermediates; PyTorch's AUTOGRAD_DETAIL, an
//!    activation-band category);
//! 6. made under a module's `forward` → activation (a leaked activation is still one);
//! 7. alive at every step boundary after its creation → persistent;
//! 8. anything with a stack → activation, else unknown.

use crate::formats::error::FormatError;
use crate::trace::{AllocId, Band, Category, MarkKind, StackId, StorageKind, Trace};
use serde::Deserialize;
use std::path::Path;

/// Freed within this many events of its alloc: a temporary of one op.
pub const SHORT_EVENTS: u64 = 4;

/// One user rule: frames containing `pattern` get `category`.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub pattern: String,
    pub category: Category,
}

/// User rules (applied before the built-in ones).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rules {
    pub rules: Vec<Rule>,
}

#[derive(Deserialize)]
struct RuleFile {
    #[serde(default)]
    rule: Vec<RawRule>,
}

#[derive(Deserialize)]
struct RawRule {
    #[serde(rename = "match")]
    pattern: String,
    #[serde(default)]
    band: Option<String>,
    #[serde(default)]
    category: Option<String>,
}

impl Rules {
    /// Reads a TOML rules file.
    pub fn load(path: &Path) -> Result<Rules, FormatError> {
        let text = crate::formats::source::open_regular(path)
            .and_then(std::io::read_to_string)
            .map_err(|e| {
                FormatError::Invalid(format!("cannot read rules file {}: {e}", path.display()))
            })?;
        Rules::parse(&text)
            .map_err(|e| FormatError::Invalid(format!("rules file {}: {e}", path.display())))
    }

    /// Parses rules TOML: `[[rule]]` tables with `match` and `band` or `category`.
    pub fn parse(text: &str) -> Result<Rules, String> {
        let f: RuleFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut rules = Vec::new();
        for (i, r) in f.rule.into_iter().enumerate() {
            let category = match (&r.category, &r.band) {
                (Some(c), _) => Category::parse(c)
                    .ok_or_else(|| format!("rule {}: unknown category {c:?}", i + 1))?,
                (None, Some(b)) => band_category(
                    Band::parse(b).ok_or_else(|| {
                        format!(
                            "rule {}: unknown band {b:?} (persistent, activation, workspace, external, unknown)",
                            i + 1
                        )
                    })?,
                ),
                (None, None) => {
                    return Err(format!("rule {}: needs `band` or `category`", i + 1))
                }
            };
            if r.pattern.is_empty() {
                return Err(format!("rule {}: `match` is empty", i + 1));
            }
            rules.push(Rule {
                pattern: r.pattern,
                category,
            });
        }
        Ok(Rules { rules })
    }
}

fn band_category(b: Band) -> Category {
    match b {
        Band::Persistent => Category::InferredPersistent,
        Band::Activation => Category::Activation,
        Band::Workspace => Category::Workspace,
        Band::External => Category::External,
        Band::Unknown => Category::Unknown,
    }
}

/// What a stack's frames say (computed once per distinct stack).
#[derive(Clone, Copy, Debug, Default)]
struct Facts {
    user: Option<Category>,
    init_group: bool,
    param: bool,
    optim: bool,
    backward: bool,
    forward: bool,
    has_frames: bool,
}

fn split_frame(f: &str) -> (&str, &str) {
    // "filename:line:name"; filenames may hold ':' (Windows), names rarely do.
    let mut it = f.rsplitn(3, ':');
    let name = it.next().unwrap_or("");
    let _line = it.next();
    let file = it.next().unwrap_or("");
    (file, name)
}

fn facts(trace: &Trace, sid: StackId, rules: &Rules) -> Facts {
    let frames = trace.strings.stack(sid);
    let mut x = Facts {
        has_frames: !frames.is_empty(),
        ..Facts::default()
    };
    for &f in frames {
        let s = trace.strings.str(f);
        if x.user.is_none() {
            x.user = rules
                .rules
                .iter()
                .find(|r| s.contains(&r.pattern))
                .map(|r| r.category);
        }
        let (file, name) = split_frame(s);
        let module = file.contains("/nn/modules/") || file.ends_with("module.py");
        if name == "_init_group" || name.contains("_init_state") {
            x.init_group = true;
        }
        if (module && (name == "__init__" || name == "reset_parameters"))
            || (file.ends_with("module.py") && matches!(name, "to" | "cuda" | "_apply" | "convert"))
            || file.ends_with("nn/parameter.py")
            || name == "register_parameter"
        {
            x.param = true;
        }
        if file.contains("/optim/") || name.contains("Optimizer.step") {
            x.optim = true;
        }
        if name == "backward"
            || name == "_engine_run_backward"
            || name.contains("AccumulateGrad")
            || name.contains("evaluate_function")
        {
            x.backward = true;
        }
        if name == "forward" || name == "_call_impl" || name == "_wrapped_call_impl" {
            x.forward = true;
        }
    }
    x
}

/// Infers the category of every block storage of `trace` (before the index is built).
pub fn infer(trace: &mut Trace, rules: &Rules) {
    let mut cache: Vec<Option<Facts>> = vec![None; trace.strings.stack_count()];
    let mut steps: Vec<u64> = Vec::new();
    let mut optim_starts: Vec<u64> = Vec::new();
    for m in &trace.marks {
        if m.kind == MarkKind::Step {
            steps.push(m.at.0);
            if let Some(e) = m.end {
                steps.push(e.0);
            }
        }
        let name = trace.strings.str(m.name).to_ascii_lowercase();
        if m.kind == MarkKind::Phase && name.contains("optim") {
            optim_starts.push(m.at.0);
        }
    }
    steps.sort_unstable();
    steps.dedup();
    optim_starts.sort_unstable();

    for i in 0..trace.storage_count() {
        let id = AllocId(i as u32);
        if trace.storage_kind(id) == StorageKind::Segment {
            continue;
        }
        let sid = trace.storages.stack.get(i).copied().unwrap_or_default();
        let fx = match cache.get(sid.0 as usize).copied().flatten() {
            Some(f) => f,
            None => {
                let f = facts(trace, sid, rules);
                if let Some(c) = cache.get_mut(sid.0 as usize) {
                    *c = Some(f);
                }
                f
            }
        };
        let start = trace.start(id).0;
        let from_start = trace.is_from_start(id);
        let end = trace.end(id).map(|e| e.0);
        let short = !from_start && end.is_some_and(|e| e.saturating_sub(start) <= SHORT_EVENTS);
        let alive_at = |p: u64| (from_start || start <= p) && end.is_none_or(|e| p < e);

        let cat = if let Some(c) = fx.user {
            c
        } else if fx.init_group {
            Category::Optimizer
        } else if fx.param {
            Category::Param
        } else if short {
            Category::Temp
        } else if fx.optim {
            Category::Optimizer
        } else if fx.backward {
            // A gradient survives into the next optimizer phase; other backward buffers die.
            // Sorted: a binary search, not a scan (thousands of marks × a million storages).
            let next_opt = optim_starts
                .get(optim_starts.partition_point(|&p| p <= start))
                .copied();
            match next_opt {
                Some(p) if alive_at(p) => Category::Grad,
                None if end.is_none() => Category::Grad,
                _ => Category::AutogradDetail,
            }
        } else if fx.forward {
            Category::Activation
        } else if persistent_by_lifetime(&steps, start, from_start, end) {
            Category::InferredPersistent
        } else if fx.has_frames {
            Category::Activation
        } else {
            Category::Unknown
        };
        trace.set_category(id, cat, true);
    }
}

/// Alive at every step boundary after its creation (and there is at least one).
fn persistent_by_lifetime(steps: &[u64], start: u64, from_start: bool, end: Option<u64>) -> bool {
    let first_after = if from_start {
        steps.first().copied()
    } else {
        steps.get(steps.partition_point(|&b| b <= start)).copied()
    };
    let (Some(_), Some(&last)) = (first_after, steps.last()) else {
        return false;
    };
    end.is_none_or(|e| last < e)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse() {
        let r = Rules::parse(
            "[[rule]]\nmatch = \"optimizer.py\"\nband = \"persistent\"\n[[rule]]\nmatch = \"attn\"\ncategory = \"activation\"\n",
        )
        .unwrap();
        assert_eq!(r.rules.len(), 2);
        assert_eq!(r.rules[0].category, Category::InferredPersistent);
        assert_eq!(r.rules[1].category, Category::Activation);
        assert!(Rules::parse("[[rule]]\nmatch = \"x\"\nband = \"nope\"\n").is_err());
        assert!(Rules::parse("[[rule]]\nmatch = \"x\"\n").is_err());
    }

    #[test]
    fn lifetime_rule() {
        // boundaries at 10 and 20
        let s = [10, 20];
        assert!(persistent_by_lifetime(&s, 5, false, None));
        assert!(!persistent_by_lifetime(&s, 5, false, Some(15)));
        assert!(persistent_by_lifetime(&s, 12, false, Some(21)));
        assert!(!persistent_by_lifetime(&s, 25, false, None));
        assert!(!persistent_by_lifetime(&[], 0, false, None));
    }
}

//! Category inference for traces that carry none (snapshots; Kineto without a sidecar),
//! docs/inference.md: user rules, then frames, then lifetime.
//!
//! Frames are snapshot frames (`file:line:name`) or, for Kineto, the enclosing span names
//! (`path/file.py(123): name`, `aten::mm`, `AddmmBackward0`, `nn.Module: Linear_0`).
//! Each frame may say what is made under it (`Kind`); the *innermost* frame that says
//! anything decides, not any frame anywhere: Lightning runs `training_step` inside
//! `optimizer.step(closure)`, so a forward activation has `/optim/` frames further out.
//! Order (first match wins), per block storage:
//! 1. a user rule (`[[rule]] match = "optimizer.py" band = "persistent"`) whose text occurs
//!    in a frame;
//! 2. innermost meaningful frame: optimizer-state creation (`_init_group`) → optimizer;
//!    parameter creation or loading (module `__init__`/`reset_parameters`,
//!    `to()`/`cuda()`/`_apply`/`convert`, `Parameter`, FSDP/ZeRO parameter shards and
//!    gathers, vLLM/SGLang weight loaders) → param; a KV cache → buffer;
//! 3. freed inside the top-level op it was made in (Kineto, where the reader knows the op:
//!    PyTorch's TEMPORARY rule), else freed within a few events of its alloc → temp
//!    (workspace);
//! 4. (innermost meaningful frame, continued) other optimizer code (`/optim/`, `step`) →
//!    optimizer when still alive at the next
//!    optimizer phase (or at the end), else temp (the optimizer's own intermediates);
//! 5. `AccumulateGrad` → grad; made under `backward` (or an autograd node such as
//!    `AddmmBackward0`) and still alive when the next optimizer phase starts → grad,
//!    otherwise → autograd_detail (backward intermediates; PyTorch's AUTOGRAD_DETAIL, an
//!    activation-band category);
//! 6. made in a private pool (a CUDA graph's pool or a `MemPool`: the snapshot's `pool_id` /
//!    `segment_pool_id` is not `(0, 0)`) → private_pool (persistent: the pool keeps its memory
//!    for its life, whatever the tensors made in it); else made under a module's `forward` →
//!    activation, whatever its lifetime (a leaked or retained-graph activation is still one);
//! 7. alive at every step boundary after its creation, and not made inside a step span
//!    (setup, or live from the start) → persistent: a survivor made inside a step (the batch,
//!    a loss kept with its graph) is that step's data, not state;
//! 8. anything with a stack → activation, else unknown.

use crate::trace::model::{FLAG_FREED_IN_OP, FLAG_INFERRED, FLAG_OP_KNOWN};
use crate::trace::{AllocId, Band, Category, MarkKind, StackId, StorageKind, Trace};
use serde::Deserialize;

/// Freed within this many events of its alloc: a temporary of one op.
pub(crate) const SHORT_EVENTS: u64 = 4;

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

/// What one frame says about the allocations made under it; the innermost frame that says
/// anything decides (a module `forward` called by `optimizer.step(closure)` is an activation,
/// `_init_group` under `step` is optimizer state, `AccumulateGrad` a gradient).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Optimizer-state creation (`_init_group`, `_init_state`; DeepSpeed's fp32 partitions).
    OptimizerState,
    /// Parameter creation or loading (module `__init__`, `to()`, `Parameter`; FSDP flat
    /// parameters and unsharded copies; DeepSpeed ZeRO partitions and gathers; vLLM/SGLang
    /// weight loaders).
    Param,
    /// A long-lived buffer an inference server allocates (vLLM/SGLang KV cache).
    Buffer,
    /// Other optimizer code (`/optim/`, `Optimizer.step`, DeepSpeed/apex fused Adam).
    Optimizer,
    /// A gradient (`AccumulateGrad`; FSDP/DeepSpeed gradient reduce-scatter buffers).
    Grad,
    /// Backward code (`backward`, autograd nodes, the autograd engine).
    Backward,
    /// A module's forward.
    Forward,
}

/// What a stack's frames say (computed once per distinct stack).
#[derive(Clone, Copy, Debug, Default)]
struct Facts {
    user: Option<Category>,
    /// The innermost meaningful frame's kind.
    kind: Option<Kind>,
    has_frames: bool,
    /// Some frame is source code (`file:line`), not only op names: where the tensor was
    /// made in the program is known.
    has_source: bool,
}

/// Splits a frame into (file, function name). Two shapes:
/// - snapshot frames `filename:line:name` (filenames may hold ':' on Windows; names rarely do);
/// - Kineto `python_function` names `path/file.py(123): name`.
///
/// Anything else (Kineto op names such as `aten::mm`, `AddmmBackward0`, `nn.Module: Linear_0`,
/// `autograd::engine::evaluate_function: …`) has no file: the whole text is the name.
fn split_frame(f: &str) -> (&str, &str) {
    if let Some(p) = f.find("): ") {
        let head = &f[..p];
        if let Some(o) = head.rfind('(') {
            let line = &head[o + 1..];
            if o > 0 && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) {
                return (&head[..o], &f[p + 3..]);
            }
        }
    }
    if f.starts_with("aten::") || f.starts_with("autograd::") || f.starts_with("nn.Module: ") {
        return ("", f);
    }
    if let Some(parts) = file_line_space_name(f) {
        return parts;
    }
    let mut it = f.rsplitn(3, ':');
    let name = it.next().unwrap_or("");
    let _line = it.next();
    match it.next() {
        Some(file) => (file, name),
        None => ("", f),
    }
}

/// The JSONL shape `file:line function` (memtide's recorder, docs/formats.md): the first
/// `:` followed by digits and a space ends the file (a Windows drive's `C:\` is not one).
fn file_line_space_name(f: &str) -> Option<(&str, &str)> {
    let b = f.as_bytes();
    for (i, _) in f.match_indices(':') {
        let digits = b
            .get(i + 1..)?
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > 0 && b.get(i + 1 + digits) == Some(&b' ') && i > 0 {
            return Some((f.get(..i)?, f.get(i + 2 + digits..)?));
        }
    }
    None
}

/// An autograd graph node's name (`AddmmBackward0`, `ReluBackward1`): a backward op span.
fn is_backward_node(s: &str) -> bool {
    let t = s.trim_end_matches(|c: char| c.is_ascii_digit());
    t.len() < s.len() && t.ends_with("Backward") && !t.contains(['/', ':', ' '])
}

/// What one frame (split into file and name; `text` whole) says, if anything.
fn frame_kind(text: &str, file: &str, name: &str) -> Option<Kind> {
    let file_n: std::borrow::Cow<str> = if file.contains('\\') {
        std::borrow::Cow::Owned(file.replace('\\', "/"))
    } else {
        std::borrow::Cow::Borrowed(file)
    };
    let file = file_n.as_ref();
    let module = file.contains("/nn/modules/") || file.ends_with("module.py");
    let gradish = name.contains("grad") || name.contains("reduce") || name.contains("ipg");
    if name == "_init_group" || name.contains("_init_state") {
        return Some(Kind::OptimizerState);
    }
    // Sharded training: FSDP (1: `fsdp/_flat_param.py`, `_runtime_utils.py`; 2:
    // `fsdp/_fully_shard/`, `_composable/fsdp/`) and DeepSpeed ZeRO
    // (`runtime/zero/partition_parameters.py`, `stage_1_and_2.py`, `stage3.py`).
    if file.contains("/fsdp/") || file.contains("deepspeed/runtime/zero/") {
        if gradish || name == "post_backward" || name.contains("average_tensor") {
            return Some(Kind::Grad);
        }
        if name.contains("fp32") || name == "initialize_optimizer_states" {
            return Some(Kind::OptimizerState);
        }
        if file.ends_with("_flat_param.py")
            || file.ends_with("partition_parameters.py")
            || file.ends_with("_fsdp_param.py")
            || name.contains("gather")
            || name.contains("unshard")
            || name.contains("flat_param")
        {
            return Some(Kind::Param);
        }
    }
    if (module && (name == "__init__" || name == "reset_parameters"))
        || (file.ends_with("module.py") && matches!(name, "to" | "cuda" | "_apply" | "convert"))
        || file.ends_with("nn/parameter.py")
        || name == "register_parameter"
        || file.contains("/model_loader/")
        || name == "create_weights"
        || name.contains("load_weights")
        || name == "weight_loader"
    {
        return Some(Kind::Param);
    }
    if is_kv_cache_allocation(file, name) {
        return Some(Kind::Buffer);
    }
    if file.contains("/optim/")
        || name.contains("Optimizer.step")
        || file.contains("deepspeed/ops/adam/")
        || file.contains("apex/optimizers/")
    {
        return Some(Kind::Optimizer);
    }
    if text.contains("AccumulateGrad") {
        return Some(Kind::Grad);
    }
    if name == "backward"
        || name == "_engine_run_backward"
        || text.contains("evaluate_function")
        || text.contains("run_backward")
        || text.contains("autograd::Engine::thread_main")
        || text.contains("autograd::generated::")
        || is_backward_node(text)
    {
        return Some(Kind::Backward);
    }
    if name == "forward"
        || name == "_call_impl"
        || name == "_wrapped_call_impl"
        || text.starts_with("nn.Module: ")
    {
        return Some(Kind::Forward);
    }
    None
}

/// A frame that allocates an inference server's KV cache: vLLM's `_allocate_kv_cache`
/// (v0's cache engine), `_allocate_kv_cache_tensors` / `initialize_kv_cache_tensors` /
/// `initialize_kv_cache` (v1's model runner), SGLang's `init_memory_pool` and its
/// `mem_cache/memory_pool.py` constructors (`__init__`, `_create_buffers`). Not any frame
/// that names the KV cache: `unified_kv_cache_update` writes into it during a forward, and
/// vLLM's engine-level `_initialize_kv_caches` encloses the profile run and graph capture.
fn is_kv_cache_allocation(file: &str, name: &str) -> bool {
    matches!(
        name,
        "_allocate_kv_cache"
            | "_allocate_kv_cache_tensors"
            | "initialize_kv_cache_tensors"
            | "initialize_kv_cache"
            | "allocate_kv_cache"
            | "init_memory_pool"
    ) || (file.contains("/mem_cache/memory_pool")
        && (name == "__init__" || name.starts_with("_create") || name.starts_with("create")))
}

fn facts(trace: &Trace, sid: StackId, rules: &Rules) -> Facts {
    let frames = trace.strings.stack(sid);
    let mut x = Facts {
        has_frames: !frames.is_empty(),
        ..Facts::default()
    };
    // Frames are innermost first: the first frame that says anything decides.
    for &f in frames {
        // A frame kept as parts (a very long file or name) is judged on its bounded ends.
        let s = match trace.strings.frame_parts(f) {
            Some((file, line, name)) => {
                std::borrow::Cow::Owned(super::frames::judged_text(file, line, name))
            }
            None => trace.strings.str(f),
        };
        if x.user.is_none() {
            x.user = rules
                .rules
                .iter()
                .find(|r| s.contains(&r.pattern))
                .map(|r| r.category);
        }
        let (file, name) = split_frame(&s);
        x.has_source |= !file.is_empty();
        if x.kind.is_none() {
            x.kind = frame_kind(&s, file, name);
        }
        if x.user.is_some() && x.kind.is_some() && x.has_source {
            break;
        }
    }
    x
}

/// Infers the category of every block storage of `trace` (before the index is built).
pub(crate) fn infer(trace: &mut Trace, rules: &Rules) {
    let mut cache: Vec<Option<Facts>> = vec![None; trace.strings.stack_count()];
    let mut steps: Vec<u64> = Vec::new();
    let mut optim_starts: Vec<u64> = Vec::new();
    // Steps recorded as spans (ProfilerStep#N, annotations with an end): [at, end).
    let mut step_spans: Vec<(u64, u64)> = Vec::new();
    for m in &trace.marks {
        if m.kind == MarkKind::Step {
            steps.push(m.at.0);
            if let Some(e) = m.end {
                steps.push(e.0);
                step_spans.push((m.at.0, e.0));
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
    let step_spans = prefix_max_ends(step_spans);
    let mut pairs = Pairing::default();
    let mut lines: Vec<crate::analysis::lineage::Candidate> = Vec::new();
    // Every gradient as (tensor size, start, end).
    let mut grads: Vec<(u64, u64, u64)> = Vec::new();
    // Where the setup ends: the first step (a mark sits after the event it is placed at:
    // that event came before it), or the first storage a forward or a backward made.
    let mut setup_end = step_spans
        .first()
        .map_or(u64::MAX, |s| s.0.saturating_add(1));
    let mut pools = PoolMemo::default();
    // Stream captures (profiler traces): what is made while one is open is the graph's pool.
    let mut captures: Vec<(u64, u64)> = trace
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Capture)
        // `end` is the last event inside: the span is [at, end + 1).
        .map(|m| (m.at.0, m.end.map_or(m.at.0, |e| e.0).saturating_add(1)))
        .collect();
    captures.sort_unstable();
    let captures = prefix_max_ends(captures);

    for i in 0..trace.storage_count() {
        let id = AllocId(i as u32);
        if trace.storage_kind(id) == StorageKind::Segment {
            continue;
        }
        // A category the reader recorded (a snapshot entry's own `category`) is the file's
        // word, not a guess: kept.
        let recorded = trace.category(id);
        if recorded != Category::Unknown && trace.flags(id) & FLAG_INFERRED == 0 {
            // Its gradients and optimizer state pair with memory from before the recording
            // as inferred ones do.
            let made = match recorded {
                Category::Grad => Some(&mut pairs.grads),
                Category::Optimizer => Some(&mut pairs.states),
                _ => None,
            };
            if let Some(v) = made {
                let end = trace.end(id).map_or(u64::MAX, |e| e.0);
                v.push((trace.size(id).0, trace.start(id).0, end));
            }
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
        // Freed inside the top-level op it was made in, where the reader knows the op (Kineto:
        // PyTorch's own TEMPORARY rule); else freed within a few events (snapshots).
        let flags = trace.flags(id);
        let short = if flags & FLAG_OP_KNOWN != 0 {
            flags & FLAG_FREED_IN_OP != 0
        } else {
            !from_start && end.is_some_and(|e| e.saturating_sub(start) <= SHORT_EVENTS)
        };
        let alive_at = |p: u64| (from_start || start <= p) && end.is_none_or(|e| p < e);
        // Sorted: a binary search, not a scan (thousands of marks × a million storages).
        let survives_to_next_optimizer = || {
            let next_opt = optim_starts
                .get(optim_starts.partition_point(|&p| p <= start))
                .copied();
            match next_opt {
                Some(p) => alive_at(p),
                None => end.is_none(),
            }
        };

        // Storages whose source frames name no tensor role of their own (a course's modules
        // make their parameters in their own `__init__`, its own Adam its state) or name the
        // parameter or optimizer code: what they are is decided by their lives and sizes
        // below ([`crate::analysis::lineage`]). Not a bare op's output (a profiler trace
        // without stacks): nothing says where it was made.
        // Short-lived ones too: `p.data = p.data - lr * u` then `p.data = p.data - wd * p`
        // makes a parameter that lives a few events before the next replaces it.
        let undecided = fx.user.is_none()
            && fx.has_source
            && !from_start
            && matches!(fx.kind, None | Some(Kind::Param) | Some(Kind::Optimizer));
        if matches!(
            fx.kind,
            Some(Kind::Forward) | Some(Kind::Backward) | Some(Kind::Grad)
        ) {
            setup_end = setup_end.min(start);
        }
        let cat = match (fx.user, fx.kind) {
            (Some(c), _) => c,
            (None, Some(Kind::OptimizerState)) => Category::Optimizer,
            (None, Some(Kind::Param)) => Category::Param,
            (None, Some(Kind::Buffer)) => Category::Buffer,
            (None, _)
                if (!from_start && inside_span(&captures, start))
                    || pools.of(trace, id).is_some() =>
            {
                Category::PrivatePool
            }
            _ if short => Category::Temp,
            // Optimizer state survives into the next optimizer phase (or to the end); the
            // optimizer's own intermediates die before it.
            (None, Some(Kind::Optimizer)) if survives_to_next_optimizer() => Category::Optimizer,
            (None, Some(Kind::Optimizer)) => Category::Temp,
            (None, Some(Kind::Grad)) => Category::Grad,
            // A gradient survives into the next optimizer phase; other backward buffers die.
            (None, Some(Kind::Backward)) if survives_to_next_optimizer() => Category::Grad,
            (None, Some(Kind::Backward)) => Category::AutogradDetail,
            (None, Some(Kind::Forward)) => Category::Activation,
            (None, None)
                if (from_start || !inside_span(&step_spans, start))
                    && persistent_by_lifetime(&steps, start, from_start, end) =>
            {
                Category::InferredPersistent
            }
            (None, None) if fx.has_frames => Category::Activation,
            (None, None) => Category::Unknown,
        };
        trace.set_category(id, cat, true);
        // Gradients by what they became, not only those AccumulateGrad made: AccumulateGrad
        // steals the incoming gradient, whose allocation then names the backward op.
        let made = match cat {
            Category::Grad => Some(&mut pairs.grads),
            Category::Optimizer => Some(&mut pairs.states),
            _ => None,
        };
        if let (Some(v), None) = (made, fx.user) {
            v.push((trace.size(id).0, start, end.unwrap_or(u64::MAX)));
        }
        if cat == Category::Grad && fx.user.is_none() {
            grads.push((trace.tensor_size(id).0, start, end.unwrap_or(u64::MAX)));
        }
        if from_start && !fx.has_frames && fx.user.is_none() {
            pairs.before.push(id);
        }
        if undecided && cat != Category::PrivatePool {
            lines.push(crate::analysis::lineage::Candidate {
                id,
                size: trace.tensor_size(id).0,
                start,
                end: end.unwrap_or(u64::MAX),
            });
        }
    }
    crate::analysis::lineage::name_lines(trace, &lines, &grads, setup_end);
    pair_before_recording(trace, pairs);
}

/// PyTorch's small-pool bound: requests up to 1 MiB come from 2 MiB small segments.
const SMALL_REQUEST: u64 = 1 << 20;

/// The most a large block may exceed its request without being split: PyTorch splits only
/// when more than 1 MiB would remain (`CachingAllocatorConfig`'s `kSmallSize`), and requests
/// are rounded to 512 B.
const UNSPLIT_REMAINDER: u64 = (1 << 20) + 512;

/// The private pool named by a storage's kept fields (its trace entry's `pool_id`, or the
/// `segment_pool_id` of the segment holding a block live at the dump); None for the default
/// pool `(0, 0)` or when the file does not say.
fn pool_in_text(text: &str) -> Option<(i64, i64)> {
    if !text.contains("pool_id") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let p = v.get("pool_id").or_else(|| v.get("segment_pool_id"))?;
    let a = p.as_array()?;
    let pair = (a.first()?.as_i64()?, a.get(1)?.as_i64()?);
    (pair != (0, 0)).then_some(pair)
}

/// [`pool_in_text`] read once per distinct kept-fields text (interned: a capture's thousands
/// of blocks share a few).
#[derive(Default)]
struct PoolMemo(rustc_hash::FxHashMap<crate::trace::StrId, Option<(i64, i64)>>);

impl PoolMemo {
    fn of(&mut self, trace: &Trace, id: AllocId) -> Option<(i64, i64)> {
        let x = *trace.extra.get(&id)?;
        *self
            .0
            .entry(x)
            .or_insert_with(|| pool_in_text(trace.strings.text(x)))
    }
}

/// Memory from before the recording, and what the file made that pairs with it by size.
#[derive(Default)]
struct Pairing {
    /// Storages live from the start without a stack.
    before: Vec<AllocId>,
    /// Gradients (`AccumulateGrad`, sharded reduce buffers): (size, start, end).
    grads: Vec<(u64, u64, u64)>,
    /// Optimizer state made by `_init_group` and the like: (size, start, end).
    states: Vec<(u64, u64, u64)>,
}

/// The most storages of each size live at one instant.
pub(crate) fn max_live_by_size(v: &[(u64, u64, u64)]) -> rustc_hash::FxHashMap<u64, usize> {
    let mut ev: Vec<(u64, u64, i8)> = Vec::with_capacity(v.len() * 2);
    for &(size, s, e) in v {
        ev.push((size, s, 1));
        ev.push((size, e, -1));
    }
    // Per size, by time; a free before an alloc at the same instant.
    ev.sort_unstable();
    let mut out = rustc_hash::FxHashMap::default();
    let mut cur: (u64, i64) = (u64::MAX, 0);
    for (size, _, d) in ev {
        if size != cur.0 {
            cur = (size, 0);
        }
        cur.1 += i64::from(d);
        let m = out.entry(size).or_insert(0usize);
        *m = (*m).max(usize::try_from(cur.1).unwrap_or(0));
    }
    out
}

/// Names memory from before the recording where the file proves what it is: blocks of a size
/// that pairs one-to-one with the gradients of that size (as many live at once as there are
/// blocks, or more) are parameters; three blocks per gradient are a parameter and its two
/// Adam states; blocks with two optimizer states of their size each (Adam's pairs) are
/// parameters; of more blocks than gradients of a size, as many as there are gradients are
/// parameters (by order). Anything else stays unknown. The evidence goes to
/// [`Trace::evidence`].
fn pair_before_recording(trace: &mut Trace, p: Pairing) {
    if p.before.is_empty() || (p.grads.is_empty() && p.states.is_empty()) {
        return;
    }
    let grads = max_live_by_size(&p.grads);
    let states = max_live_by_size(&p.states);
    let mut by_size: std::collections::BTreeMap<u64, Vec<AllocId>> = Default::default();
    // The sizes the file made gradients and states of; a block from before the recording is
    // the allocator's whole block, which may exceed its tensor's request by an unsplit
    // remainder (PyTorch splits a large block only when more than 1 MiB would remain): such a
    // block pairs with the largest such size below it within that remainder.
    let mut made: Vec<u64> = grads.keys().chain(states.keys()).copied().collect();
    made.sort_unstable();
    made.dedup();
    let tensor_size = |block: u64| -> u64 {
        if made.binary_search(&block).is_ok() || block <= SMALL_REQUEST {
            return block;
        }
        let below = made.partition_point(|&x| x <= block);
        match below.checked_sub(1).and_then(|k| made.get(k)) {
            Some(&s) if s > SMALL_REQUEST && block - s <= UNSPLIT_REMAINDER => s,
            _ => block,
        }
    };
    for id in p.before {
        if matches!(
            trace.category(id),
            Category::Unknown | Category::InferredPersistent
        ) {
            by_size
                .entry(tensor_size(trace.size(id).0))
                .or_default()
                .push(id);
        }
    }
    for (size, ids) in by_size {
        let a = ids.len();
        let g = grads.get(&size).copied().unwrap_or(0);
        let o = states.get(&size).copied().unwrap_or(0);

        let shown = crate::trace::human_bytes(size);
        let (params, opt) = if g > 0 && a <= g {
            (a, 0)
        } else if g > 0 && a == 3 * g && o == 0 {
            (g, 2 * g)
        } else if g == 0 && o > 0 && o == 2 * a {
            (a, 0)
        } else if g > 0 {
            // More blocks of this size than gradients: as many as there are gradients are
            // parameters (which ones is by order); the rest stay unknown.
            (g, 0)
        } else {
            continue;
        };
        let why_param = if g > 0 {
            format!(
                "live before the recording began; its size ({shown}) pairs with a gradient of that size ({a} such block{}, {g} gradient{} of this size live at once{})",
                if a == 1 { "" } else { "s" },
                if g == 1 { "" } else { "s" },
                if a > g {
                    format!(": {g} of the {a} are taken as parameters, by order")
                } else {
                    String::new()
                }
            )
        } else {
            format!(
                "live before the recording began; the optimizer made two states of its size ({shown}) per such block, as Adam does for each parameter ({a} block{}, {o} states)",
                if a == 1 { "" } else { "s" }
            )
        };
        for (k, &id) in ids.iter().enumerate() {
            let (cat, why) = if k < params {
                (Category::Param, why_param.clone())
            } else if k < params + opt {
                (
                    Category::Optimizer,
                    format!(
                        "live before the recording began; three blocks of its size ({shown}) per gradient of that size: a parameter and its two Adam states (which of the {a} is which is by order)"
                    ),
                )
            } else {
                continue;
            };
            trace.set_category(id, cat, true);
            trace.evidence.insert(id, why);
        }
    }
}

/// `[start, end)` spans sorted by start, each end replaced by the largest end so far, so that
/// `inside_span` is one binary search.
pub(crate) fn prefix_max_ends(mut spans: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    spans.sort_unstable();
    let mut hi = 0;
    for s in &mut spans {
        hi = hi.max(s.1);
        s.1 = hi;
    }
    spans
}

/// Whether `at` lies inside one of the spans (as prepared by `prefix_max_ends`): some span
/// starting at or before `at` ends after it.
fn inside_span(spans: &[(u64, u64)], at: u64) -> bool {
    let n = spans.partition_point(|&(s, _)| s <= at);
    n > 0 && spans.get(n - 1).is_some_and(|&(_, e)| at < e)
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
    fn frames_of_both_shapes_split() {
        assert_eq!(
            split_frame("/usr/lib/python3/torch/optim/adam.py:140:_init_group"),
            ("/usr/lib/python3/torch/optim/adam.py", "_init_group")
        );
        assert_eq!(
            split_frame("torch/optim/adam.py(140): _init_group"),
            ("torch/optim/adam.py", "_init_group")
        );
        assert_eq!(
            split_frame("C:\\x\\model.py(31): forward"),
            ("C:\\x\\model.py", "forward")
        );
        assert_eq!(split_frame("aten::mm"), ("", "aten::mm"));
        assert_eq!(
            split_frame("torch/optim/adam.py:200 _init_group"),
            ("torch/optim/adam.py", "_init_group")
        );
        assert_eq!(
            split_frame("C:\\x\\model.py:31 forward (layers.0)"),
            ("C:\\x\\model.py", "forward (layers.0)")
        );
        assert_eq!(
            split_frame("autograd::engine::evaluate_function: AddmmBackward0"),
            ("", "autograd::engine::evaluate_function: AddmmBackward0")
        );
        assert_eq!(
            split_frame("nn.Module: Linear_0"),
            ("", "nn.Module: Linear_0")
        );
        assert!(is_backward_node("AddmmBackward0"));
        assert!(is_backward_node("ReluBackward1"));
        assert!(!is_backward_node("Backward"));
        assert!(!is_backward_node("torch/x.py(1): Backward0"));
    }

    #[test]
    fn spans_contain() {
        let s = prefix_max_ends(vec![(20, 30), (0, 10), (5, 8)]);
        assert!(inside_span(&s, 0));
        assert!(inside_span(&s, 9));
        assert!(!inside_span(&s, 10));
        assert!(!inside_span(&s, 15));
        assert!(inside_span(&s, 29));
        assert!(!inside_span(&s, 30));
        assert!(!inside_span(&[], 3));
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

//! The memory-saving methods a run shows in its frames and names: activation checkpointing
//! (recomputed forward frames under `torch/utils/checkpoint.py`), mixed precision (autocast,
//! grad scalers, fp32 master weights), offloading (CPU offload, `save_on_cpu`, pinned staging
//! buffers) — or, without any such name, from what the trace shows: device allocations made
//! by a copy op (`aten::_to_copy`, `aten::to`, `aten::copy_`) during backward, tensors brought
//! back onto the device (a dtype cast's `ToCopyBackward0` is not one); and, between two runs,
//! a batch or sequence change (their inputs differ).

use super::parity::{LineState, Parity};
use crate::trace::{human_bytes, AllocId, StackId, StorageKind, StrId, Trace};
use serde::Serialize;

/// A method recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    ActivationCheckpointing,
    MixedPrecision,
    Offloading,
    BatchOrSequenceChange,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::ActivationCheckpointing => "activation checkpointing",
            Method::MixedPrecision => "mixed precision",
            Method::Offloading => "offloading",
            Method::BatchOrSequenceChange => "batch or sequence change",
        }
    }

    /// Lower-case fragments of a frame or allocation name that show the method.
    fn signs(self) -> &'static [&'static str] {
        match self {
            Method::ActivationCheckpointing => &[
                "torch/utils/checkpoint.py",
                "checkpointfunction",
                "checkpoint_wrapper",
                "activation_checkpointing",
            ],
            Method::MixedPrecision => &[
                "autocast",
                "torch/amp/",
                "torch/cuda/amp/",
                "grad_scaler",
                "aten::_amp_",
                "master_param",
                "bf16_optimizer",
                "fp16_optimizer",
                "mixed_precision",
            ],
            Method::Offloading => &[
                "offload",
                "save_on_cpu",
                "pin_memory",
                "aten::_pin_memory",
                "cpu_offload",
            ],
            Method::BatchOrSequenceChange => &[],
        }
    }
}

const FRAME_METHODS: [Method; 3] = [
    Method::ActivationCheckpointing,
    Method::MixedPrecision,
    Method::Offloading,
];

/// What shows a method in one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Evidence {
    /// Allocations whose frames or name show it, and their bytes.
    pub allocations: u64,
    pub bytes: u64,
    /// One such frame (or name).
    pub example: String,
}

/// A method and which run shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MethodFinding {
    pub method: Method,
    pub a: Option<Evidence>,
    pub b: Option<Evidence>,
    /// `B adds activation checkpointing (…)`.
    pub words: String,
}

/// Op frames that copy a tensor (onto the device when the allocation is the device's).
const COPY_OPS: [&str; 3] = ["aten::_to_copy", "aten::to", "aten::copy_"];

/// What one frame's text says to the methods: which of [`FRAME_METHODS`] it shows, whether
/// it is a copy op or a dtype cast's backward node, and its phase words.
#[derive(Clone, Copy, Debug, Default)]
struct FrameSigns {
    methods: [bool; 3],
    copy_op: bool,
    cast: bool,
    phase: super::work::FramePhase,
}

fn frame_signs(text: &str) -> FrameSigns {
    let l = text.to_ascii_lowercase();
    FrameSigns {
        methods: FRAME_METHODS.map(|m| m.signs().iter().any(|s| l.contains(s))),
        copy_op: COPY_OPS.contains(&l.as_str()),
        cast: l.contains("tocopybackward"),
        phase: super::work::frame_phase(text),
    }
}

/// Where in `frames` (innermost first) a device allocation is a copy brought back onto the
/// device during backward: a copy op's frame, under backward frames, not under a dtype
/// cast's backward node (`ToCopyBackward0`). None: not such a copy.
#[cfg(test)]
fn copy_back_frame<S: AsRef<str>>(frames: &[S]) -> Option<usize> {
    let signs: Vec<FrameSigns> = frames.iter().map(|f| frame_signs(f.as_ref())).collect();
    copy_back_of(&signs)
}

/// [`copy_back_frame`] from the frames' signs.
fn copy_back_of(frames: &[FrameSigns]) -> Option<usize> {
    let at = frames.iter().position(|f| f.copy_op)?;
    let cast = frames.iter().any(|f| f.cast);
    let backward =
        super::work::phase_of(frames.iter().map(|f| f.phase)) == Some(super::work::Phase::Backward);
    (backward && !cast).then_some(at)
}

/// What one stack shows: the frame showing each method, and the copy back onto the device.
#[derive(Clone, Copy)]
struct StackSigns {
    methods: [Option<usize>; 3],
    copy_at: Option<usize>,
}

/// The frame-shown methods of one run. Each frame is read once (a frame shared by many
/// stacks, a long file name shared by many frames: [`JudgedFrames`]), each allocation name
/// once, and an example's whole text only for the first allocation showing its method.
///
/// [`JudgedFrames`]: super::frames::JudgedFrames
pub(crate) fn methods_of(trace: &Trace) -> Vec<(Method, Evidence)> {
    let mut found: Vec<Option<Evidence>> = vec![None; FRAME_METHODS.len()];
    let mut judged = super::frames::JudgedFrames::new();
    let mut stacks: rustc_hash::FxHashMap<u32, StackSigns> = Default::default();
    let mut names: rustc_hash::FxHashMap<StrId, [bool; 3]> = Default::default();
    let mut copied_back: Option<Evidence> = None;
    let example = |sid: StackId, pos: usize| {
        let f = trace
            .strings
            .stack(sid)
            .get(pos)
            .copied()
            .unwrap_or_default();
        crate::clip::clip(&trace.strings.str(f)).into_owned()
    };
    for i in 0..trace.storage_count() {
        let id = AllocId(i as u32);
        if trace.storage_kind(id) != StorageKind::Block {
            continue;
        }
        let sid = trace.stack_id(id);
        let by_stack = *stacks.entry(sid.0).or_insert_with(|| {
            let frames = judged.stack(trace, sid, frame_signs);
            let mut methods = [None; 3];
            for (k, m) in methods.iter_mut().enumerate() {
                *m = frames.iter().position(|f| f.methods[k]);
            }
            StackSigns {
                methods,
                copy_at: copy_back_of(&frames),
            }
        });
        if let Some(pos) = by_stack.copy_at {
            let e = copied_back.get_or_insert_with(|| Evidence {
                allocations: 0,
                bytes: 0,
                example: format!(
                    "{} during backward (a copy onto the device)",
                    example(sid, pos)
                ),
            });
            e.allocations += 1;
            e.bytes += trace.size(id).0;
        }
        let name = trace.name_id(id);
        let by_name = *names.entry(name).or_insert_with(|| {
            let text = trace.strings.text(name);
            FRAME_METHODS.map(|m| shows(text, m))
        });
        for k in 0..FRAME_METHODS.len() {
            let shown = match by_stack.methods[k] {
                Some(pos) => Some(pos),
                None if by_name[k] => None,
                None => continue,
            };
            let e = found[k].get_or_insert_with(|| Evidence {
                allocations: 0,
                bytes: 0,
                example: match shown {
                    Some(pos) => example(sid, pos),
                    None => crate::clip::clip(trace.strings.text(name)).into_owned(),
                },
            });
            e.allocations += 1;
            e.bytes += trace.size(id).0;
        }
    }
    // Offloading named by no frame still shows in its copies back onto the device.
    if found[2].is_none() {
        found[2] = copied_back;
    }
    FRAME_METHODS
        .iter()
        .zip(found)
        .filter_map(|(m, e)| e.map(|e| (*m, e)))
        .collect()
}

fn shows(text: &str, m: Method) -> bool {
    let l = text.to_ascii_lowercase();
    m.signs().iter().any(|s| l.contains(s))
}

fn evidence_words(e: &Evidence) -> String {
    format!(
        "{} allocations, {}, e.g. {}",
        crate::trace::units::grouped(e.allocations),
        human_bytes(e.bytes),
        e.example
    )
}

/// The methods of two runs, compared; a batch or sequence change when their inputs differ.
pub(crate) fn compare_methods(ta: &Trace, tb: &Trace, parity: &Parity) -> Vec<MethodFinding> {
    let (ma, mb) = (methods_of(ta), methods_of(tb));
    let get = |v: &[(Method, Evidence)], m: Method| {
        v.iter().find(|(x, _)| *x == m).map(|(_, e)| e.clone())
    };
    let mut out = Vec::new();
    for m in FRAME_METHODS {
        let (a, b) = (get(&ma, m), get(&mb, m));
        let words = match (&a, &b) {
            (None, None) => continue,
            (None, Some(e)) => format!("B adds {} ({})", m.name(), evidence_words(e)),
            (Some(e), None) => format!("B drops {} (A: {})", m.name(), evidence_words(e)),
            (Some(x), Some(y)) => format!(
                "both use {} (A: {}; B: {})",
                m.name(),
                evidence_words(x),
                evidence_words(y)
            ),
        };
        out.push(MethodFinding {
            method: m,
            a,
            b,
            words,
        });
    }
    if let Some(l) = parity
        .lines
        .iter()
        .find(|l| l.line == "inputs" && l.state == LineState::Differs)
    {
        out.push(MethodFinding {
            method: Method::BatchOrSequenceChange,
            a: None,
            b: None,
            words: format!(
                "batch or sequence change (inputs {}): a throughput experiment, not a memory saving",
                l.words
                    .trim_start_matches("differs: ")
                    .trim_end_matches(" — a batch or sequence change")
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_back_onto_the_device_in_backward_are_offloading_and_casts_are_not() {
        // A saved tensor brought back from the host by an unpack hook, in a Kineto op stack.
        let back = [
            "aten::empty_strided",
            "aten::_to_copy",
            "aten::to",
            "autograd::engine::evaluate_function: MmBackward0",
        ];
        assert_eq!(copy_back_frame(&back), Some(1));
        // The same copy in forward (the batch, a prefetch) is not counted.
        assert_eq!(
            copy_back_frame(&["aten::_to_copy", "aten::to", "train.py:50 train_step"]),
            None
        );
        // A dtype cast's backward (autocast's ToCopyBackward0) is not a copy from the host.
        let cast = [
            "aten::_to_copy",
            "aten::to",
            "autograd::engine::evaluate_function: ToCopyBackward0",
        ];
        assert_eq!(copy_back_frame(&cast), None);
        // Compute in backward is not a copy.
        assert_eq!(
            copy_back_frame(&[
                "aten::mm",
                "autograd::engine::evaluate_function: MmBackward0"
            ]),
            None
        );
    }
}

//! The budget view (`B`): the serving budget of the device shown (docs/serving.md) — before
//! trace, weights, activation peak, KV cache, graphs, outside, headroom — each with its
//! bytes, its share of the capacity, its source and a legend, and the capture ladder. Its
//! state (the report layer's rows, made here so that drawing only paints them) and the
//! reducer steps (toggle, refresh on another device or appended events).

use super::state::ExplorerState;
use super::whatif::DeviceKey;
use crate::tui::device::Device;
use crate::tui::effect::Effect;
use crate::tui::shared::Shared;
use memtide_report::serving::{figures, ladder, Figure};
use std::sync::Arc;

/// The budget view's rows for one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetView {
    /// The device (and how much of it) the figures are of.
    pub device: DeviceKey,
    /// Before trace, weights, activation peak, KV cache, graphs, outside, headroom.
    pub figures: Vec<Figure>,
    /// The device's memory (the bars' full width); None when unknown.
    pub capacity: Option<u64>,
    /// How the headroom is worked out (or why it is unknown).
    pub headroom: &'static str,
    /// The capture ladder in one line, when the budget has one.
    pub ladder: Option<String>,
}

/// What the status line says when the trace holds no serving memory.
pub const NONE: &str =
    "no serving budget: the trace shows no stream capture, private pool or KV cache";

/// The view of `dev`'s budget; None when nothing in its trace is serving memory.
pub fn of(dev: &Arc<Device>) -> Option<BudgetView> {
    let b = dev.budget()?;
    Some(BudgetView {
        device: DeviceKey::of(dev),
        figures: figures(b),
        capacity: b.capacity,
        headroom: match (b.headroom, b.outside) {
            (None, _) => "headroom unknown: the capacity is unknown (--capacity SIZE)",
            (Some(_), Some(_)) => "headroom = capacity − reserve peak − outside",
            (Some(_), None) => {
                "headroom = capacity − reserve peak (memory outside PyTorch not measured)"
            }
        },
        ladder: ladder(b),
    })
}

/// `B`: opens the budget view (closing the allocator view and the inspector, whose panel it
/// takes) or closes it; says so when the trace has no serving memory.
pub fn toggle(sh: &mut Shared, ex: &mut ExplorerState, dev: &Arc<Device>) -> Vec<Effect> {
    if ex.budget.take().is_some() {
        return Vec::new();
    }
    let Some(v) = of(dev) else {
        sh.status = Some(NONE.into());
        return Vec::new();
    };
    ex.alloc = None;
    if ex.inspect.take().is_some() {
        super::nav::refresh_view(sh, ex);
    }
    ex.budget = Some(v);
    sh.status = Some("serving budget (B or Esc: close)".into());
    Vec::new()
}

/// Brings an open view up to date with the device shown (another device, events appended);
/// closes it when that device has no serving memory.
pub fn refresh(sh: &mut Shared, ex: &mut ExplorerState) {
    let Some(dev) = ex.device().cloned() else {
        return;
    };
    if ex
        .budget
        .as_ref()
        .is_some_and(|v| v.device != DeviceKey::of(&dev))
    {
        ex.budget = of(&dev);
        if ex.budget.is_none() {
            sh.status = Some(NONE.into());
        }
    }
}

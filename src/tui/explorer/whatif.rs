//! The what-if overlay (`w`): the reserved line PyTorch's caching allocator would draw under
//! the settings given on the command line (`--alloc-conf`; else the file's own, else the
//! defaults), simulated on a worker by the core's model and drawn over the recorded one.
//! Its state, the worker's computation, and the reducer steps (toggle, reply).

use super::nav::refresh_view;
use super::state::ExplorerState;
use crate::tui::device::Device;
use crate::tui::effect::Effect;
use crate::tui::fmt;
use crate::tui::shared::Shared;
use crate::tui::view::Viewport;
use memtide_core::allocator::sim::AllocConf;
use std::sync::Arc;

/// Which device (and how much of it) a simulation is of: its address and event count (a
/// followed file that grew, or another device, needs a new run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceKey {
    ptr: usize,
    events: usize,
}

impl DeviceKey {
    pub fn of(dev: &Arc<Device>) -> DeviceKey {
        DeviceKey {
            ptr: Arc::as_ptr(dev) as usize,
            events: dev.len(),
        }
    }
}

pub use memtide_report::whatif::SimOom;

/// A finished simulation, ready to draw: the report layer's overlay of one device.
#[derive(Clone, Debug)]
pub struct Overlay {
    pub device: DeviceKey,
    /// The simulated reserved line, its label, OOM, ceiling and fit.
    pub sim: memtide_report::whatif::Overlay,
}

impl std::ops::Deref for Overlay {
    type Target = memtide_report::whatif::Overlay;

    fn deref(&self) -> &Self::Target {
        &self.sim
    }
}

/// The overlay's state.
#[derive(Clone, Debug)]
pub enum Whatif {
    /// A worker is simulating (generation `gen`).
    Pending { gen: u64, device: DeviceKey },
    /// Simulated; drawn when `visible` (`w` hides it and shows it again without a rerun).
    Ready {
        overlay: Box<Overlay>,
        visible: bool,
    },
}

/// The status-line text while the worker runs.
pub const SIMULATING: &str = "simulating…";

/// The overlay to draw for `dev`, if one is shown.
pub fn shown<'a>(ex: &'a ExplorerState, dev: &Arc<Device>) -> Option<&'a Overlay> {
    shown_in(&ex.whatif, dev)
}

/// [`shown`], from the state field alone (the view can be borrowed beside it).
pub fn shown_in<'a>(w: &'a Option<Whatif>, dev: &Arc<Device>) -> Option<&'a Overlay> {
    match w {
        Some(Whatif::Ready {
            overlay,
            visible: true,
        }) if overlay.device == DeviceKey::of(dev) => Some(overlay),
        _ => None,
    }
}

/// Whether a simulation for `dev` is running.
pub fn pending(ex: &ExplorerState, dev: &Arc<Device>) -> bool {
    matches!(&ex.whatif, Some(Whatif::Pending { device, .. }) if *device == DeviceKey::of(dev))
}

/// Runs the simulation for `dev` (the worker's side): the report layer's overlay
/// ([`memtide_report::whatif::overlay`]) of this device.
pub fn simulate(dev: &Arc<Device>, conf: Option<&AllocConf>) -> Result<Overlay, String> {
    Ok(Overlay {
        device: DeviceKey::of(dev),
        sim: memtide_report::whatif::overlay(dev, conf)?,
    })
}

/// `w`: simulate (on a worker), hide, or show again; pressed while simulating, cancels.
pub fn toggle(
    sh: &mut Shared,
    ex: &mut ExplorerState,
    dev: &Arc<Device>,
    conf: Option<AllocConf>,
) -> Vec<Effect> {
    let key = DeviceKey::of(dev);
    match &mut ex.whatif {
        Some(Whatif::Pending { device, .. }) if *device == key => {
            ex.whatif = None;
            sh.status = Some("whatif: cancelled".into());
            refresh_view(sh, ex);
            return Vec::new();
        }
        Some(Whatif::Ready { overlay, visible }) if overlay.device == key => {
            *visible = !*visible;
            let text = if *visible {
                summary(overlay, dev)
            } else {
                "whatif overlay hidden (w: show)".into()
            };
            sh.status = Some(text);
            rescale(ex, dev);
            refresh_view(sh, ex);
            return Vec::new();
        }
        _ => {}
    }
    let gen = sh.gen();
    ex.whatif = Some(Whatif::Pending { gen, device: key });
    sh.status = Some(SIMULATING.into());
    refresh_view(sh, ex);
    vec![Effect::Whatif {
        gen,
        device: dev.clone(),
        conf,
    }]
}

/// The worker's reply: install the overlay (a stale or cancelled run is dropped).
pub fn done(sh: &mut Shared, ex: &mut ExplorerState, gen: u64, result: Result<Overlay, String>) {
    if !matches!(&ex.whatif, Some(Whatif::Pending { gen: g, .. }) if *g == gen) {
        return;
    }
    let Some(dev) = ex.device().cloned() else {
        ex.whatif = None;
        return;
    };
    match result {
        Ok(o) => {
            sh.status = Some(summary(&o, &dev));
            ex.whatif = Some(Whatif::Ready {
                overlay: Box::new(o),
                visible: true,
            });
        }
        Err(e) => {
            ex.whatif = None;
            sh.status = Some(format!("whatif: {e}"));
        }
    }
    rescale(ex, &dev);
    refresh_view(sh, ex);
}

/// What the status line says when the overlay is shown: the OOM, or the peak beside the
/// recorded one.
fn summary(o: &Overlay, dev: &Device) -> String {
    let under = o
        .ceiling
        .as_ref()
        .map_or("no ceiling: reserved peaks only".to_string(), |c| {
            format!("under the {c}")
        });
    if let Some(x) = &o.oom {
        return format!("whatif: {} {under} — {}", x.text, o.label);
    }
    let rec = match dev.reserved_peak {
        Some(r) => format!(" (recorded {})", fmt::bytes(r.0)),
        None => String::new(),
    };
    let fit = o.fit.as_ref().map_or(String::new(), |f| format!(" · {f}"));
    format!(
        "{}: peak {}{rec}{fit} · {under} · w hides",
        o.label,
        fmt::bytes(o.peak)
    )
}

/// The plot's scale: the device's own, raised to the simulated peak while it is shown.
fn rescale(ex: &mut ExplorerState, dev: &Arc<Device>) {
    let fresh = Viewport::whole(dev, ex.view.cursor);
    let top = shown(ex, dev).map_or(0, |o| o.peak);
    ex.view.ymax = fresh.ymax.max(top);
    ex.view.ceiling = fresh.ceiling;
    ex.view.flat = fresh.flat && top == 0;
}

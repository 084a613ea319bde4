//! The OOM panel's scroll (`J`/`K`): at any size its reasoning, advice, pinners and the
//! fixes checked by replay are reached by keys (at 80×24 the panel shows nine rows of them).

use super::state::ExplorerState;
use crate::tui::device::Device;
use crate::tui::effect::Effect;
use crate::tui::layout::{oom_body_rows, oom_max_scroll, oom_page};
use crate::tui::shared::Shared;

/// Scrolls the OOM panel a page down (`down`) or up; says where it is, or why nothing moved.
pub fn scroll(sh: &mut Shared, ex: &mut ExplorerState, dev: &Device, down: bool) -> Vec<Effect> {
    let Some(k) = ex.panel_oom() else {
        sh.status = Some(if dev.oom_at.is_empty() {
            "no out-of-memory event in this trace".into()
        } else {
            "no OOM panel here: o jumps to the next OOM, x pins the panel".into()
        });
        return Vec::new();
    };
    let Some(ooms) = ex.ooms(dev) else {
        sh.status =
            Some("this OOM is still being explained: its fix list is replayed behind".into());
        return Vec::new();
    };
    let Some(x) = ooms.get(k) else {
        return Vec::new();
    };
    let height = ex.layout(sh.width, sh.height).panel.height;
    if ex.alloc.is_some() || ex.budget.is_some() || height == 0 {
        sh.status = Some(
            "the OOM panel is hidden: Esc closes the inspector, the allocator or budget view"
                .into(),
        );
        return Vec::new();
    }
    let rows = oom_body_rows(x, sh.width);
    let max = oom_max_scroll(rows, height);
    let from = ex.oom_first_row(k).min(max);
    let page = oom_page(height);
    let to = if down {
        (from + page).min(max)
    } else {
        from.saturating_sub(page)
    };
    ex.oom_scroll = (k, to);
    let shown = (height as usize).saturating_sub(1).min(rows);
    sh.status = Some(if max == 0 {
        "the OOM panel shows all of it".into()
    } else if to == from {
        if down {
            "the end of the OOM panel (K: up)".into()
        } else {
            "the top of the OOM panel (J: down)".into()
        }
    } else {
        format!(
            "OOM panel rows {}–{} of {rows} (J/K: down/up)",
            to + 1,
            to + shown
        )
    });
    Vec::new()
}

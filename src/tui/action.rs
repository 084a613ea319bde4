//! Every user intent the explorer understands, as one enum (keys and mouse map to these in
//! `keymap.rs`; `update` handles them).

use serde::{Deserialize, Serialize};

/// One user intent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Quit,
    CursorLeft,
    CursorRight,
    PageLeft,
    PageRight,
    ZoomIn,
    ZoomOut,
    Home,
    End,
    JumpPeak,
    PrevMark,
    NextMark,
    PrevStepPeak,
    NextStepPeak,
    SelectUp,
    SelectDown,
    Inspect,
    Back,
    JumpAlloc,
    JumpFree,
    ToggleGroup,
    SearchStart,
    NextMatch,
    PrevMatch,
    ToggleBands,
    ToggleAxis,
    Help,
    Copy,
    /// Write the visible range as an SVG picture next to the trace file.
    Export,
    NextDevice,
    /// Follow the growing file (keep the newest events in sight) / pause.
    ToggleFollow,
    // The cache lab screen (`memtide lab`).
    LabStep,
    LabPlay,
    LabReset,
    LabCapacityLess,
    LabCapacityMore,
    LabStrideLess,
    LabStrideMore,
    LabFocus,
    LabDecrease,
    LabIncrease,
    /// The lab's mouse row in the help (the mouse itself arrives as `ClickAt`).
    LabClick,
    // The diff screen (`memtide diff A B`).
    DiffPrevStep,
    DiffNextStep,
    DiffPeakA,
    DiffPeakB,
    DiffMostDifferent,
    /// Typed into the search prompt.
    #[serde(skip)]
    SearchChar(char),
    #[serde(skip)]
    SearchBackspace,
    #[serde(skip)]
    SearchSubmit,
    #[serde(skip)]
    SearchCancel,
    /// A mouse click at a terminal cell.
    #[serde(skip)]
    ClickAt {
        col: u16,
        row: u16,
    },
}

impl Action {
    /// One line for the help overlay and docs/keys.md.
    pub fn describe(self) -> &'static str {
        match self {
            Action::Quit => "quit (cancels a load)",
            Action::CursorLeft => "cursor one column left",
            Action::CursorRight => "cursor one column right",
            Action::PageLeft => "page left",
            Action::PageRight => "page right",
            Action::ZoomIn => "zoom in around the cursor",
            Action::ZoomOut => "zoom out",
            Action::Home => "first event",
            Action::End => "last event",
            Action::JumpPeak => "jump to the global peak",
            Action::PrevMark => "previous mark (step/phase)",
            Action::NextMark => "next mark (step/phase)",
            Action::PrevStepPeak => "previous step's own peak",
            Action::NextStepPeak => "next step's own peak",
            Action::SelectUp => "select previous live row (scroll inspector)",
            Action::SelectDown => "select next live row (scroll inspector)",
            Action::Inspect => "inspect the selected storage",
            Action::Back => "close inspector / help / search",
            Action::JumpAlloc => "inspector: jump to its alloc",
            Action::JumpFree => "inspector: jump to its free",
            Action::ToggleGroup => "live set: list / by band / by frame",
            Action::SearchStart => "fuzzy search names and frames",
            Action::NextMatch => "next match (by size)",
            Action::PrevMatch => "previous match",
            Action::ToggleBands => "cycle shown bands",
            Action::ToggleAxis => "event axis / time axis",
            Action::Help => "this help",
            Action::Copy => "copy the selection's summary (OSC 52)",
            Action::Export => "export the view (SVG)",
            Action::NextDevice => "next device",
            Action::ToggleFollow => "follow the growing file on/off (-f)",
            Action::LabStep => "issue the next request",
            Action::LabPlay => "play / pause (2 requests per second)",
            Action::LabReset => "reset: empty the cache, back to request 0",
            Action::LabCapacityLess => "capacity C − 1 (resets)",
            Action::LabCapacityMore => "capacity C + 1 (resets)",
            Action::LabStrideLess => "stride s − 1 (resets)",
            Action::LabStrideMore => "stride s + 1 (resets)",
            Action::LabFocus => "focus the other control (C / s)",
            Action::LabDecrease => "focused control − 1 (resets)",
            Action::LabIncrease => "focused control + 1 (resets)",
            Action::LabClick => "press a [-] [+] or Step / Play / Reset button",
            Action::DiffPrevStep => "cursor to the previous aligned step",
            Action::DiffNextStep => "cursor to the next aligned step",
            Action::DiffPeakA => "cursor to A's peak",
            Action::DiffPeakB => "cursor to B's peak",
            Action::DiffMostDifferent => "next of the steps that differ most",
            Action::SearchChar(_) => "type into the search",
            Action::SearchBackspace => "delete a character",
            Action::SearchSubmit => "jump to the biggest match",
            Action::SearchCancel => "cancel the search",
            Action::ClickAt { .. } => "place the cursor",
        }
    }
}

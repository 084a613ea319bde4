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
    NextDevice,
    /// Follow the growing file (keep the newest events in sight) / pause.
    ToggleFollow,
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
            Action::NextDevice => "next device",
            Action::ToggleFollow => "follow the growing file on/off (-f)",
            Action::SearchChar(_) => "type into the search",
            Action::SearchBackspace => "delete a character",
            Action::SearchSubmit => "jump to the biggest match",
            Action::SearchCancel => "cancel the search",
            Action::ClickAt { .. } => "place the cursor",
        }
    }
}

//! Every user intent, as data: one enum per page (keys and mouse map to these through the
//! page's key table in `keymap.rs`; the page's reducer handles them), and [`Action`], which
//! says which page an intent is for.

/// One user intent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Leave (cancels loads in progress); the same on every page.
    Quit,
    /// Any key but `q` and the scrolling keys while the help overlay is shown.
    CloseHelp,
    /// Scroll the help overlay when it is taller than the screen (by rows; negative is up).
    ScrollHelp(i32),
    Explorer(ExplorerAction),
    Diff(DiffAction),
    Lab(LabAction),
    Ranks(RanksAction),
}

/// The explorer's intents (`memtide FILE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExplorerAction {
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
    /// Cursor to the next / previous out-of-memory event.
    NextOom,
    PrevOom,
    /// Pin the OOM panel open (it opens by itself when the cursor is on an OOM) / unpin.
    ToggleOomPanel,
    /// Scroll the OOM panel a page down / up (its advice, pinners and fixes at any size).
    OomDown,
    OomUp,
    /// Open / close the allocator view (segments and blocks at the cursor).
    ToggleAllocator,
    /// Allocator view: select the previous / next segment or block row.
    AllocUp,
    AllocDown,
    /// Allocator view: expand / collapse a segment, or inspect a block's allocation.
    AllocEnter,
    /// Allocator view: sort segments by size / free bytes / address.
    AllocSort,
    /// Times relative to the trace's first event / as the file's values.
    ToggleAbsoluteTime,
    /// Overlay the simulated reserved line (`--alloc-conf` settings) / hide it.
    ToggleWhatif,
    /// Open / close the budget view (the serving budget per stage, with its legend).
    ToggleBudget,
    /// Typed into the search prompt.
    SearchChar(char),
    SearchBackspace,
    SearchSubmit,
    SearchCancel,
    /// A mouse click at a terminal cell.
    ClickAt {
        col: u16,
        row: u16,
    },
}

/// The diff screen's intents (`memtide diff A B`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffAction {
    CursorLeft,
    CursorRight,
    Home,
    End,
    PrevStep,
    NextStep,
    PeakA,
    PeakB,
    MostDifferent,
    /// Opens or closes the fair-comparison panel (parity lines, boundaries, cost).
    Fair,
    /// Closes the fair-comparison panel.
    CloseFair,
    /// Scrolls the fair-comparison panel by this many rows (clamped).
    FairScroll(i32),
    Help,
    /// A mouse click at a terminal cell.
    ClickAt {
        col: u16,
        row: u16,
    },
}

/// The cache lab's intents (`memtide lab`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabAction {
    Step,
    Play,
    Reset,
    CapacityLess,
    CapacityMore,
    StrideLess,
    StrideMore,
    Focus,
    Decrease,
    Increase,
    Help,
    /// A mouse click at a terminal cell (a button or a control's row).
    ClickAt {
        col: u16,
        row: u16,
    },
}

/// The ranks overview's intents (`memtide DIR`, `memtide r0 r1 r2 …`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RanksAction {
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    /// Select the worst rank (the highest peak).
    Worst,
    /// Sort by rank / by peak.
    Sort,
    /// Mark / unmark the selected rank for the diff.
    Mark,
    /// Clear the marks.
    Unmark,
    /// Open the selected rank in the explorer (two marked: their diff).
    Open,
    /// Open the two marked ranks in the diff screen.
    Diff,
    Help,
    /// A mouse click at a terminal cell (selects a row).
    ClickAt {
        col: u16,
        row: u16,
    },
}

impl Action {
    /// The same intent at another terminal cell (for a click row of a key table).
    pub fn at_cell(self, col: u16, row: u16) -> Action {
        match self {
            Action::Explorer(ExplorerAction::ClickAt { .. }) => {
                Action::Explorer(ExplorerAction::ClickAt { col, row })
            }
            Action::Diff(DiffAction::ClickAt { .. }) => {
                Action::Diff(DiffAction::ClickAt { col, row })
            }
            Action::Lab(LabAction::ClickAt { .. }) => Action::Lab(LabAction::ClickAt { col, row }),
            Action::Ranks(RanksAction::ClickAt { .. }) => {
                Action::Ranks(RanksAction::ClickAt { col, row })
            }
            a => a,
        }
    }
}

//! Memory categories (fine-grained, as recorded) and the five bands they are drawn in.

/// The five stacked bands of the timeline (docs/concepts.md, fact 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Band {
    Persistent = 0,
    Activation = 1,
    Workspace = 2,
    External = 3,
    Unknown = 4,
}

impl Band {
    pub const ALL: [Band; 5] = [
        Band::Persistent,
        Band::Activation,
        Band::Workspace,
        Band::External,
        Band::Unknown,
    ];
    pub const COUNT: usize = 5;

    pub fn name(self) -> &'static str {
        match self {
            Band::Persistent => "persistent",
            Band::Activation => "activation",
            Band::Workspace => "workspace",
            Band::External => "external",
            Band::Unknown => "unknown",
        }
    }

    pub fn idx(self) -> usize {
        self as usize
    }

    pub fn from_idx(i: usize) -> Band {
        Band::ALL.get(i).copied().unwrap_or(Band::Unknown)
    }

    pub fn parse(s: &str) -> Option<Band> {
        Band::ALL.iter().copied().find(|b| b.name() == s)
    }
}

/// A recorded (or inferred) category; each maps to one [`Band`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    Param = 0,
    Grad = 1,
    Optimizer = 2,
    Buffer = 3,
    Activation = 4,
    Input = 5,
    AutogradDetail = 6,
    Workspace = 7,
    Temp = 8,
    External = 9,
    Unknown = 10,
    /// Band inferred as persistent without a finer category.
    InferredPersistent = 11,
    /// A block of a private pool (a CUDA graph's pool or a `MemPool`: a snapshot's
    /// `segment_pool_id` other than `(0, 0)`): held for the pool's life, never activation.
    PrivatePool = 12,
}

impl Category {
    pub const ALL: [Category; 13] = [
        Category::Param,
        Category::Grad,
        Category::Optimizer,
        Category::Buffer,
        Category::Activation,
        Category::Input,
        Category::AutogradDetail,
        Category::Workspace,
        Category::Temp,
        Category::External,
        Category::Unknown,
        Category::InferredPersistent,
        Category::PrivatePool,
    ];

    pub fn band(self) -> Band {
        match self {
            Category::Param
            | Category::Grad
            | Category::Optimizer
            | Category::Buffer
            | Category::InferredPersistent
            | Category::PrivatePool => Band::Persistent,
            Category::Activation | Category::Input | Category::AutogradDetail => Band::Activation,
            Category::Workspace | Category::Temp => Band::Workspace,
            Category::External => Band::External,
            Category::Unknown => Band::Unknown,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Category::Param => "param",
            Category::Grad => "grad",
            Category::Optimizer => "optimizer",
            Category::Buffer => "buffer",
            Category::Activation => "activation",
            Category::Input => "input",
            Category::AutogradDetail => "autograd_detail",
            Category::Workspace => "workspace",
            Category::Temp => "temp",
            Category::External => "external",
            Category::Unknown => "unknown",
            Category::InferredPersistent => "persistent",
            Category::PrivatePool => "private_pool",
        }
    }

    /// Parses a JSONL `cat` value (docs/formats.md).
    pub fn parse(s: &str) -> Option<Category> {
        Some(match s {
            "param" | "parameter" => Category::Param,
            "grad" | "gradient" => Category::Grad,
            "optimizer" | "optimizer_state" => Category::Optimizer,
            "buffer" => Category::Buffer,
            "activation" => Category::Activation,
            "input" => Category::Input,
            "autograd_detail" => Category::AutogradDetail,
            "workspace" => Category::Workspace,
            "temp" | "temporary" => Category::Temp,
            "external" => Category::External,
            "unknown" => Category::Unknown,
            "persistent" => Category::InferredPersistent,
            "private_pool" => Category::PrivatePool,
            _ => return None,
        })
    }

    pub fn from_u8(v: u8) -> Category {
        Category::ALL
            .get(v as usize)
            .copied()
            .unwrap_or(Category::Unknown)
    }
}

/// Per-band byte totals, indexed by [`Band::idx`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BandTotals(pub [u64; Band::COUNT]);

impl BandTotals {
    pub fn total(&self) -> u64 {
        self.0.iter().fold(0u64, |a, &b| a.saturating_add(b))
    }
    pub fn get(&self, b: Band) -> u64 {
        self.0[b.idx()]
    }
    pub fn add(&mut self, b: Band, n: u64) {
        self.0[b.idx()] = self.0[b.idx()].wrapping_add(n);
    }
    pub fn sub(&mut self, b: Band, n: u64) {
        self.0[b.idx()] = self.0[b.idx()].wrapping_sub(n);
    }
}

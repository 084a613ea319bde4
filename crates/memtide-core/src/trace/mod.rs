//! The trace model: units, interned strings and stacks, categories and bands, the columnar
//! trace. No terminal code.

pub(crate) mod band;
pub(crate) mod column64;
pub mod external;
pub(crate) mod intern;
pub(crate) mod model;
pub(crate) mod name_column;
pub(crate) mod narrow;
pub(crate) mod ranges;
pub(crate) mod requested;
pub(crate) mod size_column;
pub(crate) mod src_id_column;
pub(crate) mod units;

pub use band::{Band, BandTotals, Category};
pub use external::{DeviceLogInfo, DeviceServerLog, ExternalDetail, NsysInfo};
pub use intern::Interner;
pub use model::{
    BandsSource, Change, Clock, Distributed, EventKind, EventNumbers, Mark, MarkKind, NewBlock,
    StorageKind, Storages, Trace, View, FLAG_FROM_START, FLAG_INFERRED, NO_IDENTITIES, OPEN_END,
};
pub use units::{
    binary_scale, grouped, human_bytes, parse_size, AllocId, Bytes, Seq, StackId, StrId, Ts,
    BINARY_PREFIXES,
};

//! JSON scanning at the byte level, shared by the readers' fast paths.

pub(crate) mod scan;

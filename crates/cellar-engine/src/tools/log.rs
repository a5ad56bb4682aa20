//! WAL and manifest files: the record frame (`docs/format/wal.md`, `docs/format/manifest.md`) and the write batches a
//! WAL's records hold.

pub use crate::batch::{decode_batch, BatchOp, DecodedBatch};
pub use crate::log::{
    read_log, LogContents, LogKind, LogRecord, TailPolicy, FILE_HEADER_LEN, RECORD_HEADER_LEN,
};

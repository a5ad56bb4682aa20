//! The caching side of reading SSTs, apart from their format (`sst/`): the sharded block
//! cache, its admission doorkeeper, the budget of index and filter bytes pinned in memory,
//! the cold-start warm-up that reads a file whole once lookups have paid for it, and the
//! page cache probe of point reads. These hold and account for the blocks `sst/` decodes;
//! the format side reaches them only through the reader's `Source`.

pub(crate) mod admission;
mod block_cache;
pub(crate) mod budget;
pub(crate) mod probe;
pub(crate) mod warm;

pub(crate) use block_cache::{BlockCache, Cached};
pub(crate) use budget::MetadataBudget;
pub(crate) use warm::WarmUp;

//! Cellar's Rust client (`cellar-client`, blocking API) against `cellar serve --grpc`: the
//! import through its BufferedMutator (each writer thread its own connection and a 12 MiB
//! buffer: the write-up's "autoflush off" client) and open-loop point gets.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use cellar_client::blocking::{BufferedMutator, Client};

use crate::elliptics::openloop::{self, Plan};
use crate::error::{BenchError, Result};
use crate::import::RowReader;
use crate::measure::{share, Latency};

use super::{FAMILY, QUALIFIER};

fn err(op: &'static str, e: impl std::fmt::Display) -> BenchError {
    BenchError::engine("cellar-client", op, e)
}

fn connect(addr: SocketAddr) -> Result<Client> {
    Client::connect(format!("http://{addr}")).map_err(|e| err("connect", e))
}

/// What the import measured: the span of all writers and each put call's latency (most only
/// append to the buffer; the ones that fill it send it).
pub struct Import {
    pub seconds: f64,
    pub puts: Latency,
}

/// `writers` threads write their slices of the first `records` rows of `input`.
pub fn import(
    addr: SocketAddr,
    table: &str,
    input: &Path,
    records: u64,
    writers: usize,
    buffer_bytes: usize,
) -> Result<Import> {
    // Connections first, untimed (as the Python and Java clients connect before their clock).
    let mut mutators = Vec::with_capacity(writers);
    for _ in 0..writers {
        let client = connect(addr)?;
        mutators.push(std::sync::Mutex::new(Some(
            client
                .buffered_mutator(table)
                .with_buffer_bytes(buffer_bytes),
        )));
    }
    let (elapsed, lats) = crate::suite::run_threads(writers, |w| {
        let first: u64 = (0..w).map(|u| share(records, writers, u)).sum();
        let mut m = mutators[w]
            .lock()
            .ok()
            .and_then(|mut g| g.take())
            .ok_or_else(|| err("import", "writer's mutator taken twice"))?;
        write_slice(&mut m, input, first, share(records, writers, w))
    })?;
    let mut puts = Latency::default();
    for l in &lats {
        puts.merge(l);
    }
    Ok(Import {
        seconds: elapsed.as_secs_f64(),
        puts,
    })
}

fn write_slice(m: &mut BufferedMutator, input: &Path, first: u64, n: u64) -> Result<Latency> {
    let mut rows = RowReader::open(input, first, n)?;
    let mut lat = Latency::default();
    let (mut key, mut value) = (Vec::new(), Vec::new());
    while let Some(row) = rows.next_row().map_err(|e| BenchError::io(input, e))? {
        row.key(&mut key);
        row.value(&mut value);
        let t0 = Instant::now();
        m.put_cell(&key, FAMILY, QUALIFIER, &value)
            .map_err(|e| err("put", e))?;
        lat.record(t0.elapsed());
    }
    // The last partial buffer is part of the import (as HBase's flush() before close).
    m.flush().map_err(|e| err("flush", e))?;
    Ok(lat)
}

/// Open-loop point gets of `keys` (request j reads `keys[j % len]`) at `plan.rps`, over
/// `connections` connections shared by the plan's threads.
pub fn gets(
    addr: SocketAddr,
    table: &str,
    keys: &[Vec<u8>],
    plan: &Plan,
    connections: usize,
) -> Result<openloop::Outcome> {
    if keys.is_empty() {
        return Err(BenchError::Invalid("no keys to read".into()));
    }
    let clients = (0..connections.max(1))
        .map(|_| connect(addr))
        .collect::<Result<Vec<_>>>()?;
    // One request first on each connection, untimed: the connection is up before the clock.
    for c in &clients {
        c.get(table, keys[0].clone()).map_err(|e| err("get", e))?;
    }
    openloop::run(plan, |j| {
        let c = &clients[j as usize % clients.len()];
        let key = &keys[j as usize % keys.len()];
        let row = c.get(table, key.clone()).map_err(|e| err("get", e))?;
        Ok(row.is_some_and(|r| r.value(FAMILY, QUALIFIER).is_some()))
    })
}

/// Drops and creates `table` with family `d` over gRPC (when no Python is there to do it
/// over Thrift).
pub fn create_table(addr: SocketAddr, table: &str) -> Result<()> {
    use cellar_client::{FamilySchema, TableSchema};
    let c = connect(addr)?;
    c.drop_table(table, true)
        .map_err(|e| err("drop_table", e))?;
    let mut schema = TableSchema::new(table);
    schema.families.push(FamilySchema::new(FAMILY));
    c.create_table(&schema, false)
        .map_err(|e| err("create_table", e))
}

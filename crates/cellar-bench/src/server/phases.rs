//! The phases of `cellar-bench server` on each system (see mod.rs for the list): each
//! server is owned by a [`ServerProcess`] guard, so it stops whatever a phase returns.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::proc::{ServerProcess, StopBy};
use super::python::{Api, GetJob, ImportJob, Outcome, PyDriver};
use super::record::ServerRecord;
use super::{
    invalid, ImportFigures, Run, ServerArgs, CELLAR_START, HAPPYBASE, HBASE_NATIVE_TIMEOUT,
    HBASE_START, HBASE_STOP, HBASE_THRIFT_SERVER,
};
use crate::error::{BenchError, Result};
use crate::import;
use crate::java::{self, JavaPeer};
use crate::suite::SuiteRecord;

const CELLAR_SERVER: &str = "cellar serve";
const GATEWAY_MAIN: &str = "dev.cellar.peers.HBaseThriftGateway";

/// The `cellar` binary: --cellar-bin, else the one beside this executable.
fn cellar_bin(a: &ServerArgs) -> Option<PathBuf> {
    a.cellar_bin.clone().or_else(|| {
        let exe = std::env::current_exe().ok()?;
        Some(exe.parent()?.join("cellar"))
    })
}

/// Cellar: the embedded baseline, then everything over `cellar serve`.
pub fn cellar(run: &mut Run, a: &ServerArgs, py: Option<&PyDriver>) -> Result<()> {
    let cfg = run.cfg.clone();
    eprintln!("[server] cellar: embedded import (the baseline), no server running");
    let (got, r) = import::embedded_buffered(
        &cfg.input,
        cfg.records,
        &cfg.writers,
        &cfg.db_dir,
        cfg.buffer_bytes,
    );
    for mut s in got {
        s.variant = s.variant.replace("buffered/", "embedded/");
        s.workload = "server".into();
        let client = "embedded: cellar-bench import, Engine::put_batch per 12 MiB, in-process";
        let rec = ServerRecord::new(s, client, "none (in-process)");
        run.push(rec);
    }
    run.keep("cellar embedded import", r);

    let bin = match cellar_bin(a) {
        Some(b) if b.is_file() => b,
        other => {
            let at = other.map_or_else(|| "?".into(), |p| p.display().to_string());
            run.note_skip(
                "cellar",
                "thrift/*, native/*, get-*",
                format!(
                    "no `cellar` binary at {at} (cargo build --release -p cellar-cli, or \
                     --cellar-bin)"
                ),
            );
            return Ok(());
        }
    };
    let db = cfg.db_dir.join("server-cellar");
    crate::procfs::remove_dir(&db)?;
    let mut cmd = Command::new(bin);
    cmd.arg("serve").arg("--db").arg(&db).args([
        "--thrift",
        "127.0.0.1:0",
        "--grpc",
        "127.0.0.1:0",
        "--http",
        "none",
    ]);
    let server = ServerProcess::start(
        CELLAR_SERVER,
        cmd,
        &["thrift", "grpc"],
        CELLAR_START,
        StopBy::Sigterm,
        Duration::from_secs(60),
    )?;
    let r = on_cellar_server(run, py, server.addr("thrift")?, server.addr("grpc")?);
    let stopped = server.stop();
    r.and(stopped)?;
    crate::procfs::remove_dir(&db)
}

fn on_cellar_server(
    run: &mut Run,
    py: Option<&PyDriver>,
    thrift: SocketAddr,
    grpc: SocketAddr,
) -> Result<()> {
    let writers = run.cfg.writers.clone();
    if let Some(py) = py {
        for &w in &writers {
            let r = happybase_import(run, py, "cellar", CELLAR_SERVER, thrift, w);
            run.keep(&format!("cellar happybase w{w}"), r);
        }
    }
    rust_client_phases(run, py, thrift, grpc)?;
    if let Some(py) = py {
        python_grpc_import(run, py, grpc)?;
        let w = writers.iter().copied().max().unwrap_or(1);
        thrift_gets(
            run,
            py,
            "cellar",
            CELLAR_SERVER,
            thrift,
            &format!("thrift_w{w}"),
        )?;
    }
    Ok(())
}

/// happybase → a Thrift gateway: a fresh table `thrift_wN`, N writer processes, read back.
fn happybase_import(
    run: &mut Run,
    py: &PyDriver,
    engine: &str,
    server: &str,
    addr: SocketAddr,
    writers: usize,
) -> Result<()> {
    let table = format!("thrift_w{writers}");
    let cfg = run.cfg.clone();
    if let Outcome::Skipped(why) = py.create_table(addr, &table, Api::Happybase)? {
        run.note_skip(engine, &format!("thrift/w{writers}"), why);
        return Ok(());
    }
    let job = ImportJob {
        addr,
        table: &table,
        input: &cfg.input,
        records: cfg.records,
        writers,
        batch_size: cfg.batch_size,
        api: Api::Happybase,
    };
    let imp = match py.import(&job)? {
        Outcome::Ran(i) => i,
        Outcome::Skipped(why) => {
            run.note_skip(engine, &format!("thrift/w{writers}"), why);
            return Ok(());
        }
    };
    py.verify(addr, &table, &cfg.input, cfg.records)?;
    let s = run.import_record(
        engine,
        format!("thrift/w{writers}"),
        ImportFigures {
            rows: imp.rows,
            seconds: imp.seconds,
            writers,
            lat: imp.sends,
            op: "mutateRows",
            unit: "batch send (mutateRows)",
            notes: vec![
                format!(
                    "{writers} Python processes, table.batch(batch_size={}) each",
                    cfg.batch_size
                ),
                "span from the first writer's start to the last one's end".into(),
            ],
        },
    );
    let rec = ServerRecord::new(s, HAPPYBASE, server);
    run.push(rec);
    Ok(())
}

/// The Python gRPC client (clients/python): skipped with a note while it is not installed.
fn python_grpc_import(run: &mut Run, py: &PyDriver, grpc: SocketAddr) -> Result<()> {
    let cfg = run.cfg.clone();
    for &w in &cfg.writers {
        let table = format!("grpc_python_w{w}");
        if let Outcome::Skipped(why) = py.create_table(grpc, &table, Api::Grpc)? {
            run.note_skip("cellar", "grpc-python/*", why);
            return Ok(());
        }
        let job = ImportJob {
            addr: grpc,
            table: &table,
            input: &cfg.input,
            records: cfg.records,
            writers: w,
            batch_size: cfg.batch_size,
            api: Api::Grpc,
        };
        let imp = match py.import(&job)? {
            Outcome::Ran(i) => i,
            Outcome::Skipped(why) => {
                run.note_skip("cellar", "grpc-python/*", why);
                return Ok(());
            }
        };
        let s = run.import_record(
            "cellar",
            format!("grpc-python/w{w}"),
            ImportFigures {
                rows: imp.rows,
                seconds: imp.seconds,
                writers: w,
                lat: imp.sends,
                op: "Mutate",
                unit: "batch send (Mutate)",
                notes: vec![format!(
                    "{w} Python processes, table.batch(batch_size={}) each",
                    cfg.batch_size
                )],
            },
        );
        let rec = ServerRecord::new(s, "cellar Python gRPC client", CELLAR_SERVER);
        run.push(rec);
    }
    Ok(())
}

/// happybase point gets at each rate on `table`.
fn thrift_gets(
    run: &mut Run,
    py: &PyDriver,
    engine: &str,
    server: &str,
    addr: SocketAddr,
    table: &str,
) -> Result<()> {
    let cfg = run.cfg.clone();
    for &rate in &cfg.rates {
        let job = GetJob {
            addr,
            table,
            input: &cfg.input,
            records: cfg.records,
            rate: rate as f64,
            seconds: cfg.get_seconds,
            threads: cfg.get_threads,
        };
        let g = match py.gets(&job)? {
            Outcome::Ran(g) => g,
            Outcome::Skipped(why) => {
                run.note_skip(engine, "get-thrift/*", why);
                return Ok(());
            }
        };
        let s = run.get_record(
            engine,
            format!("get-thrift/r{rate}"),
            GetFigures {
                completed: g.completed,
                found: g.found,
                seconds: g.seconds,
                p50_us: g.p50_us.unwrap_or(f64::NAN),
                p99_us: g.p99_us.unwrap_or(f64::NAN),
                threads: g.threads,
            },
        );
        let mut rec = ServerRecord::new(s, HAPPYBASE, server);
        rec.target_rps = Some(rate as f64);
        rec.unserved = Some(g.unserved);
        run.push(rec);
    }
    Ok(())
}

pub struct GetFigures {
    pub completed: u64,
    pub found: u64,
    pub seconds: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub threads: usize,
}

#[cfg(feature = "grpc-client")]
fn rust_client_phases(
    run: &mut Run,
    py: Option<&PyDriver>,
    thrift: SocketAddr,
    grpc: SocketAddr,
) -> Result<()> {
    use super::client;
    const CLIENT: &str = "cellar-client BufferedMutator (Rust, gRPC, blocking API)";
    let cfg = run.cfg.clone();
    let mut last_table = None;
    for &w in &cfg.writers {
        let table = format!("native_w{w}");
        match py {
            // The same creation path as the happybase tables.
            Some(py) => {
                if let Outcome::Skipped(why) = py.create_table(thrift, &table, Api::Happybase)? {
                    return Err(invalid(why));
                }
            }
            None => client::create_table(grpc, &table)?,
        }
        let imp = client::import(
            grpc,
            &table,
            &cfg.input,
            cfg.records,
            w,
            cfg.buffer_bytes as usize,
        )?;
        if let Some(py) = py {
            py.verify(thrift, &table, &cfg.input, cfg.records)?;
        }
        let s = run.import_record(
            "cellar",
            format!("native/w{w}"),
            ImportFigures {
                rows: cfg.records,
                seconds: imp.seconds,
                writers: w,
                lat: imp.puts,
                op: "put",
                unit: "put call",
                notes: vec![format!(
                    "{w} threads, each its own connection and a {} MiB BufferedMutator; \
                     final flush timed",
                    cfg.buffer_bytes >> 20
                )],
            },
        );
        let rec = ServerRecord::new(s, CLIENT, CELLAR_SERVER);
        run.push(rec);
        last_table = Some(table);
    }
    let Some(table) = last_table else {
        return Ok(());
    };
    let keys = super::random_keys(&cfg.input, cfg.records, 100_000, cfg.seed + 1)?;
    for &rate in &cfg.rates {
        let plan = crate::elliptics::openloop::Plan {
            rps: rate as f64,
            duration: Duration::from_secs_f64(cfg.get_seconds),
            threads: cfg.get_threads,
            grace: Duration::from_secs(1),
        };
        let o = client::gets(grpc, &table, &keys, &plan, cfg.get_threads)?;
        let s = run.get_record(
            "cellar",
            format!("get-grpc/r{rate}"),
            GetFigures {
                completed: o.completed,
                found: o.found,
                seconds: o.seconds,
                p50_us: o.latency.quantile_us(0.50),
                p99_us: o.latency.quantile_us(0.99),
                threads: cfg.get_threads,
            },
        );
        let mut rec = ServerRecord::new(s, "cellar-client get (Rust, gRPC)", CELLAR_SERVER);
        rec.target_rps = Some(rate as f64);
        rec.unserved = Some(o.unserved);
        run.push(rec);
    }
    Ok(())
}

#[cfg(not(feature = "grpc-client"))]
fn rust_client_phases(
    run: &mut Run,
    _py: Option<&PyDriver>,
    _thrift: SocketAddr,
    _grpc: SocketAddr,
) -> Result<()> {
    run.note_skip(
        "cellar",
        "native/*, get-grpc/*",
        "built without the Rust client (cargo feature `grpc-client`)".into(),
    );
    Ok(())
}

/// HBase: the mini-cluster with its Thrift gateway in one JVM; happybase, gets, then the
/// native BufferedMutator on the same cluster.
pub fn hbase(run: &mut Run, a: &ServerArgs, py: Option<&PyDriver>) -> Result<()> {
    let java_dir = a.java_dir.clone().unwrap_or_else(java::default_java_dir);
    let mut cmd = match JavaPeer::HBase.command_with_main(&java_dir, a.java_heap_mb, GATEWAY_MAIN) {
        Ok(c) => c,
        Err(why) => {
            run.note_skip("hbase", "*", why);
            return Ok(());
        }
    };
    let dir = run.cfg.db_dir.join("server-hbase");
    crate::procfs::remove_dir(&dir)?;
    cmd.arg("--dir").arg(&dir);
    eprintln!("[server] hbase: starting the mini-cluster and its Thrift gateway");
    let mut gateway = ServerProcess::start(
        "hbase-thrift",
        cmd,
        &["thrift"],
        HBASE_START,
        StopBy::StdinClose,
        HBASE_STOP,
    )?;
    let r = on_hbase_gateway(run, py, &mut gateway);
    let stopped = gateway.stop();
    r.and(stopped)?;
    crate::procfs::remove_dir(&dir)
}

fn on_hbase_gateway(
    run: &mut Run,
    py: Option<&PyDriver>,
    gateway: &mut ServerProcess,
) -> Result<()> {
    let thrift = gateway.addr("thrift")?;
    let writers = run.cfg.writers.clone();
    if let Some(py) = py {
        for &w in &writers {
            let r = happybase_import(run, py, "hbase", HBASE_THRIFT_SERVER, thrift, w);
            run.keep(&format!("hbase happybase w{w}"), r);
        }
        let w = writers.iter().copied().max().unwrap_or(1);
        let r = thrift_gets(
            run,
            py,
            "hbase",
            HBASE_THRIFT_SERVER,
            thrift,
            &format!("thrift_w{w}"),
        );
        run.keep("hbase get-thrift", r);
    }
    hbase_native(run, gateway)
}

/// HBaseImport's buffered variants on the gateway's cluster (bench/java, stdin command).
fn hbase_native(run: &mut Run, gateway: &mut ServerProcess) -> Result<()> {
    let cfg = run.cfg.clone();
    let input = cfg.input.display().to_string();
    if input.contains(char::is_whitespace) {
        return Err(invalid(format!(
            "the HBase gateway's commands are split at spaces: use a --db-dir without them ({input})"
        )));
    }
    let writers: Vec<String> = cfg.writers.iter().map(|w| w.to_string()).collect();
    gateway.send_line(&format!(
        "import --input {input} --records {} --writers {} --buffer-mb {} --buffered-only",
        cfg.records,
        writers.join(","),
        cfg.buffer_bytes >> 20
    ))?;
    let deadline = Instant::now() + HBASE_NATIVE_TIMEOUT;
    loop {
        let line = gateway.next_line(deadline)?;
        if line == "done import" {
            return Ok(());
        }
        if let Some(why) = line.strip_prefix("failed import") {
            return Err(BenchError::Child {
                engine: "hbase".into(),
                what: format!("native import failed{why}"),
            });
        }
        if !line.starts_with('{') {
            eprintln!("[hbase-thrift stdout] {line}");
            continue;
        }
        let mut s: SuiteRecord = serde_json::from_str(&line).map_err(|e| BenchError::Child {
            engine: "hbase".into(),
            what: format!("sent a malformed result ({e}): {line}"),
        })?;
        s.variant = s.variant.replace("buffered/", "native/");
        s.workload = "server".into();
        let client = "HBase 2.6.1 BufferedMutator (Java, in the cluster's JVM)";
        let rec = ServerRecord::new(s, client, "HBase 2.6.1 mini-cluster");
        run.push(rec);
    }
}

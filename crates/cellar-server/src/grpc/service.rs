//! The `Cellar` service: each unary method checks its request, runs the engine work on the
//! blocking pool through `ServerState::run_blocking` (which records the request's metrics),
//! and counts the bytes in and out.

use std::sync::Arc;

use cellar_proto::v1 as pb;
use cellar_proto::v1::cellar_server::Cellar;
use cellar_table::{ColumnSelector, ScanSpec, Table, TableError};
use prost::Message;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

use super::convert::{self, ApiError};
use super::{hql, load, scan};
use crate::metrics::Protocol;
use crate::rows::Row;
use crate::state::ServerState;

/// Most rows one MultiGet may name: each is a point read, and the reply is one message.
const MAX_MULTI_GET_ROWS: usize = 100_000;

pub struct CellarService {
    state: Arc<ServerState>,
    shutdown: CancellationToken,
}

impl CellarService {
    pub fn new(state: Arc<ServerState>, shutdown: CancellationToken) -> Self {
        CellarService { state, shutdown }
    }

    /// Runs `f` on the blocking pool with the request's metrics.
    async fn unary<Q, R, F>(
        &self,
        method: &'static str,
        req: Request<Q>,
        f: F,
    ) -> Result<Response<R>, Status>
    where
        Q: Message + Send + 'static,
        R: Message + Send + 'static,
        F: FnOnce(&ServerState, Q) -> Result<R, ApiError> + Send + 'static,
    {
        let req = req.into_inner();
        self.state
            .metrics
            .received(Protocol::Grpc, req.encoded_len());
        let reply = self
            .state
            .run_blocking(Protocol::Grpc, method, move |state| f(state, req))
            .await?;
        self.state.metrics.sent(Protocol::Grpc, reply.encoded_len());
        Ok(Response::new(reply))
    }
}

#[tonic::async_trait]
impl Cellar for CellarService {
    async fn list_tables(
        &self,
        req: Request<pb::ListTablesRequest>,
    ) -> Result<Response<pb::ListTablesResponse>, Status> {
        self.unary("ListTables", req, |state, _| {
            Ok(pb::ListTablesResponse {
                tables: state.store.list_tables(),
            })
        })
        .await
    }

    async fn create_table(
        &self,
        req: Request<pb::CreateTableRequest>,
    ) -> Result<Response<pb::CreateTableResponse>, Status> {
        self.unary("CreateTable", req, |state, req| {
            let schema = req
                .schema
                .ok_or_else(|| convert::invalid("CreateTable needs a schema"))?;
            let schema = convert::schema_from_proto(schema)?;
            match state.store.create_table(schema) {
                Err(TableError::TableExists(_)) if req.if_not_exists => {}
                r => r?,
            }
            Ok(pb::CreateTableResponse {})
        })
        .await
    }

    async fn drop_table(
        &self,
        req: Request<pb::DropTableRequest>,
    ) -> Result<Response<pb::DropTableResponse>, Status> {
        self.unary("DropTable", req, |state, req| {
            convert::require_table(&req.table)?;
            match state.store.drop_table(&req.table) {
                Err(TableError::TableNotFound(_)) if req.if_exists => {}
                r => r?,
            }
            state.forget_table(&req.table);
            Ok(pb::DropTableResponse {})
        })
        .await
    }

    async fn describe_table(
        &self,
        req: Request<pb::DescribeTableRequest>,
    ) -> Result<Response<pb::TableSchema>, Status> {
        self.unary("DescribeTable", req, |state, req| {
            convert::require_table(&req.table)?;
            Ok(convert::schema_to_proto(&state.store.describe(&req.table)?))
        })
        .await
    }

    /// Never reached: the guard (`auth.rs`) serves `Mutate` from the request's bytes
    /// (`mutate.rs`) before this service decodes anything.
    async fn mutate(
        &self,
        _req: Request<pb::MutateRequest>,
    ) -> Result<Response<pb::MutateResponse>, Status> {
        Err(Status::internal(
            "Mutate is served by grpc::mutate, behind grpc::auth::Guard",
        ))
    }

    async fn increment(
        &self,
        req: Request<pb::IncrementRequest>,
    ) -> Result<Response<pb::IncrementResponse>, Status> {
        self.unary("Increment", req, |state, req| {
            convert::require_table(&req.table)?;
            let durability = convert::durability(req.durability, state)?;
            let table = state.table(&req.table)?;
            let column = [req.family.as_bytes(), b":", &req.qualifier].concat();
            let _counter = state.counter_lock(&req.table, &req.row, &column).lock();
            let current = read_counter(&table, &req)?;
            let value = current.checked_add(req.amount).ok_or_else(|| {
                Status::out_of_range(format!(
                    "counter {current} + {} overflows a 64-bit signed integer",
                    req.amount
                ))
            })?;
            table.put(
                &req.row,
                &req.family,
                &req.qualifier,
                None,
                &value.to_be_bytes(),
                durability,
            )?;
            Ok(pb::IncrementResponse { value })
        })
        .await
    }

    async fn get(&self, req: Request<pb::GetRequest>) -> Result<Response<pb::GetResponse>, Status> {
        self.unary("Get", req, |state, req| {
            convert::require_table(&req.table)?;
            let spec = read_spec(req.columns, req.time_range, req.max_versions)?;
            let table = state.table(&req.table)?;
            let row = read_row(&table, &spec, req.row)?.map(convert::row_to_proto);
            Ok(pb::GetResponse { row })
        })
        .await
    }

    async fn multi_get(
        &self,
        req: Request<pb::MultiGetRequest>,
    ) -> Result<Response<pb::MultiGetResponse>, Status> {
        self.unary("MultiGet", req, |state, req| {
            convert::require_table(&req.table)?;
            if req.rows.len() > MAX_MULTI_GET_ROWS {
                return Err(convert::invalid(format!(
                    "MultiGet names {} rows, at most {MAX_MULTI_GET_ROWS} are allowed: split it or scan",
                    req.rows.len()
                ))
                .into());
            }
            let mut spec = read_spec(req.columns, req.time_range, req.max_versions)?;
            let table = state.table(&req.table)?;
            // Every row as of one instant.
            spec.snapshot = Some(state.store.db().snapshot());
            let mut rows = Vec::new();
            for key in req.rows {
                if let Some(row) = read_row(&table, &spec, key)? {
                    rows.push(convert::row_to_proto(row));
                }
            }
            Ok(pb::MultiGetResponse { rows })
        })
        .await
    }

    type ScanStream = scan::ScanStream;

    async fn scan(
        &self,
        req: Request<pb::ScanRequest>,
    ) -> Result<Response<Self::ScanStream>, Status> {
        let req = req.into_inner();
        self.state
            .metrics
            .received(Protocol::Grpc, req.encoded_len());
        scan::start(&self.state, &self.shutdown, req)
            .await
            .map(Response::new)
    }

    async fn split_points(
        &self,
        req: Request<pb::SplitPointsRequest>,
    ) -> Result<Response<pb::SplitPointsResponse>, Status> {
        self.unary("SplitPoints", req, |state, req| {
            convert::require_table(&req.table)?;
            if req.parts == 0 {
                return Err(convert::invalid("SplitPoints needs parts >= 1").into());
            }
            let table = state.table(&req.table)?;
            Ok(pb::SplitPointsResponse {
                rows: table.split_rows(req.parts as usize)?,
            })
        })
        .await
    }

    type HqlStream = hql::HqlStream;

    async fn hql(&self, req: Request<pb::HqlRequest>) -> Result<Response<Self::HqlStream>, Status> {
        let req = req.into_inner();
        self.state
            .metrics
            .received(Protocol::Grpc, req.encoded_len());
        hql::start(&self.state, req).map(Response::new)
    }

    async fn load(
        &self,
        req: Request<Streaming<pb::LoadRequest>>,
    ) -> Result<Response<pb::LoadResponse>, Status> {
        load::run(&self.state, req.into_inner())
            .await
            .map(Response::new)
    }
}

/// The scan spec of a Get or MultiGet (its rows set per row).
fn read_spec(
    columns: Vec<pb::Column>,
    time_range: Option<pb::TimeRange>,
    max_versions: u32,
) -> Result<ScanSpec, Status> {
    Ok(ScanSpec {
        columns: convert::columns(columns)?,
        time_range: convert::time_range(time_range)?,
        max_versions: convert::max_versions(max_versions),
        ..ScanSpec::default()
    })
}

/// One row's cells under `spec`; `None` when it has none.
fn read_row(table: &Table, spec: &ScanSpec, key: Vec<u8>) -> Result<Option<Row>, TableError> {
    let spec = ScanSpec {
        rows: cellar_table::RowSelection::Exact(key.clone()),
        ..spec.clone()
    };
    let cells = table.scan(spec)?.collect::<Result<Vec<_>, _>>()?;
    Ok((!cells.is_empty()).then_some(Row { key, cells }))
}

/// The counter's current value: 0 when the column has no cell.
fn read_counter(table: &Table, req: &pb::IncrementRequest) -> Result<i64, ApiError> {
    let spec = ScanSpec {
        rows: cellar_table::RowSelection::Exact(req.row.clone()),
        columns: vec![ColumnSelector::Column {
            family: req.family.clone(),
            qualifier: req.qualifier.clone(),
        }],
        max_versions: Some(1),
        ..ScanSpec::default()
    };
    let Some(cell) = table.scan(spec)?.next().transpose()? else {
        return Ok(0);
    };
    let bytes: [u8; 8] = cell.value.as_slice().try_into().map_err(|_| {
        Status::failed_precondition(format!(
            "the cell ({:?}, {}:{:?}) holds {} bytes, not an 8-byte big-endian counter",
            String::from_utf8_lossy(&req.row),
            req.family,
            String::from_utf8_lossy(&req.qualifier),
            cell.value.len()
        ))
    })?;
    Ok(i64::from_be_bytes(bytes))
}

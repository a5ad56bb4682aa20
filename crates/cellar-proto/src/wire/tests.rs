use proptest::prelude::*;
use prost::Message;

use super::*;
use crate::v1 as pb;

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

fn kind() -> impl Strategy<Value = Option<pb::mutation::Kind>> {
    let put = (
        bytes(8),
        "[a-z]{0,3}",
        bytes(4),
        any::<Option<u64>>(),
        bytes(300),
    )
        .prop_map(|(row, family, qualifier, timestamp, value)| {
            pb::mutation::Kind::Put(pb::Put {
                row,
                family,
                qualifier,
                timestamp,
                value,
            })
        });
    let delete = (
        bytes(8),
        "[a-z]{0,3}",
        any::<Option<Vec<u8>>>(),
        any::<Option<u64>>(),
    )
        .prop_map(|(row, family, qualifier, timestamp)| {
            pb::mutation::Kind::Delete(pb::Delete {
                row,
                family,
                qualifier,
                timestamp,
            })
        });
    prop_oneof![4 => put.prop_map(Some), 2 => delete.prop_map(Some), 1 => Just(None)]
}

fn request() -> impl Strategy<Value = pb::MutateRequest> {
    let mutations = prop::collection::vec(kind().prop_map(|kind| pb::Mutation { kind }), 0..20);
    (
        "[a-z_]{0,6}",
        mutations,
        prop_oneof![Just(0), Just(2), any::<i32>()],
    )
        .prop_map(|(table, mutations, durability)| pb::MutateRequest {
            table,
            mutations,
            durability,
        })
}

/// What `MutateRequestRef` reads from `buf`, in owned form.
fn read(buf: &[u8]) -> std::result::Result<pb::MutateRequest, WireError> {
    let req = MutateRequestRef::parse(buf)?;
    let mut out = pb::MutateRequest {
        table: req.table.to_string(),
        durability: req.durability,
        mutations: Vec::new(),
    };
    for m in req.mutations() {
        let kind = m?.map(|m| match m {
            MutationRef::Put(p) => pb::mutation::Kind::Put(pb::Put {
                row: p.row.to_vec(),
                family: p.family.to_string(),
                qualifier: p.qualifier.to_vec(),
                timestamp: p.timestamp,
                value: p.value.to_vec(),
            }),
            MutationRef::Delete(d) => pb::mutation::Kind::Delete(pb::Delete {
                row: d.row.to_vec(),
                family: d.family.to_string(),
                qualifier: d.qualifier.map(<[u8]>::to_vec),
                timestamp: d.timestamp,
            }),
        });
        out.mutations.push(pb::Mutation { kind });
    }
    assert_eq!(out.mutations.len(), req.len());
    Ok(out)
}

/// The borrowed form of a generated `Mutation` (`None`: neither kind set).
fn mutation_ref(m: &pb::Mutation) -> Option<MutationRef<'_>> {
    use pb::mutation::Kind;
    Some(match m.kind.as_ref()? {
        Kind::Put(p) => MutationRef::Put(PutRef {
            row: &p.row,
            family: &p.family,
            qualifier: &p.qualifier,
            timestamp: p.timestamp,
            value: &p.value,
        }),
        Kind::Delete(d) => MutationRef::Delete(DeleteRef {
            row: &d.row,
            family: &d.family,
            qualifier: d.qualifier.as_deref(),
            timestamp: d.timestamp,
        }),
    })
}

/// The request as `BufferedMutator` writes it: header, then one entry per mutation.
fn write(req: &pb::MutateRequest) -> Vec<u8> {
    let mut buf = Vec::new();
    encode_request_header(&req.table, req.durability, &mut buf);
    let header = buf.len();
    let mut sum = 0;
    for m in &req.mutations {
        let m = mutation_ref(m).expect("a kind");
        m.encode_entry(&mut buf);
        sum += m.entry_len();
    }
    assert_eq!(buf.len() - header, sum, "entry_len");
    buf
}

proptest! {
    #[test]
    fn reads_what_prost_writes(req in request()) {
        prop_assert_eq!(read(&req.encode_to_vec()), Ok(req));
    }

    #[test]
    fn prost_reads_what_it_writes(mut req in request()) {
        req.mutations.retain(|m| m.kind.is_some());
        let buf = write(&req);
        if req.durability == 0 {
            // prost writes fields in number order; the header puts durability first.
            prop_assert_eq!(&buf, &req.encode_to_vec());
        }
        prop_assert_eq!(pb::MutateRequest::decode(&buf[..]).ok(), Some(req));
    }

    /// A damaged request never panics, and whatever it reads, prost reads alike.
    #[test]
    fn damaged_requests_read_as_prost_reads_them(
        req in request(),
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let mut buf = req.encode_to_vec();
        for (at, byte) in flips {
            if !buf.is_empty() {
                let i = at.index(buf.len());
                buf[i] ^= byte;
            }
        }
        buf.truncate(cut.index(buf.len() + 1));
        if let Ok(ours) = read(&buf) {
            prop_assert_eq!(pb::MutateRequest::decode(&buf[..]).ok(), Some(ours));
        }
    }
}

fn put_entry(family: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    MutationRef::Put(PutRef {
        row: b"r",
        family,
        qualifier: b"q",
        timestamp: None,
        value: b"v",
    })
    .encode_entry(&mut buf);
    buf
}

#[test]
fn malformed_requests_name_what_is_wrong() {
    let err = |buf: &[u8]| read(buf).expect_err("malformed").to_string();
    // An entry longer than what follows it.
    let mut buf = put_entry("f");
    buf.pop();
    assert!(err(&buf).contains("runs past the end"), "{}", err(&buf));
    // The table name as a varint.
    assert!(
        err(&[0x08, 0x01]).contains("table has wire type"),
        "{}",
        err(&[0x08, 0x01])
    );
    // A family that is not UTF-8, in the second mutation.
    let mut buf = put_entry("f");
    let mut bad = put_entry("é");
    // The family's first byte: value and qualifier (3 bytes each) and one of "é" follow it.
    let at = bad.len() - 8;
    bad[at] = 0xff;
    buf.extend_from_slice(&bad);
    let e = read(&buf).expect_err("not UTF-8");
    assert_eq!(e.mutation, Some(1), "{e}");
    assert!(e.what.contains("not UTF-8"), "{e}");
    // A mutation holding a put and a delete.
    let both = [0x12, 0x04, 0x0a, 0x00, 0x12, 0x00];
    assert!(
        err(&both).contains("more than one put or delete"),
        "{}",
        err(&both)
    );
    // A group.
    assert!(err(&[0x23]).contains("groups"), "{}", err(&[0x23]));
    // Field number 0.
    assert!(
        err(&[0x00, 0x00]).contains("field number 0"),
        "{}",
        err(&[0x00, 0x00])
    );
}

#[test]
fn unknown_fields_are_skipped() {
    let mut buf = vec![0x78, 0x05, 0x81, 0x01, 1, 2, 3, 4, 5, 6, 7, 8];
    buf.extend_from_slice(&put_entry("f"));
    let req = read(&buf).expect("unknown fields");
    assert_eq!(req.mutations.len(), 1);
}

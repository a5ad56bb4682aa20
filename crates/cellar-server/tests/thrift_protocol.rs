//! The Thrift protocols against hostile input: random bytes never panic the decoder, and
//! what it builds is bounded by the bytes it was given. An unframed message's end, found as
//! its bytes arrive in pieces, is the one the decoder finds.

use cellar_server::thrift::protocol::{
    decode_message, encode_message, message_len, DecodeError, MessageEnd, Proto, Value, CALL,
};
use proptest::prelude::*;

fn proto(compact: bool) -> Proto {
    if compact {
        Proto::Compact
    } else {
        Proto::Binary
    }
}

/// Decoded values, counted (each costs memory whatever its wire size).
fn count(v: &Value) -> usize {
    1 + match v {
        Value::Struct(f) => f.iter().map(|(_, v)| count(v)).sum(),
        Value::List(items) => items.iter().map(count).sum(),
        Value::Map(items) => items.iter().map(|(k, v)| count(k) + count(v)).sum(),
        _ => 0,
    }
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        any::<i8>().prop_map(Value::Byte),
        any::<i16>().prop_map(Value::I16),
        any::<i32>().prop_map(Value::I32),
        any::<i64>().prop_map(Value::I64),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Binary),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec((any::<i16>(), inner.clone()), 0..6).prop_map(Value::Struct),
            // Lists and maps hold one type: repeat one element.
            (inner.clone(), 0usize..5).prop_map(|(v, n)| Value::List(vec![v; n])),
            (inner.clone(), inner, 1usize..3).prop_map(|(k, v, n)| Value::Map(vec![(k, v); n])),
        ]
    })
}

/// Feeds `bytes` to a walk in pieces ending at `cuts` (then the rest).
fn fed_in_pieces(bytes: &[u8], p: Proto, cuts: &[usize]) -> Result<Option<usize>, DecodeError> {
    let mut end = MessageEnd::new(p);
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    for cut in cuts {
        if let Some(n) = end.advance(&bytes[..cut])? {
            return Ok(Some(n));
        }
    }
    end.advance(bytes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic_and_decoding_is_bounded(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        compact in any::<bool>(),
    ) {
        let p = proto(compact);
        let _ = message_len(&bytes, p);
        if let Ok(m) = decode_message(&bytes, p) {
            let values: usize = m.body.iter().map(|(_, v)| count(v)).sum();
            prop_assert!(values <= bytes.len());
        }
    }

    #[test]
    fn valid_prefixed_random_tails_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..256),
        compact in any::<bool>(),
    ) {
        let p = proto(compact);
        let mut bytes = encode_message(p, "getRowWithColumns", CALL, 0, &[]);
        bytes.pop(); // the stop byte: the tail becomes the struct's fields
        bytes.extend_from_slice(&tail);
        let _ = message_len(&bytes, p);
        if let Ok(m) = decode_message(&bytes, p) {
            let values: usize = m.body.iter().map(|(_, v)| count(v)).sum();
            prop_assert!(values <= bytes.len());
        }
    }

    #[test]
    fn every_value_round_trips(
        fields in proptest::collection::vec((any::<i16>(), arb_value()), 0..6),
        compact in any::<bool>(),
    ) {
        let p = proto(compact);
        let bytes = encode_message(p, "m", CALL, 7, &fields);
        prop_assert_eq!(message_len(&bytes, p), Ok(bytes.len()));
        let m = decode_message(&bytes, p).expect("own encoding decodes");
        prop_assert_eq!(m.body, fields);
        if bytes.len() > 1 {
            prop_assert_eq!(message_len(&bytes[..bytes.len() - 1], p), Err(DecodeError::Incomplete));
        }
    }

    /// A message found whole in pieces ends where the one-shot walk says, whatever
    /// follows it; no prefix is taken for a whole message.
    #[test]
    fn pieces_find_the_same_end(
        fields in proptest::collection::vec((any::<i16>(), arb_value()), 0..6),
        compact in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        next in proptest::collection::vec(any::<u8>(), 0..8),
    ) {
        let p = proto(compact);
        let mut bytes = encode_message(p, "mutateRows", CALL, 3, &fields);
        let len = bytes.len();
        bytes.extend_from_slice(&next);
        prop_assert_eq!(fed_in_pieces(&bytes, p, &cuts), Ok(Some(len)));
        prop_assert_eq!(message_len(&bytes, p), Ok(len));
        for cut in cuts.iter().map(|c| c % len) {
            prop_assert_eq!(fed_in_pieces(&bytes[..cut], p, &[]), Ok(None));
        }
    }

    /// A valid header with random fields, in pieces or at once, gets one verdict (the same
    /// end, the same error at the same byte, or a request for more), and the decoder that
    /// builds the message agrees with it.
    #[test]
    fn random_fields_get_the_same_verdict_in_pieces(
        tail in proptest::collection::vec(any::<u8>(), 0..256),
        compact in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let p = proto(compact);
        let mut bytes = encode_message(p, "mutateRows", CALL, 0, &[]);
        bytes.pop(); // the stop byte: the tail becomes the struct's fields
        bytes.extend_from_slice(&tail);
        let whole = MessageEnd::new(p).advance(&bytes);
        prop_assert_eq!(fed_in_pieces(&bytes, p, &cuts), whole.clone());
        match whole {
            Ok(Some(n)) => prop_assert!(decode_message(&bytes[..n], p).is_ok()),
            Ok(None) => prop_assert_eq!(
                decode_message(&bytes, p).map(drop),
                Err(DecodeError::Incomplete)
            ),
            Err(e) => prop_assert_eq!(decode_message(&bytes, p).map(drop), Err(e)),
        }
    }
}

//! Pulsar's `SingleMessageMetadata` (kop/storage/proto/batch_layout.proto), by
//! hand: written as Python protobuf (upb) serializes what
//! `kop.storage.batch_layout.build` sets, read as upb parses it.
//!
//! upb's parser, as the tests pin it (tests/unit/test_native_kernels.py):
//! tags are varints of at most 5 bytes and at most u32::MAX; field number 0 is
//! malformed, except inside an unknown group (upb skips its contents without
//! looking at field numbers); values are varints of at most 10 bytes (the
//! tenth's high bits dropped); lengths are varints of at most 5 bytes that must fit what is left;
//! a known field with another wire type is an unknown field; unknown groups
//! nest and must close with their own number; wire types 6 and 7 are malformed;
//! sub-messages and groups nest at most 100 deep; required fields are not
//! checked (missing = default); repeated scalars: last wins; int32 truncates,
//! bool is "non-zero". Proto2 strings are not checked for UTF-8 by the parser
//! (Python then hands out bytes instead of str: see `entry`).

pub const MAX_DEPTH: i32 = 100;

#[derive(Default)]
pub struct Meta<'a> {
    /// (key, value) of each property, in order; a missing field is empty.
    pub props: Vec<(&'a [u8], &'a [u8])>,
    /// Empty when unset (Python reads an unset string as "").
    pub partition_key: &'a [u8],
    pub payload_size: i32,
    pub event_time: u64,
    pub key_b64: bool,
    pub null_value: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Meta,
    KeyValue,
    Unknown,
}

struct Parser<'a> {
    buf: &'a [u8],
    pos: usize,
}

type Res<T> = Result<T, ()>;

impl<'a> Parser<'a> {
    /// A varint of at most `max_len` bytes, within `end`.
    #[inline]
    fn varint(&mut self, end: usize, max_len: usize) -> Res<u64> {
        let mut value = 0u64;
        for i in 0..max_len {
            if self.pos >= end {
                return Err(());
            }
            let byte = self.buf[self.pos];
            self.pos += 1;
            value |= u64::from(byte & 0x7f)
                .checked_shl(7 * i as u32)
                .unwrap_or(0);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(())
    }

    fn size(&mut self, end: usize) -> Res<usize> {
        let n = self.varint(end, 5)?;
        if n >= i32::MAX as u64 || n > (end - self.pos) as u64 {
            return Err(());
        }
        Ok(n as usize)
    }

    fn skip(&mut self, n: usize, end: usize) -> Res<()> {
        if end - self.pos < n {
            return Err(());
        }
        self.pos += n;
        Ok(())
    }

    /// Fields up to `end` (or to the end-group tag of `group`).
    fn message(
        &mut self,
        end: usize,
        depth: i32,
        kind: Kind,
        group: Option<u32>,
        meta: &mut Meta<'a>,
        kv: &mut (&'a [u8], &'a [u8]),
    ) -> Res<()> {
        while self.pos < end {
            let tag = self.varint(end, 5)?;
            if tag > u64::from(u32::MAX) {
                return Err(());
            }
            let tag = tag as u32;
            let (field, wire) = (tag >> 3, tag & 7);
            if wire == 4 {
                return if group == Some(field) {
                    Ok(())
                } else {
                    Err(())
                };
            }
            if field == 0 && kind != Kind::Unknown {
                // upb skips an unknown group's contents without looking at numbers
                return Err(());
            }
            match wire {
                0 => {
                    let v = self.varint(end, 10)?;
                    if kind == Kind::Meta {
                        match field {
                            3 => meta.payload_size = v as u32 as i32,
                            5 => meta.event_time = v,
                            6 => meta.key_b64 = v != 0,
                            9 => meta.null_value = v != 0,
                            _ => {} // compacted_out, sequence_id, null_partition_key, unknown
                        }
                    }
                }
                1 => self.skip(8, end)?,
                5 => self.skip(4, end)?,
                2 => {
                    let n = self.size(end)?;
                    let start = self.pos;
                    let sub_end = start + n;
                    let bytes = &self.buf[start..sub_end];
                    match (kind, field) {
                        (Kind::Meta, 1) => {
                            if depth - 1 < 0 {
                                return Err(());
                            }
                            let mut pair: (&[u8], &[u8]) = (b"", b"");
                            self.message(
                                sub_end,
                                depth - 1,
                                Kind::KeyValue,
                                None,
                                meta,
                                &mut pair,
                            )?;
                            meta.props.push(pair);
                        }
                        (Kind::Meta, 2) => meta.partition_key = bytes,
                        (Kind::KeyValue, 1) => kv.0 = bytes,
                        (Kind::KeyValue, 2) => kv.1 = bytes,
                        _ => {} // ordering_key, unknown
                    }
                    self.pos = sub_end;
                }
                3 => {
                    // an unknown group (none of the schema's fields is a group)
                    if self.pos >= end || depth - 1 < 0 {
                        return Err(());
                    }
                    self.message(end, depth - 1, Kind::Unknown, Some(field), meta, kv)?;
                }
                _ => return Err(()),
            }
        }
        if group.is_some() {
            Err(()) // the group never closed
        } else {
            Ok(())
        }
    }
}

/// Parse one `SingleMessageMetadata`; `None` where upb raises DecodeError.
/// `props` is reused (cleared) to save allocations.
pub fn decode<'a>(buf: &'a [u8], props: Vec<(&'a [u8], &'a [u8])>) -> Option<Meta<'a>> {
    let mut meta = Meta {
        props,
        ..Meta::default()
    };
    meta.props.clear();
    let mut p = Parser { buf, pos: 0 };
    let mut unused: (&[u8], &[u8]) = (b"", b"");
    p.message(
        buf.len(),
        MAX_DEPTH,
        Kind::Meta,
        None,
        &mut meta,
        &mut unused,
    )
    .ok()?;
    Some(meta)
}

// -- writing ------------------------------------------------------------------

pub fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One property (field 1, a KeyValue).
pub fn put_property(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    let kv_len = 2
        + crate::kafka::uvarint_len(key.len() as u64)
        + key.len()
        + crate::kafka::uvarint_len(value.len() as u64)
        + value.len();
    out.push(0x0a);
    put_uvarint(out, kv_len as u64);
    out.push(0x0a);
    put_uvarint(out, key.len() as u64);
    out.extend_from_slice(key);
    out.push(0x12);
    put_uvarint(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// The fields after the properties, in field-number order, each only when
/// `batch_layout.build` sets it (payload_size always).
pub fn put_tail(
    out: &mut Vec<u8>,
    partition_key: Option<&[u8]>,
    payload_size: i32,
    event_time: Option<u64>,
    key_b64: bool,
    null_value: bool,
) {
    if let Some(pk) = partition_key {
        out.push(0x12);
        put_uvarint(out, pk.len() as u64);
        out.extend_from_slice(pk);
    }
    out.push(0x18);
    put_uvarint(out, i64::from(payload_size) as u64); // int32: negative = 10 bytes
    if let Some(t) = event_time {
        out.push(0x28);
        put_uvarint(out, t);
    }
    if key_b64 {
        out.extend_from_slice(&[0x30, 0x01]);
    }
    if null_value {
        out.extend_from_slice(&[0x48, 0x01]);
    }
}

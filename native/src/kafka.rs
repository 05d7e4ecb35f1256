//! Kafka record batches (magic 2), as kop's Python twins see them through
//! aiokafka's C implementation (`aiokafka/record/_crecords/default_records.pyx`):
//!
//! - `parse_section` reads a decompressed records section the way
//!   `DefaultRecordBatch.__iter__` does, and accepts and rejects what it does;
//! - `write_batch` writes what `kop.protocol.records.build_batch` (aiokafka's
//!   `DefaultRecordBatchBuilder`) writes, byte for byte;
//! - `whole_batch` is `kop.entries.formats.whole_batch`.

use std::borrow::Cow;
use std::ops::Range;

pub const HEADER_SIZE: usize = 61;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;

/// One record of a records section, borrowing from it.
pub struct Record<'a> {
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// Its headers, in `Section::headers`.
    pub headers: Range<usize>,
}

pub struct Section<'a> {
    pub records: Vec<Record<'a>>,
    pub headers: Vec<(&'a str, Option<&'a [u8]>)>,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// aiokafka's `_check_bounds(pos, 1)` before a varint.
    fn more(&self) -> Result<(), &'static str> {
        if self.pos < self.buf.len() {
            Ok(())
        } else {
            Err("record truncated")
        }
    }

    /// aiokafka's `decode_varint64`: at most 10 bytes, the tenth's high bits
    /// dropped, then zigzag. (aiokafka reads past the end of its buffer here;
    /// every such read ends in an error there, so it is one here.)
    fn varint(&mut self) -> Result<i64, &'static str> {
        let mut shift = 0u32;
        let mut value = 0u64;
        loop {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err("varint runs past the records");
            };
            self.pos += 1;
            if byte & 0x80 != 0 {
                value |= u64::from(byte & 0x7f) << shift;
                shift += 7;
            } else {
                value |= u64::from(byte) << shift;
                break;
            }
            if shift > 63 {
                return Err("varint out of range");
            }
        }
        Ok(((value >> 1) as i64) ^ -((value & 1) as i64))
    }

    /// `len` bytes (a non-negative length read from the data).
    fn take(&mut self, len: i64) -> Result<&'a [u8], &'static str> {
        let end = usize::try_from(len)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&end| end <= self.buf.len())
            .ok_or("length past the records")?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn nullable(&mut self, len: i64) -> Result<Option<&'a [u8]>, &'static str> {
        if len >= 0 {
            self.take(len).map(Some)
        } else {
            Ok(None)
        }
    }
}

/// The `count` records of a batch's decompressed records section (what follows
/// the 61-byte header), timestamps at `base_timestamp` (CreateTime).
pub fn parse_section(
    data: &[u8],
    count: i64,
    base_timestamp: i64,
) -> Result<Section<'_>, &'static str> {
    let mut r = Reader { buf: data, pos: 0 };
    // A record takes at least 7 bytes: do not trust `count` for the allocation.
    let expect = usize::try_from(count).unwrap_or(0).min(data.len() / 7 + 1);
    let mut records = Vec::with_capacity(expect);
    let mut headers = Vec::new();
    let mut index = 0i64;
    while index < count {
        r.more()?;
        let length = r.varint()?;
        let start = r.pos;
        r.more()?;
        r.varint()?; // attributes: a varint in aiokafka's reader, unused
        r.more()?;
        let timestamp = base_timestamp.wrapping_add(r.varint()?);
        r.more()?;
        r.varint()?; // offset delta: the record's offset is its position here
        r.more()?;
        let key_len = r.varint()?;
        let key = r.nullable(key_len)?;
        r.more()?;
        let value_len = r.varint()?;
        let value = r.nullable(value_len)?;
        r.more()?;
        let mut header_count = r.varint()?;
        if header_count < 0 {
            return Err("negative header count");
        }
        let first = headers.len();
        while header_count > 0 {
            let key_len = r.varint()?;
            if key_len < 0 {
                return Err("negative header key size");
            }
            let key = r.take(key_len)?;
            let value_len = r.varint()?;
            let value = r.nullable(value_len)?;
            let key = std::str::from_utf8(key).map_err(|_| "header key is not UTF-8")?;
            headers.push((key, value));
            header_count -= 1;
        }
        if i64::try_from(r.pos - start) != Ok(length) {
            return Err("record size disagrees with its length");
        }
        records.push(Record {
            timestamp,
            key,
            value,
            headers: first..headers.len(),
        });
        index += 1;
    }
    if r.pos != data.len() {
        return Err("bytes after the last record");
    }
    Ok(Section { records, headers })
}

// -- writing ------------------------------------------------------------------

/// A record to write into a built batch.
pub struct OutRecord<'a> {
    pub timestamp: i64,
    pub key: Option<Cow<'a, [u8]>>,
    pub value: Option<&'a [u8]>,
    /// Its headers, in the batch's header list.
    pub headers: Range<usize>,
}

pub type OutHeader<'a> = (Cow<'a, [u8]>, Option<Cow<'a, [u8]>>);

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v as u64) << 1) ^ ((v >> 63) as u64)
}

#[inline]
pub fn uvarint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

#[inline]
fn varint_len(v: i64) -> usize {
    uvarint_len(zigzag(v))
}

/// A cursor over an exactly-sized output buffer.
pub struct Out<'b> {
    pub buf: &'b mut [u8],
    pub pos: usize,
}

impl Out<'_> {
    #[inline]
    pub fn put(&mut self, data: &[u8]) {
        self.buf[self.pos..self.pos + data.len()].copy_from_slice(data);
        self.pos += data.len();
    }

    #[inline]
    pub fn uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf[self.pos] = (v as u8) | 0x80;
            self.pos += 1;
            v >>= 7;
        }
        self.buf[self.pos] = v as u8;
        self.pos += 1;
    }

    #[inline]
    fn varint(&mut self, v: i64) {
        self.uvarint(zigzag(v));
    }

    fn nullable(&mut self, data: Option<&[u8]>) {
        match data {
            None => self.varint(-1),
            Some(d) => {
                self.varint(d.len() as i64);
                self.put(d);
            }
        }
    }
}

fn nullable_len(data: Option<&[u8]>) -> usize {
    data.map_or(1, |d| varint_len(d.len() as i64) + d.len())
}

/// The timestamps `build_batch` writes: the first record's is the batch's first
/// timestamp, every record's delta from it, the max of all the batch's max.
/// (It uses aiokafka's C builder, which wraps a delta that leaves int64, except
/// for a first timestamp of -1, which that builder would take for "none yet":
/// then aiokafka's Python builder, which raises OverflowError instead of
/// wrapping. That takes a later record at i64::MAX; we wrap there too, which
/// reads back right.)
struct Timestamps {
    first: Option<i64>,
    max: i64,
}

impl Timestamps {
    fn new() -> Self {
        Timestamps {
            first: None,
            max: i64::MIN,
        }
    }

    /// The delta for the next record; updates first and max.
    #[inline]
    fn next(&mut self, ts: i64) -> i64 {
        self.max = self.max.max(ts);
        match self.first {
            None => {
                self.first = Some(ts);
                0
            }
            Some(first) => ts.wrapping_sub(first),
        }
    }
}

fn body_len(
    rec: &OutRecord<'_>,
    offset_delta: i64,
    ts_delta: i64,
    headers: &[OutHeader<'_>],
) -> usize {
    let mut n = 1 + varint_len(offset_delta) + varint_len(ts_delta);
    n += nullable_len(rec.key.as_deref());
    n += nullable_len(rec.value);
    let hs = &headers[rec.headers.clone()];
    n += varint_len(hs.len() as i64);
    for (k, v) in hs {
        n += varint_len(k.len() as i64) + k.len() + nullable_len(v.as_deref());
    }
    n
}

/// Bytes `write_batch` writes for `records`.
pub fn batch_len(records: &[OutRecord<'_>], headers: &[OutHeader<'_>]) -> usize {
    let mut ts = Timestamps::new();
    let mut n = HEADER_SIZE;
    for (i, rec) in records.iter().enumerate() {
        let body = body_len(rec, i as i64, ts.next(rec.timestamp), headers);
        n += varint_len(body as i64) + body;
    }
    n
}

/// One batch of `records` (offsets `base_offset ..`), as `build_batch` writes it:
/// magic 2, leader epoch -1, attributes 0, no producer, CRC32C. `out.buf` from
/// `out.pos` must have room for exactly `batch_len` bytes.
pub fn write_batch(
    out: &mut Out<'_>,
    base_offset: i64,
    records: &[OutRecord<'_>],
    headers: &[OutHeader<'_>],
) {
    let start = out.pos;
    out.pos += HEADER_SIZE;
    let mut ts = Timestamps::new();
    for (i, rec) in records.iter().enumerate() {
        let offset_delta = i as i64;
        let ts_delta = ts.next(rec.timestamp);
        let body = body_len(rec, offset_delta, ts_delta, headers);
        out.varint(body as i64);
        out.put(&[0]); // attributes
        out.varint(ts_delta);
        out.varint(offset_delta);
        out.nullable(rec.key.as_deref());
        out.nullable(rec.value);
        let hs = &headers[rec.headers.clone()];
        out.varint(hs.len() as i64);
        for (k, v) in hs {
            out.varint(k.len() as i64);
            out.put(k);
            out.nullable(v.as_deref());
        }
    }
    let (first, max) = (ts.first.unwrap_or(0), ts.max);
    let span = Span {
        count: records.len(),
        offsets: records.len(),
    };
    finish_batch(out, start, base_offset, span, first, max);
}

/// `count` records with no key, value or headers, all at `timestamp`, as
/// `records.null_batch` writes them; without a record list, for any count.
pub fn null_batch_len(count: usize) -> usize {
    // a record: its length (1 byte), attributes, offset delta, timestamp delta 0,
    // null key, null value, no headers
    HEADER_SIZE + (0..count).map(|i| 6 + varint_len(i as i64)).sum::<usize>()
}

/// The batch spans `offsets` offsets (>= `count`): those past the records are a
/// gap, as compaction leaves one.
pub fn write_null_batch(
    out: &mut Out<'_>,
    base_offset: i64,
    count: usize,
    offsets: usize,
    timestamp: i64,
) {
    let start = out.pos;
    out.pos += HEADER_SIZE;
    for i in 0..count {
        let offset_delta = i as i64;
        out.varint((5 + varint_len(offset_delta)) as i64);
        out.put(&[0, 0]); // attributes, timestamp delta
        out.varint(offset_delta);
        out.put(&[1, 1, 0]); // null key, null value, no headers
    }
    let span = Span { count, offsets };
    finish_batch(out, start, base_offset, span, timestamp, timestamp);
}

/// How many records a batch holds, and how many offsets it spans.
struct Span {
    count: usize,
    offsets: usize,
}

/// The header of the batch written from `start` to `out.pos`, and its CRC.
fn finish_batch(
    out: &mut Out<'_>,
    start: usize,
    base_offset: i64,
    span: Span,
    first: i64,
    max: i64,
) {
    let end = out.pos;
    let count = span.count as i32;
    let last_offset_delta = span.offsets as i32 - 1;
    let h = &mut out.buf[start..start + HEADER_SIZE];
    h[0..8].copy_from_slice(&base_offset.to_be_bytes());
    h[8..12].copy_from_slice(&((end - start - 12) as i32).to_be_bytes());
    h[12..16].copy_from_slice(&(-1i32).to_be_bytes()); // partition leader epoch
    h[16] = 2; // magic
    h[21..23].copy_from_slice(&0i16.to_be_bytes()); // attributes
    h[23..27].copy_from_slice(&last_offset_delta.to_be_bytes());
    h[27..35].copy_from_slice(&first.to_be_bytes());
    h[35..43].copy_from_slice(&max.to_be_bytes());
    h[43..51].copy_from_slice(&(-1i64).to_be_bytes()); // producer id
    h[51..53].copy_from_slice(&(-1i16).to_be_bytes()); // producer epoch
    h[53..57].copy_from_slice(&(-1i32).to_be_bytes()); // base sequence
    h[57..61].copy_from_slice(&count.to_be_bytes());
    let crc = crc32c::crc32c(&out.buf[start + ATTRIBUTES_OFFSET..end]);
    out.buf[start + CRC_OFFSET..start + CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// `payload`'s record count and max timestamp if it is exactly one magic-2
/// batch whose record count agrees with its offsets (`formats.whole_batch`).
pub fn whole_batch(payload: &[u8]) -> Option<(i32, i64)> {
    if payload.len() < HEADER_SIZE {
        return None;
    }
    let i32_at = |at: usize| i32::from_be_bytes(payload[at..at + 4].try_into().unwrap());
    let length = i64::from(i32_at(8)) + 12;
    let magic = payload[16] as i8;
    let last_offset_delta = i32_at(23);
    let max_timestamp = i64::from_be_bytes(payload[35..43].try_into().unwrap());
    let count = i32_at(57);
    if magic != 2
        || length != payload.len() as i64
        || count <= 0
        || i64::from(last_offset_delta) != i64::from(count) - 1
    {
        return None;
    }
    Some((count, max_timestamp))
}

/// `with_base_offset`: the stored batch at another base offset.
pub fn write_rebased(out: &mut Out<'_>, payload: &[u8], base_offset: i64) {
    out.put(&base_offset.to_be_bytes());
    out.put(&payload[8..]);
}

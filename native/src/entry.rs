//! The two kernels, without Python: `kop.entries.codec.layouts` over
//! `formats.encode_record` + `batch_layout.build`, and
//! `kop.entries.codec.decode_layout` over `batch_layout.messages` +
//! `formats.read_message` + `build_batch`.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

use crate::kafka::{self, OutHeader, OutRecord};
use crate::proto;
use crate::text::{self, PyInt};

const RESERVED: &str = "__kafka.";
const P_ENTRY: &str = "__kafka.entry";
const P_KEY: &str = "__kafka.key";
const P_HEADERS: &str = "__kafka.headers";
const P_TS: &str = "__kafka.ts";
const P_PRODUCER: &str = "__kafka.producer";

// -- records -> batch layouts ----------------------------------------------------

/// One message of a layout: its metadata (in `Layouts::meta`) and payload.
pub struct Part<'a> {
    pub meta: Range<usize>,
    pub payload: &'a [u8],
}

/// Layouts planned: every message's metadata written, payloads still in the
/// records section; `chunks` are the layouts (parts, bytes).
pub struct Layouts<'a> {
    pub meta: Vec<u8>,
    pub parts: Vec<Part<'a>>,
    pub chunks: Vec<(Range<usize>, usize)>,
    /// Per chunk: the Pulsar schema version its values are in (framed layouts only).
    pub versions: Vec<Option<i64>>,
    /// Ids of framed-looking values that `versions` did not know, each once, in order.
    pub unknown: Vec<u32>,
}

impl Layouts<'_> {
    /// Write chunk `i` (`chunks[i].1` bytes): `[u32 BE size][metadata][payload]` each.
    pub fn write(&self, i: usize, out: &mut [u8]) {
        let mut o = kafka::Out { buf: out, pos: 0 };
        for part in &self.parts[self.chunks[i].0.clone()] {
            o.put(&(part.meta.len() as u32).to_be_bytes());
            o.put(&self.meta[part.meta.clone()]);
            o.put(part.payload);
        }
        assert_eq!(o.pos, o.buf.len(), "layout written short");
    }
}

/// `layouts(list(iter_records(batch))[first_index:], max_bytes)`: `Err` where
/// `iter_records` raises.
pub fn records_to_layouts<'a>(
    section: &'a [u8],
    count: i64,
    base_timestamp: i64,
    first_index: i64,
    max_bytes: i64,
    extra: Option<(&[u8], &[u8])>,
    versions: Option<&HashMap<u32, i64>>,
    tails: Option<&HashMap<u32, Vec<u8>>>,
) -> Result<Layouts<'a>, String> {
    let sec = kafka::parse_section(section, count, base_timestamp)
        .map_err(|e| format!("undecodable records: {e}"))?;
    let n = sec.records.len() as i64;
    // Python's slice `[first_index:]`
    let first = if first_index < 0 {
        (n + first_index).max(0)
    } else {
        first_index.min(n)
    } as usize;
    let mut out = Layouts {
        meta: Vec::new(),
        parts: Vec::with_capacity(sec.records.len() - first),
        chunks: Vec::new(),
        versions: Vec::new(),
        unknown: Vec::new(),
    };
    let mut scratch = Scratch::default();
    let (mut start, mut size) = (0usize, 0usize);
    let mut version: Option<i64> = None; // the current chunk's
    for rec in &sec.records[first..] {
        // `kop.entries.framing.unframed`: a value in Confluent's framing whose id is
        // one of the topic's versions is stored without its five bytes, and without
        // the tail its version names (a Protobuf root's message indexes); a value
        // without that tail (another message of the file) is kept as it is
        let (value, in_version) = match (versions, rec.value) {
            (Some(map), Some(v)) if v.len() >= FRAMING && v[0] == 0 => {
                let id = u32::from_be_bytes([v[1], v[2], v[3], v[4]]);
                let tail = tails.and_then(|t| t.get(&id)).map_or(&[][..], Vec::as_slice);
                match map.get(&id) {
                    Some(&found) if v[FRAMING..].starts_with(tail) => {
                        (Some(&v[FRAMING + tail.len()..]), Some(found))
                    }
                    Some(_) => (rec.value, None),
                    None => {
                        if !out.unknown.contains(&id) {
                            out.unknown.push(id);
                        }
                        (rec.value, None)
                    }
                }
            }
            _ => (rec.value, None),
        };
        let from = out.meta.len();
        encode_record(
            rec,
            value,
            &sec.headers[rec.headers.clone()],
            &mut out.meta,
            &mut scratch,
            extra,
        )?;
        let payload = value.unwrap_or(b"");
        let part_len = 4 + (out.meta.len() - from) + payload.len();
        let open = out.parts.len() > start;
        if open && (in_version != version || (size + part_len) as i128 > i128::from(max_bytes)) {
            out.chunks.push((start..out.parts.len(), size));
            out.versions.push(version);
            start = out.parts.len();
            size = 0;
        }
        version = in_version;
        out.parts.push(Part {
            meta: from..out.meta.len(),
            payload,
        });
        size += part_len;
    }
    if out.parts.len() > start {
        out.chunks.push((start..out.parts.len(), size));
        out.versions.push(version);
    }
    Ok(out)
}

/// A magic byte and a 4-byte schema id before a value in Confluent's framing.
const FRAMING: usize = 5;

#[derive(Default)]
struct Scratch {
    plain: Vec<usize>,
    json: Vec<u8>,
}

/// `batch_layout.build([encode_record(record)])`'s metadata, appended to `meta`;
/// `extra`, one more property after the record's own (`entries._with`).
fn encode_record(
    rec: &kafka::Record<'_>,
    value: Option<&[u8]>,
    headers: &[(&str, Option<&[u8]>)],
    meta: &mut Vec<u8>,
    scratch: &mut Scratch,
    extra: Option<(&[u8], &[u8])>,
) -> Result<(), String> {
    let mut utf8_key: Option<&[u8]> = None;
    let mut b64_key: Option<Vec<u8>> = None; // a binary key's base64
    if let Some(key) = rec.key {
        if key.is_empty() {
            proto::put_property(meta, P_KEY.as_bytes(), b"empty");
        } else if std::str::from_utf8(key).is_ok() {
            utf8_key = Some(key);
        } else {
            proto::put_property(meta, P_KEY.as_bytes(), b"b64");
            let mut b64 = Vec::with_capacity(text::b64_len(key.len()));
            text::b64_encode(key, &mut b64);
            b64_key = Some(b64);
        }
    }
    if !headers.is_empty() {
        // `plain`: the first UTF-8 value of each name outside the reserved
        // prefix, in order; `exact`: the plain properties say it all.
        let plain = &mut scratch.plain;
        plain.clear();
        let mut exact = true;
        let mut previous = "";
        // names already in `plain`: a scan for a few headers, a set for many
        let mut seen: Option<HashSet<&str>> = (headers.len() > 16).then(HashSet::new);
        for (i, &(k, v)) in headers.iter().enumerate() {
            let text = v.filter(|v| std::str::from_utf8(v).is_ok());
            let reserved = k.starts_with(RESERVED);
            let in_plain = match &seen {
                Some(set) => set.contains(k),
                None => plain.iter().any(|&j| headers[j].0 == k),
            };
            if text.is_none() || in_plain || k < previous || reserved {
                exact = false;
            }
            if text.is_some() && !in_plain && !reserved {
                plain.push(i);
                if let Some(set) = &mut seen {
                    set.insert(k);
                }
            }
            previous = k;
        }
        for &j in plain.iter() {
            let (k, v) = headers[j];
            proto::put_property(meta, k.as_bytes(), v.unwrap_or(b""));
        }
        if !exact {
            let json = &mut scratch.json;
            json.clear();
            text::json_headers_dump(headers.iter().copied(), json);
            proto::put_property(meta, P_HEADERS.as_bytes(), json);
        }
    }
    let event_time = if rec.timestamp <= 0 {
        proto::put_property(meta, P_TS.as_bytes(), rec.timestamp.to_string().as_bytes());
        None
    } else {
        Some(rec.timestamp as u64)
    };
    if let Some((k, v)) = extra {
        proto::put_property(meta, k, v);
    }
    let payload_len = value.map_or(0, <[u8]>::len);
    let payload_size = i32::try_from(payload_len)
        .map_err(|_| "value too large for a Pulsar message".to_string())?;
    proto::put_tail(
        meta,
        b64_key.as_deref().or(utf8_key),
        payload_size,
        event_time,
        b64_key.is_some(),
        value.is_none(),
    );
    Ok(())
}

// -- batch layout -> Kafka batches ---------------------------------------------

/// One message of a parsed layout.
struct Message<'a> {
    /// Its properties, deduplicated (last value wins, as a dict) and sorted by
    /// name, in `Decoded::props`.
    props: Range<usize>,
    partition_key: &'a str,
    payload: &'a [u8],
    event_time: u64,
    key_b64: bool,
    null_value: bool,
}

/// A piece of the output: a stored batch re-based, or records built into a batch.
pub enum Segment<'a> {
    Stored {
        payload: &'a [u8],
        base_offset: i64,
    },
    Built {
        records: Range<usize>,
        base_offset: i64,
    },
    /// `count` null records at `timestamp` in a batch spanning `offsets` offsets
    /// (an unparseable entry)
    Nulls {
        count: usize,
        offsets: usize,
        base_offset: i64,
        timestamp: i64,
    },
}

pub const ANOMALY_NAMES: [&str; 6] = [P_ENTRY, P_HEADERS, P_KEY, P_PRODUCER, P_TS, "batch"];
const BAD_ENTRY: u8 = 1;
const BAD_HEADERS: u8 = 2;
const BAD_KEY: u8 = 4;
const BAD_PRODUCER: u8 = 8;
const BAD_TS: u8 = 16;
const BAD_BATCH: u8 = 32;

/// What `decode_layout` gives, its Kafka batches still to write (`len` bytes).
pub struct Decoded<'a> {
    pub count: i64,
    pub max_timestamp: i64,
    pub segments: Vec<Segment<'a>>,
    pub records: Vec<OutRecord<'a>>,
    pub headers: Vec<OutHeader<'a>>,
    /// (producer id, epoch, first sequence, count, index, offset)
    pub stamps: Vec<[i64; 6]>,
    /// Bits of `ANOMALY_NAMES`.
    pub anomalies: u8,
    pub len: usize,
}

impl Decoded<'_> {
    pub fn anomaly_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        ANOMALY_NAMES
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.anomalies & (1 << i) != 0)
            .map(|(_, n)| *n)
    }

    /// Write the Kafka batches into `out` (`len` bytes).
    pub fn write(&self, out: &mut [u8]) {
        let mut o = kafka::Out { buf: out, pos: 0 };
        for seg in &self.segments {
            match *seg {
                Segment::Stored {
                    payload,
                    base_offset,
                } => kafka::write_rebased(&mut o, payload, base_offset),
                Segment::Built {
                    ref records,
                    base_offset,
                } => kafka::write_batch(
                    &mut o,
                    base_offset,
                    &self.records[records.clone()],
                    &self.headers,
                ),
                Segment::Nulls {
                    count,
                    offsets,
                    base_offset,
                    timestamp,
                } => kafka::write_null_batch(&mut o, base_offset, count, offsets, timestamp),
            }
        }
        assert_eq!(o.pos, o.buf.len(), "decoded entry written short");
    }
}

type Props<'a> = Vec<(&'a str, &'a str)>;

/// `batch_layout.messages(entry, compacted_out=True)`: `None` where it gives [].
/// Also `None` where a string field is not UTF-8: Python's protobuf then hands
/// out bytes, which `read_message` cannot take (it raises); see the module
/// docs of `lib.rs`.
fn parse_layout<'a>(data: &'a [u8], count: i64, props: &mut Props<'a>) -> Option<Vec<Message<'a>>> {
    let mut out = Vec::with_capacity(usize::try_from(count).unwrap_or(0).min(data.len() / 6 + 1));
    let mut pos = 0usize;
    let mut raw = Vec::new();
    for _ in 0..count.max(0) {
        if pos + 4 > data.len() {
            return None;
        }
        let size = u32::from_be_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        pos += 4;
        if size > data.len() - pos {
            return None;
        }
        let meta = proto::decode(&data[pos..pos + size], std::mem::take(&mut raw))?;
        pos += size;
        if meta.payload_size < 0 || meta.payload_size as usize > data.len() - pos {
            return None;
        }
        let end = pos + meta.payload_size as usize;
        let from = props.len();
        for &(k, v) in &meta.props {
            props.push((std::str::from_utf8(k).ok()?, std::str::from_utf8(v).ok()?));
        }
        // a dict: sorted by name, the last value of a name wins
        let mine = &mut props[from..];
        mine.sort_by(|a, b| a.0.cmp(b.0)); // stable: equal names keep their order
        let mut keep = from;
        for i in from..props.len() {
            if keep > from && props[keep - 1].0 == props[i].0 {
                props[keep - 1] = props[i];
            } else {
                props[keep] = props[i];
                keep += 1;
            }
        }
        props.truncate(keep);
        out.push(Message {
            props: from..keep,
            partition_key: std::str::from_utf8(meta.partition_key).ok()?,
            payload: &data[pos..end],
            event_time: meta.event_time,
            key_b64: meta.key_b64,
            null_value: meta.null_value,
        });
        raw = meta.props;
        pos = end;
    }
    Some(out)
}

fn get<'a>(props: &[(&'a str, &'a str)], name: &str) -> Option<&'a str> {
    props
        .binary_search_by(|p| p.0.cmp(name))
        .ok()
        .map(|i| props[i].1)
}

/// `formats.parse_stamp`.
fn parse_stamp(text: &str, int: &mut dyn FnMut(&str) -> PyInt) -> Option<[i64; 5]> {
    let mut parts = [""; 5];
    let mut n = 0;
    for part in text.split('/') {
        if n == 5 {
            return None;
        }
        parts[n] = part;
        n += 1;
    }
    if n < 4 {
        return None;
    }
    let mut v = [0i128; 5];
    for i in 0..n {
        match text::py_int(parts[i], int) {
            PyInt::Value(x) => v[i] = x,
            PyInt::Invalid => return None,
        }
    }
    let [pid, epoch, seq, count, index] = v;
    let index = if n == 5 { index } else { count - 1 };
    let ok = (0..1i128 << 63).contains(&pid)
        && (-(1i128 << 15)..1 << 15).contains(&epoch)
        && (0..1i128 << 31).contains(&seq)
        && (1..1i128 << 31).contains(&count)
        && (0..count).contains(&index);
    ok.then_some([
        pid as i64,
        epoch as i64,
        seq as i64,
        count as i64,
        index as i64,
    ])
}

/// `formats.read_message`: the record's key, timestamp and headers (into
/// `headers`), its stamp, and its bad reserved properties as bits.
fn read_message<'a>(
    msg: &Message<'a>,
    props: &[(&'a str, &'a str)],
    publish_time: i64,
    headers: &mut Vec<OutHeader<'a>>,
    int: &mut dyn FnMut(&str) -> PyInt,
) -> (OutRecord<'a>, Option<[i64; 5]>, u8) {
    let mut bad = 0u8;
    let mut mode = None;
    let mut ts_text = None;
    let mut stamp_text = None;
    let mut headers_text = None;
    for &(k, v) in props {
        match k {
            P_ENTRY => bad |= BAD_ENTRY,
            P_KEY => mode = Some(v),
            P_TS => ts_text = Some(v),
            P_PRODUCER => stamp_text = Some(v),
            P_HEADERS => headers_text = Some(v),
            _ => {}
        }
    }

    let pk = msg.partition_key;
    let mut key: Option<Cow<'a, [u8]>> = (!pk.is_empty()).then_some(Cow::Borrowed(pk.as_bytes()));
    match mode {
        None => {
            if msg.key_b64 && !pk.is_empty() {
                if let Some(k) = text::b64_decode(pk.as_bytes()) {
                    key = Some(Cow::Owned(k));
                }
            }
        }
        Some("b64") if !pk.is_empty() => match text::b64_decode(pk.as_bytes()) {
            Some(k) => key = Some(Cow::Owned(k)),
            None => bad |= BAD_KEY,
        },
        Some("empty") if pk.is_empty() => key = Some(Cow::Borrowed(b"")),
        Some(_) => bad |= BAD_KEY,
    }

    let mut timestamp = if msg.event_time > 0 && msg.event_time < 1 << 63 {
        msg.event_time as i64
    } else {
        publish_time
    };
    if let Some(t) = ts_text {
        match text::py_int(t, int) {
            PyInt::Value(v) if i64::try_from(v).is_ok() => timestamp = v as i64,
            _ => bad |= BAD_TS,
        }
    }

    let mut stamp = None;
    if let Some(t) = stamp_text {
        stamp = parse_stamp(t, int);
        if stamp.is_none() {
            bad |= BAD_PRODUCER;
        }
    }

    let first = headers.len();
    let mut from_json = false;
    if let Some(t) = headers_text {
        match text::json_headers_load(t) {
            Some(list) => {
                from_json = true;
                for (k, v) in list {
                    let k = match k {
                        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
                        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
                    };
                    headers.push((k, v.map(Cow::Owned)));
                }
            }
            None => bad |= BAD_HEADERS,
        }
    }
    let is_bad = |k: &str| match k {
        P_ENTRY => bad & BAD_ENTRY != 0,
        P_HEADERS => bad & BAD_HEADERS != 0,
        P_KEY => bad & BAD_KEY != 0,
        P_PRODUCER => bad & BAD_PRODUCER != 0,
        P_TS => bad & BAD_TS != 0,
        _ => false,
    };
    if !from_json {
        // the plain properties, sorted, with the bad reserved ones among them
        for &(k, v) in props {
            if !k.starts_with(RESERVED) || is_bad(k) {
                headers.push((
                    Cow::Borrowed(k.as_bytes()),
                    Some(Cow::Borrowed(v.as_bytes())),
                ));
            }
        }
    } else if bad != 0 {
        // the bad reserved ones after the JSON headers, sorted by name
        for &(k, v) in props {
            if is_bad(k) {
                headers.push((
                    Cow::Borrowed(k.as_bytes()),
                    Some(Cow::Borrowed(v.as_bytes())),
                ));
            }
        }
    }

    let value = (!msg.null_value).then_some(msg.payload);
    (
        OutRecord {
            timestamp,
            key,
            value,
            headers: first..headers.len(),
        },
        stamp,
        bad,
    )
}

/// `entries.MAX_NULL_RECORDS`: of the messages an unparseable layout claims, how
/// many at most are served as null records (the claim is metadata any Pulsar
/// producer writes: ten bytes may claim 2^31 messages).
const MAX_NULL_RECORDS: usize = 4096;

/// `entries.decode_layout(entry, base_offset)` for a batch entry of `count`
/// messages. `int` is Python's `int()` for what `text::py_int` leaves to it.
pub fn decode_layout<'a>(
    layout: &'a [u8],
    count: i64,
    base_offset: i64,
    publish_time: i64,
    int: &mut dyn FnMut(&str) -> PyInt,
) -> Result<Decoded<'a>, String> {
    // Offsets are Python ints there: only those written into a batch must fit int64.
    let at = |offset: i128| i64::try_from(offset).map_err(|_| "offset beyond int64".to_string());
    let mut props = Vec::new();
    let mut d = Decoded {
        count: 0,
        max_timestamp: -1,
        segments: Vec::new(),
        records: Vec::new(),
        headers: Vec::new(),
        stamps: Vec::new(),
        anomalies: 0,
        len: 0,
    };
    // unparseable, or no messages (count <= 0): one null record per message (at
    // least one), at publish time; at most MAX_NULL_RECORDS, the rest of its
    // offsets a gap
    if count > i64::from(i32::MAX) {
        return Err("more messages than a Pulsar entry can hold".to_string());
    }
    let messages = parse_layout(layout, count, &mut props).unwrap_or_default();
    if messages.is_empty() {
        let n = count.max(1) as usize;
        let held = n.min(MAX_NULL_RECORDS);
        d.segments.push(Segment::Nulls {
            count: held,
            offsets: n,
            base_offset,
            timestamp: publish_time,
        });
        d.count = n as i64;
        d.max_timestamp = publish_time;
        d.anomalies = BAD_BATCH;
        d.len = kafka::null_batch_len(held);
        return Ok(d);
    }
    let mut offset = i128::from(base_offset);
    let mut pending = (0usize, offset); // first pending record, its offset
    let mut stamps: Vec<[i64; 6]> = Vec::new();
    for msg in &messages {
        let props = &props[msg.props.clone()];
        if get(props, P_ENTRY) == Some("batch") {
            if let Some((n, max_ts)) = kafka::whole_batch(msg.payload) {
                if d.records.len() > pending.0 {
                    d.segments.push(Segment::Built {
                        records: pending.0..d.records.len(),
                        base_offset: at(pending.1)?,
                    });
                }
                d.segments.push(Segment::Stored {
                    payload: msg.payload,
                    base_offset: at(offset)?,
                });
                d.max_timestamp = d.max_timestamp.max(max_ts);
                offset += i128::from(n);
                pending = (d.records.len(), offset);
                continue;
            }
        }
        let (record, stamp, bad) = read_message(msg, props, publish_time, &mut d.headers, int);
        d.max_timestamp = d.max_timestamp.max(record.timestamp);
        d.records.push(record);
        if let Some(s) = stamp {
            let stamp = [s[0], s[1], s[2], s[3], s[4], at(offset)?];
            // of consecutive stamps of one batch, the last says how far it got
            match stamps.last_mut() {
                Some(last) if last[..4] == stamp[..4] => *last = stamp,
                _ => stamps.push(stamp),
            }
        }
        d.anomalies |= bad;
        offset += 1;
    }
    if d.records.len() > pending.0 {
        d.segments.push(Segment::Built {
            records: pending.0..d.records.len(),
            base_offset: at(pending.1)?,
        });
    }
    d.count = at(offset - i128::from(base_offset))?;
    d.stamps = stamps;
    d.len = d
        .segments
        .iter()
        .map(|s| match s {
            Segment::Stored { payload, .. } => payload.len(),
            Segment::Built { records, .. } => {
                kafka::batch_len(&d.records[records.clone()], &d.headers)
            }
            Segment::Nulls { count, .. } => kafka::null_batch_len(*count),
        })
        .sum();
    Ok(d)
}

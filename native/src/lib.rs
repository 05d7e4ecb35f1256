//! `kop_native`: the two per-record loops of kop's `pulsar` entry format, one
//! call per entry. Each is byte for byte its Python twin in `kop.entries.codec`
//! (the spec; tests/unit/test_native_kernels.py holds them to it):
//!
//! - `records_to_layouts`: a Kafka batch's records section -> batch layouts
//!   (`entries.layouts` over `iter_records`);
//! - `decode_layout`: a batch entry -> Kafka batches, stamps, anomalies
//!   (`entries.decode_layout`).
//!
//! Where the Python twin raises something other than ValueError for a layout
//! (a protobuf string field that is not UTF-8: Python's protobuf then returns
//! bytes, on which `read_message` fails), the layout counts as unparseable
//! here (null records, anomaly "batch").
//!
//! The work runs with the GIL released (`Python::detach`) for inputs large
//! enough to be worth it; the result bytes are allocated as Python bytes first
//! and filled in place, so nothing is copied twice.

use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList, PyTuple};
use pyo3::{ffi, IntoPyObjectExt};

pub mod entry;
pub mod kafka;
pub mod proto;
pub mod text;

/// Inputs from this size on release the GIL while the kernel works.
const DETACH_MIN: usize = 32 * 1024;

fn run<T: Send, F: FnOnce() -> T + Send>(py: Python<'_>, detach: bool, f: F) -> T {
    if detach {
        py.detach(f)
    } else {
        f()
    }
}

/// A new, uninitialised bytes object we alone hold, and where to write it.
struct Fill(*mut u8, usize);

// SAFETY: the bytes object behind the pointer is new and referenced only by the
// caller, who keeps it alive while the pointer is used and hands it to Python
// only after the write; bytes objects never move.
unsafe impl Send for Fill {}

impl Fill {
    fn slice(&mut self) -> &mut [u8] {
        // SAFETY: see above; the object holds `self.1` bytes at `self.0`.
        unsafe { std::slice::from_raw_parts_mut(self.0, self.1) }
    }
}

fn new_bytes(py: Python<'_>, len: usize) -> PyResult<(Bound<'_, PyBytes>, Fill)> {
    let size =
        ffi::Py_ssize_t::try_from(len).map_err(|_| PyValueError::new_err("result too large"))?;
    // SAFETY: PyBytes_FromStringAndSize(NULL, n) returns a new reference to a
    // bytes object of n (uninitialised) bytes, or NULL with an exception set.
    unsafe {
        let obj = ffi::PyBytes_FromStringAndSize(std::ptr::null(), size);
        let bytes = Bound::from_owned_ptr_or_err(py, obj)?.cast_into_unchecked::<PyBytes>();
        let buf = ffi::PyBytes_AsString(bytes.as_ptr()).cast::<u8>();
        Ok((bytes, Fill(buf, len)))
    }
}

/// `int(text)` by Python itself, for the texts `text::py_int` leaves to it.
fn python_int(text: &str) -> text::PyInt {
    Python::attach(|py| match py.get_type::<PyInt>().call1((text,)) {
        Err(_) => text::PyInt::Invalid,
        Ok(v) => match v.extract::<i64>() {
            Ok(x) => text::PyInt::Value(i128::from(x)),
            Err(_) => {
                let negative = v.lt(0).unwrap_or(false);
                text::PyInt::Value(if negative { -(1 << 100) } else { 1 << 100 })
            }
        },
    })
}

/// records_to_layouts(records, count, base_timestamp, first_index, max_bytes, extra=None)
/// --
///
/// Records `first_index ..` of a Kafka batch's (decompressed) records section as
/// batch layouts of at most `max_bytes` each (at least one record each):
/// [(layout, records in it)]; `extra`, a (name, value) property every record's
/// message gets after its own. Raises ValueError when the section does not
/// decode as `count` records.
#[pyfunction]
#[pyo3(signature = (records, count, base_timestamp, first_index, max_bytes, extra=None))]
fn records_to_layouts<'py>(
    py: Python<'py>,
    records: &[u8],
    count: i64,
    base_timestamp: i64,
    first_index: i64,
    max_bytes: i64,
    extra: Option<(String, String)>,
) -> PyResult<Bound<'py, PyList>> {
    let (layouts, plan) = plan_layouts(
        py, records, count, base_timestamp, first_index, max_bytes, extra, None, None,
    )?;
    PyList::new(
        py,
        layouts
            .into_iter()
            .zip(&plan.chunks)
            .map(|(bytes, (parts, _))| (bytes, parts.len())),
    )
}

/// records_to_framed_layouts(records, count, base_timestamp, first_index, max_bytes, extra, versions, tails=None)
/// --
///
/// `records_to_layouts`, values in Confluent's framing whose id `versions` maps to a
/// Pulsar schema version stored without the framing (and without the bytes `tails`
/// says follow that id: a Protobuf root's message indexes; a value without them keeps
/// its framing), a layout per run of one version: ([(layout, records in it, version or
/// None)], ids of framed values it did not know) (kop.entries.framing).
#[pyfunction]
#[pyo3(signature = (records, count, base_timestamp, first_index, max_bytes, extra, versions, tails=None))]
#[allow(clippy::too_many_arguments)]
fn records_to_framed_layouts<'py>(
    py: Python<'py>,
    records: &[u8],
    count: i64,
    base_timestamp: i64,
    first_index: i64,
    max_bytes: i64,
    extra: Option<(String, String)>,
    versions: HashMap<u32, i64>,
    tails: Option<HashMap<u32, Vec<u8>>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (layouts, plan) = plan_layouts(
        py, records, count, base_timestamp, first_index, max_bytes, extra, Some(&versions),
        tails.as_ref(),
    )?;
    let chunks = PyList::new(
        py,
        layouts
            .into_iter()
            .zip(plan.chunks.iter().zip(&plan.versions))
            .map(|(bytes, ((parts, _), version))| (bytes, parts.len(), *version)),
    )?;
    let unknown = PyList::new(py, &plan.unknown)?;
    PyTuple::new(py, [chunks.into_any(), unknown.into_any()])
}

#[allow(clippy::too_many_arguments)]
fn plan_layouts<'py, 'a>(
    py: Python<'py>,
    records: &'a [u8],
    count: i64,
    base_timestamp: i64,
    first_index: i64,
    max_bytes: i64,
    extra: Option<(String, String)>,
    versions: Option<&HashMap<u32, i64>>,
    tails: Option<&HashMap<u32, Vec<u8>>>,
) -> PyResult<(Vec<Bound<'py, PyBytes>>, entry::Layouts<'a>)> {
    let detach = records.len() >= DETACH_MIN;
    let extra_ref = extra.as_ref().map(|(k, v)| (k.as_bytes(), v.as_bytes()));
    let plan = run(py, detach, || {
        entry::records_to_layouts(
            records,
            count,
            base_timestamp,
            first_index,
            max_bytes,
            extra_ref,
            versions,
            tails,
        )
    })
    .map_err(PyValueError::new_err)?;
    let mut layouts = Vec::with_capacity(plan.chunks.len());
    let mut fills = Vec::with_capacity(plan.chunks.len());
    for (_, len) in &plan.chunks {
        let (bytes, fill) = new_bytes(py, *len)?;
        layouts.push(bytes);
        fills.push(fill);
    }
    let plan_ref = &plan;
    run(py, detach, move || {
        for (i, mut fill) in fills.into_iter().enumerate() {
            plan_ref.write(i, fill.slice());
        }
    });
    Ok((layouts, plan))
}

/// decode_layout(layout, count, base_offset, publish_time)
/// --
///
/// A batch entry of `count` messages at `base_offset`, as Kafka sees it:
/// (records, max timestamp, Kafka batches, stamps, malformed reserved property
/// names). Stamps are (producer id, epoch, first sequence, count, index,
/// offset). Never raises for malformed input.
#[pyfunction]
#[pyo3(signature = (layout, count, base_offset, publish_time))]
fn decode_layout<'py>(
    py: Python<'py>,
    layout: &[u8],
    count: i64,
    base_offset: i64,
    publish_time: i64,
) -> PyResult<Bound<'py, PyTuple>> {
    let detach = layout.len() >= DETACH_MIN || count >= 4096;
    let decoded = run(py, detach, || {
        entry::decode_layout(layout, count, base_offset, publish_time, &mut python_int)
    })
    .map_err(PyValueError::new_err)?;
    let (data, mut fill) = new_bytes(py, decoded.len)?;
    let decoded_ref = &decoded;
    run(py, detach, move || decoded_ref.write(fill.slice()));
    let stamps = PyList::new(
        py,
        decoded
            .stamps
            .iter()
            .map(|s| (s[0], s[1], s[2], s[3], s[4], s[5])),
    )?;
    let anomalies = PyList::new(py, decoded.anomaly_names())?;
    (
        decoded.count,
        decoded.max_timestamp,
        data,
        stamps,
        anomalies,
    )
        .into_pyobject(py)
}

// -- the rules one by one, for the differential tests --------------------------

/// `base64.b64decode(data, validate=True)`, or None where it raises.
#[pyfunction]
fn _b64decode(py: Python<'_>, data: &[u8]) -> Option<Py<PyBytes>> {
    text::b64_decode(data).map(|d| PyBytes::new(py, &d).unbind())
}

/// `int(text)` as the kernels read it, or None where it raises.
#[pyfunction]
fn _int(py: Python<'_>, text: &str) -> PyResult<Option<Py<PyAny>>> {
    match text::py_int(text, &mut python_int) {
        text::PyInt::Invalid => Ok(None),
        text::PyInt::Value(v) => Ok(Some(v.into_py_any(py)?)),
    }
}

/// `formats._json_headers(text)`, header names as str.
#[pyfunction]
fn _json_headers(text: &str) -> Option<Vec<(String, Option<Vec<u8>>)>> {
    text::json_headers_load(text)
        .map(|hs| hs.into_iter().map(|(k, v)| (k.into_owned(), v)).collect())
}

/// `json.dumps` of a header list as `formats.encode_record` writes it.
#[pyfunction]
fn _json_dumps(headers: Vec<(String, Option<Vec<u8>>)>) -> String {
    let mut out = Vec::new();
    text::json_headers_dump(
        headers.iter().map(|(k, v)| (k.as_str(), v.as_deref())),
        &mut out,
    );
    String::from_utf8(out).expect("json is ASCII")
}

/// kop's native kernels: byte for byte the Python twins in kop.entries.codec
/// (records_to_layouts, decode_layout); see kop.entries.native.
#[pymodule]
fn kop_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(records_to_layouts, m)?)?;
    m.add_function(wrap_pyfunction!(records_to_framed_layouts, m)?)?;
    m.add_function(wrap_pyfunction!(decode_layout, m)?)?;
    m.add_function(wrap_pyfunction!(_b64decode, m)?)?;
    m.add_function(wrap_pyfunction!(_int, m)?)?;
    m.add_function(wrap_pyfunction!(_json_headers, m)?)?;
    m.add_function(wrap_pyfunction!(_json_dumps, m)?)?;
    // records_to_framed_layouts takes `tails` (a kop older than this checks for it)
    m.add("FRAMING_TAILS", true)?;
    Ok(())
}

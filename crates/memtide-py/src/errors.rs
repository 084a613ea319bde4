//! Errors as typed Python exceptions: the classes live in `memtide._errors` (plain Python, so
//! they pickle and subclass like any exception); this file picks the class and its fields
//! (`path`, `offset`, `line`, `reason`, `devices`) from the core's typed errors, and turns a
//! call whose memory ran short into `OutOfMemory` (a `MemoryError` too).

use crate::call::{Done, Short};
use crate::open::OpenFail;
use memtide_core::formats::FormatError;
use memtide_core::open::OpenError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::IntoPyObjectExt;
use std::path::Path;

/// Builds `memtide._errors.<class>(message, **fields)` as a Python error.
fn raise(py: Python<'_>, class: &str, message: String, fields: &[(&str, Py<PyAny>)]) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let cls = py.import("memtide._errors")?.getattr(class)?;
        let kw = PyDict::new(py);
        for (k, v) in fields {
            kw.set_item(k, v)?;
        }
        let e = cls.call((message.clone(),), Some(&kw))?;
        Ok(PyErr::from_value(e))
    })();
    made.unwrap_or_else(|e| e)
}

fn obj<'py, T: IntoPyObjectExt<'py>>(py: Python<'py>, v: T) -> Py<PyAny> {
    v.into_py_any(py).unwrap_or_else(|_| py.None())
}

/// A reader's error on `path` (the trace, or a side file the error names).
/// `path` is None where the file is not known (the message then names it).
pub fn format_error(py: Python<'_>, path: Option<&Path>, e: &FormatError) -> PyErr {
    // A side file's error names that file: "cannot read TRACE" would blame the trace.
    let side = matches!(e, FormatError::DeviceLog(_) | FormatError::SideFile { .. });
    let shown = path.filter(|_| !side).map(|p| p.display().to_string());
    let message = match &shown {
        Some(s) => format!("cannot read {s}: {e}"),
        None => e.to_string(),
    };
    let (offset, line, reason) = match e {
        FormatError::At { offset, reason } => (Some(*offset), None, reason.clone()),
        FormatError::Line { line, reason } => (None, Some(*line), reason.clone()),
        FormatError::Gzip(g) => (Some(g.offset), None, g.reason.clone()),
        other => (None, None, other.to_string()),
    };
    if let FormatError::Io(io) = e {
        return raise(
            py,
            "ReadError",
            message,
            &[
                ("path", obj(py, shown)),
                ("reason", obj(py, reason)),
                ("errno", obj(py, io.raw_os_error())),
            ],
        );
    }
    let class = if matches!(e, FormatError::Cancelled) {
        "Cancelled"
    } else {
        "FormatError"
    };
    raise(
        py,
        class,
        message,
        &[
            ("path", obj(py, shown)),
            ("offset", obj(py, offset)),
            ("line", obj(py, line)),
            ("reason", obj(py, reason)),
        ],
    )
}

/// Why `open` failed, as the matching exception.
pub fn open_error(py: Python<'_>, path: &Path, e: &OpenFail) -> PyErr {
    match e {
        OpenFail::Open(OpenError::Read { path, source }) => format_error(py, Some(path), source),
        OpenFail::Open(OpenError::SideFile(source)) => format_error(py, None, source),
        OpenFail::Open(other) => raise(py, "MemtideError", other.to_string(), &[]),
        OpenFail::Device(d) => raise(
            py,
            "DeviceError",
            d.to_string(),
            &[
                ("wanted", obj(py, d.want.clone())),
                ("devices", obj(py, d.available.clone())),
            ],
        ),
        OpenFail::Other(a) => other_error(py, Some(path), a),
    }
}

/// An error from a command's code (anyhow, as the CLI prints it after `memtide: error:`):
/// a reader's error inside it keeps its class and fields.
pub fn other_error(py: Python<'_>, path: Option<&Path>, e: &anyhow::Error) -> PyErr {
    if let Some(f) = e.downcast_ref::<FormatError>() {
        let err = format_error(py, path, f);
        // The message the CLI prints (with its context), the fields of the reader's error.
        let _ = err.value(py).setattr("args", (format!("{e:#}"),));
        return err;
    }
    if let Some(d) = e.downcast_ref::<memtide_core::open::UnknownDevice>() {
        return raise(
            py,
            "DeviceError",
            format!("{e:#}"),
            &[
                ("wanted", obj(py, d.want.clone())),
                ("devices", obj(py, d.available.clone())),
            ],
        );
    }
    raise(py, "MemtideError", format!("{e:#}"), &[])
}

/// Memory that ran short during a call about `path` (None: several files, or none):
/// `OutOfMemory` (a `MemtideError` and a `MemoryError`) with `path`, `budget` (the call's
/// budget in bytes; None when the system ran out) and `reason`. `failed`: the error the work
/// ended with, if any (a reader's located account of the refusal).
pub fn out_of_memory(
    py: Python<'_>,
    path: Option<&Path>,
    short: &Short,
    failed: Option<String>,
) -> PyErr {
    let shown = path.map(|p| p.display().to_string());
    let (budget, reason) = match short {
        Short::Budget(b) => (
            Some(b.bytes),
            format!(
                "out of memory: the memory budget of {} B ({}) is exceeded",
                memtide_core::trace::grouped(b.bytes),
                b.source
            ),
        ),
        Short::System => (
            None,
            failed
                .clone()
                .unwrap_or_else(|| "out of memory: the system refused an allocation".into()),
        ),
    };
    let message = match (short, &failed, &shown) {
        (Short::System, Some(f), _) => f.clone(),
        (_, _, Some(s)) => format!("{s}: {reason}"),
        (_, _, None) => reason.clone(),
    };
    raise(
        py,
        "OutOfMemory",
        message,
        &[
            ("path", obj(py, shown)),
            ("budget", obj(py, budget)),
            ("reason", obj(py, reason)),
        ],
    )
}

/// The answer of a call, or its exception: `OutOfMemory` when the budget refused memory
/// meanwhile (whatever the work returned), or when it failed while the system refused
/// memory; else the work's own error as `raise_err` builds it.
pub fn settle<T, E: std::fmt::Display>(
    py: Python<'_>,
    path: Option<&Path>,
    done: Done<Result<T, E>>,
    raise_err: impl FnOnce(&E) -> PyErr,
) -> PyResult<T> {
    match (done.value, done.short) {
        (v, Some(s @ Short::Budget(..))) => Err(out_of_memory(
            py,
            path,
            &s,
            v.err().map(|e| format!("{e:#}")),
        )),
        (Ok(v), _) => Ok(v),
        (Err(e), Some(Short::System)) => {
            let err = raise_err(&e);
            let text = err
                .value(py)
                .str()
                .map(|s| s.to_string())
                .unwrap_or_else(|_| e.to_string());
            Err(out_of_memory(py, path, &Short::System, Some(text)))
        }
        (Err(e), None) => Err(raise_err(&e)),
    }
}

/// [`settle`] for a command's anyhow result.
pub fn settle_any<T>(
    py: Python<'_>,
    path: Option<&Path>,
    done: Done<anyhow::Result<T>>,
) -> PyResult<T> {
    settle(py, path, done, |e| other_error(py, path, e))
}

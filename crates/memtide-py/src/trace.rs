//! `NativeTrace`: an opened file held in Rust, answering in JSON text that the Python half
//! (`memtide._trace.Trace`) parses: the summary document (`summary --json`'s own writer), the
//! live set, the timeline, the allocator state, the plot's SVG.

use crate::open::Opened;
use crate::questions;
use memtide_core::analysis::summary::SummaryOptions;
use memtide_core::analysis::summary_json::{write_document, DocumentJson};
use memtide_core::analysis::tree::TreeFrames;
use memtide_core::open::Device;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::OnceLock;

/// An opened file: every device indexed, one of them the trace's.
#[pyclass(frozen, module = "memtide._native")]
pub struct NativeTrace {
    opened: Opened,
    /// `summary_json()` with the default options, made once.
    summary: OnceLock<String>,
}

impl NativeTrace {
    pub fn new(opened: Opened) -> NativeTrace {
        NativeTrace {
            opened,
            summary: OnceLock::new(),
        }
    }

    /// The device asked for (the one every question is about).
    pub fn main(&self) -> PyResult<&Device> {
        self.opened
            .devices
            .get(self.opened.primary)
            .ok_or_else(|| PyValueError::new_err("the file holds no device traces"))
    }

    fn summary_text(&self, window: Option<&str>, frames: &str) -> anyhow::Result<String> {
        let o = &self.opened;
        let opts = SummaryOptions {
            frame_rules: o.frame_rules.clone(),
            tree_frames: match frames {
                "all" => TreeFrames::All,
                "user" => TreeFrames::User,
                other => anyhow::bail!("frames={other:?}: expected \"user\" or \"all\""),
            },
            boundary: true,
        };
        let summaries = memtide::cli::summary::summarise(&o.devices, window, &opts)?;
        let Some(main) = summaries.get(o.primary) else {
            anyhow::bail!("no trace to summarise");
        };
        if summaries.iter().all(|s| s.events == 0) {
            anyhow::bail!(
                "{}: the trace has no events (header only?); nothing to summarise",
                o.path.display()
            );
        }
        let devices: Vec<String> = o.devices.iter().map(|t| t.trace.device.clone()).collect();
        let doc = DocumentJson::new(main, &summaries, &devices, o.device_given);
        let mut bytes = Vec::new();
        write_document(&mut bytes, &doc)?;
        Ok(String::from_utf8(bytes)?)
    }

    fn err(&self, py: Python<'_>, e: &anyhow::Error) -> PyErr {
        crate::errors::other_error(py, Some(&self.opened.path), e)
    }
}

#[pymethods]
impl NativeTrace {
    /// The path as given to `open`.
    #[getter]
    fn path(&self) -> String {
        self.opened.path.display().to_string()
    }

    /// The file's format: jsonl, snapshot, kineto, memory_timeline.
    #[getter]
    fn format(&self) -> &'static str {
        self.opened.format.name()
    }

    /// Every device of the file, in file order.
    #[getter]
    fn devices(&self) -> Vec<String> {
        self.opened
            .devices
            .iter()
            .map(|t| t.trace.device.clone())
            .collect()
    }

    /// The device this trace answers about.
    #[getter]
    fn device(&self) -> PyResult<String> {
        Ok(self.main()?.trace.device.clone())
    }

    /// Events on the device's axis.
    #[getter]
    fn events(&self) -> PyResult<usize> {
        Ok(self.main()?.index.len())
    }

    /// The document `memtide summary FILE --json` prints, as JSON text (the GIL released).
    #[pyo3(signature = (window=None, frames="user"))]
    fn summary_json(&self, py: Python<'_>, window: Option<&str>, frames: &str) -> PyResult<String> {
        let default = window.is_none() && frames == "user";
        if default {
            if let Some(s) = self.summary.get() {
                return Ok(s.clone());
            }
        }
        let made = py.detach(|| self.summary_text(window, frames));
        let text = made.map_err(|e| self.err(py, &e))?;
        if default {
            let _ = self.summary.set(text.clone());
        }
        Ok(text)
    }

    /// The storages live after event `index` (None: at the peak), biggest first, as JSON rows.
    #[pyo3(signature = (index=None, limit=None))]
    fn live_json(
        &self,
        py: Python<'_>,
        index: Option<u64>,
        limit: Option<usize>,
    ) -> PyResult<String> {
        let t = self.main()?;
        let rules = &self.opened.frame_rules;
        py.detach(|| questions::live(t, rules, index, limit))
            .map_err(|e| self.err(py, &e))
    }

    /// The stacked bands over the run in `points` peak-preserving columns, as JSON arrays.
    fn timeline_json(&self, py: Python<'_>, points: usize) -> PyResult<String> {
        let t = self.main()?;
        py.detach(|| questions::timeline(t, points))
            .map_err(|e| self.err(py, &e))
    }

    /// The allocator's segments and blocks after event `index`, as JSON.
    fn allocator_json(&self, py: Python<'_>, index: u64) -> PyResult<String> {
        let t = self.main()?;
        py.detach(|| questions::allocator(t, index))
            .map_err(|e| self.err(py, &e))
    }

    /// `memtide check FILE …` on this trace (no second read; every device with events unless
    /// `device=` named one): `(status 0/1/2, lines, JSON)`.
    #[pyo3(signature = (*, max_peak=None, max_growth=None, window=None, allow_warnings=false))]
    fn check(
        &self,
        py: Python<'_>,
        max_peak: Option<&str>,
        max_growth: Option<&str>,
        window: Option<String>,
        allow_warnings: bool,
    ) -> PyResult<(u8, Vec<String>, String)> {
        let devices = crate::commands::gated(&self.opened);
        let path = &self.opened.path;
        crate::commands::limits(max_peak, max_growth, window, allow_warnings)
            .and_then(|lim| py.detach(|| crate::commands::judge(devices, path, &lim)))
            .map_err(|e| self.err(py, &e))
    }

    /// The picture `memtide plot FILE -o out.svg` draws.
    #[pyo3(signature = (width=1200, height=480))]
    fn svg(&self, py: Python<'_>, width: u32, height: u32) -> PyResult<String> {
        let t = self.main()?;
        let name = self.opened.path.file_name().map_or_else(
            || self.opened.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        py.detach(|| questions::svg(t, &name, width, height))
            .map_err(|e| self.err(py, &e))
    }
}

//! A device's allocator model: none, replayed, or still replaying on the load's model thread.
//! The explorer's first screen needs the timeline and the peak, not the allocator's
//! segments, so the door hands the devices over without waiting for the models; the first
//! ask for one waits for the thread (each model is handed out once, shared).

use crate::allocator::{Model, Models};
use std::sync::{Arc, Mutex, OnceLock};

/// The models of one load, still replaying, shared by its devices: whoever asks first waits
/// for the thread; the others then read what it gave.
struct Pending {
    models: Mutex<Option<Models>>,
    done: OnceLock<Vec<Arc<Model>>>,
}

impl Pending {
    /// Whether [`Pending::model`] would answer without waiting for the thread (models taken
    /// out but not yet given: another asker is waiting for them, so this one would too).
    fn finished(&self) -> bool {
        self.done.get().is_some()
            || self
                .models
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .as_ref()
                .is_some_and(Models::finished)
    }

    /// Model `j` of the load (None: the thread gave none, e.g. it panicked).
    fn model(&self, j: usize) -> Option<Arc<Model>> {
        self.done
            .get_or_init(|| {
                let models = self
                    .models
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                models
                    .map(Models::wait)
                    .unwrap_or_default()
                    .into_iter()
                    .map(Arc::new)
                    .collect()
            })
            .get(j)
            .cloned()
    }
}

/// One device's model.
#[derive(Clone, Default)]
pub(crate) struct ModelSlot {
    got: OnceLock<Option<Arc<Model>>>,
    /// The load's models still replaying, and which of them is this device's.
    pending: Option<(Arc<Pending>, usize)>,
}

impl ModelSlot {
    /// A model already replayed (or none).
    pub(crate) fn ready(model: Option<Model>) -> ModelSlot {
        ModelSlot {
            got: OnceLock::from(model.map(Arc::new)),
            pending: None,
        }
    }

    /// A slot per device of `names` for the load's `models`: model `j` goes to the first
    /// device of its name that has none yet. Slots wait for the models only when asked.
    pub(crate) fn assign(models: Models, names: &[impl AsRef<str>]) -> Vec<ModelSlot> {
        let mut of_device: Vec<Option<usize>> = vec![None; names.len()];
        for (j, name) in models.devices().iter().enumerate() {
            if let Some(k) =
                (0..names.len()).find(|&k| of_device[k].is_none() && names[k].as_ref() == name)
            {
                of_device[k] = Some(j);
            }
        }
        if !models.building() {
            let mut built: Vec<Option<Model>> = models.wait().into_iter().map(Some).collect();
            return of_device
                .iter()
                .map(|j| ModelSlot::ready(j.and_then(|j| built.get_mut(j)?.take())))
                .collect();
        }
        let shared = Arc::new(Pending {
            models: Mutex::new(Some(models)),
            done: OnceLock::new(),
        });
        of_device
            .iter()
            .map(|j| match j {
                Some(j) => ModelSlot {
                    got: OnceLock::new(),
                    pending: Some((Arc::clone(&shared), *j)),
                },
                None => ModelSlot::ready(None),
            })
            .collect()
    }

    /// The model, waiting for the load's model thread when it is still replaying.
    pub(crate) fn get(&self) -> Option<&Arc<Model>> {
        self.got
            .get_or_init(|| self.pending.as_ref().and_then(|(p, j)| p.model(*j)))
            .as_ref()
    }

    /// Whether [`ModelSlot::get`] would answer without waiting for a replay.
    pub(crate) fn settled(&self) -> bool {
        self.got.get().is_some() || self.pending.as_ref().is_none_or(|(p, _)| p.finished())
    }

    /// Whether the device has a model or one is replaying for it (without waiting).
    pub(crate) fn expected(&self) -> bool {
        match self.got.get() {
            Some(m) => m.is_some(),
            None => self.pending.is_some(),
        }
    }
}

impl std::fmt::Debug for ModelSlot {
    /// As the model it holds (`Some(..)` / `None`), or `replaying` before the first ask.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.got.get(), &self.pending) {
            (Some(m), _) => m.fmt(f),
            (None, None) => f.write_str("None"),
            (None, Some(_)) => f.write_str("replaying"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::formats::Threads;
    use crate::{open, OpenOptions, Progress};
    use std::time::{Duration, Instant};

    /// The door starts the models' replay itself: with nobody asking, each device's model
    /// settles (its thread ends), and once settled it is given at once, equal to a model
    /// asked for by waiting.
    #[test]
    fn a_model_settles_without_being_asked_and_is_then_given_at_once() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let f = root.join("sample-traces/cuda-oom.pickle");
        let mut o = OpenOptions::default();
        o.read.allocator_models = true;
        o.read.threads = Threads::Always;
        let opened = open(&f, &o, &Progress::new()).unwrap();
        let d = &opened.devices[0];
        assert!(d.has_allocator(), "the sample has segments");
        let t0 = Instant::now();
        while !d.allocator_settled() {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the model never settled: its replay was not started"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let given = format!("{:?}", d.allocator());
        let waited = open(&f, &o, &Progress::new()).unwrap();
        assert_eq!(given, format!("{:?}", waited.devices[0].allocator()));
        assert!(given.starts_with("Some("), "{given}");
    }
}

//! Which of a file's devices the user means: the one rule every command and screen uses.

/// `--device` names no device of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no device {want:?} in this file; it has: {}", available.join(", "))]
pub struct UnknownDevice {
    pub want: String,
    pub available: Vec<String>,
}

/// What a device holds, as the device rule weighs it when the user names none: a device
/// that ran out of memory before one that held memory, before one with events that never
/// held a byte, before an empty one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Holds {
    Nothing,
    /// Events, none of which held memory (a snapshot's `snapshot` or `free_completed`
    /// marker on a device its run never used).
    Events,
    /// Memory at some event.
    Memory,
    /// An OOM: the device a file of a run that ran out of memory is about.
    Oom,
}

/// Which of a file's devices the user means: `want` is a device name (`cuda:1`; on a ROCm
/// build PyTorch calls its `hip:N` devices `cuda:N`, so `cuda:N` names `hip:N` and the other
/// way round when the file has no device of that exact name), an ordinal (`1`: the device
/// whose name ends in `:1`, else the second device), or None for the first device that ran
/// out of memory, else the first that held memory, else the first with events, else the
/// first. `devices` gives each device's name and what it holds, in file order. The one rule
/// every command and screen uses.
pub fn pick_device<'a>(
    devices: impl IntoIterator<Item = (&'a str, Holds)>,
    want: Option<&str>,
) -> Result<usize, UnknownDevice> {
    let devices: Vec<(&str, Holds)> = devices.into_iter().collect();
    let Some(want) = want else {
        let most = devices.iter().map(|&(_, h)| h).max();
        return Ok(devices
            .iter()
            .position(|&(_, h)| Some(h) == most)
            .unwrap_or(0));
    };
    let ordinal = |name: &str| name.rsplit(':').next()?.parse::<usize>().ok();
    if let Some(i) = devices.iter().position(|&(name, _)| name == want) {
        return Ok(i);
    }
    if let Some(i) = devices
        .iter()
        .position(|&(name, _)| is_rocm_alias(want, name))
    {
        return Ok(i);
    }
    if let Ok(n) = want.parse::<usize>() {
        if let Some(i) = devices
            .iter()
            .position(|&(name, _)| ordinal(name) == Some(n))
        {
            return Ok(i);
        }
        if n < devices.len() {
            return Ok(n);
        }
    }
    Err(UnknownDevice {
        want: want.to_string(),
        available: devices.iter().map(|&(name, _)| name.to_string()).collect(),
    })
}

/// Whether `want` and `name` are one GPU under PyTorch's two names for it (`cuda:N` as
/// ROCm's PyTorch calls `hip:N`).
pub fn is_rocm_alias(want: &str, name: &str) -> bool {
    let split = |s: &str| {
        s.split_once(':')
            .map(|(kind, n)| (kind.to_string(), n.to_string()))
    };
    match (split(want), split(name)) {
        (Some((a, n)), Some((b, m))) => {
            n == m && matches!((a.as_str(), b.as_str()), ("cuda", "hip") | ("hip", "cuda"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_names_a_rocm_device_and_hip_a_cuda_one() {
        let amd = [("cpu", E), ("hip:0", E), ("hip:1", E)];
        assert_eq!(pick_device(amd, Some("cuda:1")), Ok(2));
        assert_eq!(pick_device(amd, Some("hip:0")), Ok(1));
        assert_eq!(pick_device(DEVS, Some("hip:0")), Ok(2));
        // An exact name wins over the alias, and other kinds never alias.
        let both = [("hip:0", E), ("cuda:0", E)];
        assert_eq!(pick_device(both, Some("cuda:0")), Ok(1));
        assert!(pick_device(amd, Some("xpu:1")).is_err());
        assert!(pick_device(amd, Some("cuda:2")).is_err());
    }

    const E: Holds = Holds::Events;
    const DEVS: [(&str, Holds); 3] = [("cpu", E), ("cuda:1", Holds::Nothing), ("cuda:0", E)];

    #[test]
    fn a_device_is_picked_by_name_then_ordinal_then_position() {
        assert_eq!(pick_device(DEVS, Some("cuda:1")), Ok(1));
        assert_eq!(pick_device(DEVS, Some("0")), Ok(2), "ordinal of cuda:0");
        assert_eq!(pick_device(DEVS, Some("1")), Ok(1), "ordinal of cuda:1");
        assert_eq!(pick_device([("cpu", E), ("x", E)], Some("1")), Ok(1));
    }

    #[test]
    fn without_a_choice_the_first_device_that_ran_out_of_memory_then_with_events() {
        use Holds::{Memory, Nothing, Oom};
        assert_eq!(pick_device([("a", Nothing), ("b", E)], None), Ok(1));
        // Markers alone (a device the run never used) give way to one that held memory.
        assert_eq!(
            pick_device([("a", E), ("b", Memory), ("c", Memory)], None),
            Ok(1)
        );
        assert_eq!(pick_device([("a", Memory), ("b", Oom)], None), Ok(1));
        assert_eq!(pick_device([("a", Nothing), ("b", Nothing)], None), Ok(0));
        let oom_second = [
            ("cuda:0", E),
            ("cuda:1", Oom),
            ("cuda:2", E),
            ("cuda:3", Oom),
        ];
        assert_eq!(pick_device(oom_second, None), Ok(1));
        // A name still wins over an OOM elsewhere.
        assert_eq!(pick_device(oom_second, Some("cuda:0")), Ok(0));
    }

    #[test]
    fn an_unknown_device_lists_the_file_s_devices() {
        let e = pick_device(DEVS, Some("xpu:0")).expect_err("not in the file");
        assert_eq!(
            e.to_string(),
            "no device \"xpu:0\" in this file; it has: cpu, cuda:1, cuda:0"
        );
        assert!(pick_device(DEVS, Some("7")).is_err());
    }
}

//! Which of a file's devices the user means: the one rule every command and screen uses.

/// `--device` names no device of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no device {want:?} in this file; it has: {}", available.join(", "))]
pub struct UnknownDevice {
    pub want: String,
    pub available: Vec<String>,
}

/// Which of a file's devices the user means: `want` is a device name (`cuda:1`; on a ROCm
/// build PyTorch calls its `hip:N` devices `cuda:N`, so `cuda:N` names `hip:N` and the other
/// way round when the file has no device of that exact name), an ordinal (`1`: the device
/// whose name ends in `:1`, else the second device), or None for the first device with events
/// (else the first). `devices` gives each device's name and whether it has events, in file
/// order. The one rule every command and screen uses.
pub fn pick_device<'a>(
    devices: impl IntoIterator<Item = (&'a str, bool)>,
    want: Option<&str>,
) -> Result<usize, UnknownDevice> {
    let devices: Vec<(&str, bool)> = devices.into_iter().collect();
    let Some(want) = want else {
        return Ok(devices.iter().position(|&(_, busy)| busy).unwrap_or(0));
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
        let amd = [("cpu", true), ("hip:0", true), ("hip:1", true)];
        assert_eq!(pick_device(amd, Some("cuda:1")), Ok(2));
        assert_eq!(pick_device(amd, Some("hip:0")), Ok(1));
        assert_eq!(pick_device(DEVS, Some("hip:0")), Ok(2));
        // An exact name wins over the alias, and other kinds never alias.
        let both = [("hip:0", true), ("cuda:0", true)];
        assert_eq!(pick_device(both, Some("cuda:0")), Ok(1));
        assert!(pick_device(amd, Some("xpu:1")).is_err());
        assert!(pick_device(amd, Some("cuda:2")).is_err());
    }

    const DEVS: [(&str, bool); 3] = [("cpu", true), ("cuda:1", false), ("cuda:0", true)];

    #[test]
    fn a_device_is_picked_by_name_then_ordinal_then_position() {
        assert_eq!(pick_device(DEVS, Some("cuda:1")), Ok(1));
        assert_eq!(pick_device(DEVS, Some("0")), Ok(2), "ordinal of cuda:0");
        assert_eq!(pick_device(DEVS, Some("1")), Ok(1), "ordinal of cuda:1");
        assert_eq!(pick_device([("cpu", true), ("x", true)], Some("1")), Ok(1));
    }

    #[test]
    fn without_a_choice_the_first_device_with_events() {
        assert_eq!(pick_device([("a", false), ("b", true)], None), Ok(1));
        assert_eq!(pick_device([("a", false), ("b", false)], None), Ok(0));
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

//! Which library made an allocation, from the modules of its call chain
//! (`CUDA_CALLCHAINS.module`, innermost first) or, failing that, its program counter: a
//! library's own allocations are what a framework's snapshot cannot see.

/// Libraries recognised in a module path (`/usr/lib/libnccl.so.2` → `nccl`), in the order
/// they are looked for in one module name. The CUDA runtime and driver themselves, and the
/// profiler's injection libraries, are skipped: they are how every allocation is made, not
/// who asked for it.
const KNOWN: [(&str, &str); 14] = [
    ("libnccl", "nccl"),
    ("libcudnn", "cudnn"),
    ("libcublaslt", "cublas"),
    ("libcublas", "cublas"),
    ("libcufft", "cufft"),
    ("libcusparse", "cusparse"),
    ("libcusolver", "cusolver"),
    ("libcurand", "curand"),
    ("libnvshmem", "nvshmem"),
    ("libnvrtc", "nvrtc"),
    ("libtriton", "triton"),
    ("libcupy", "cupy"),
    ("libc10_cuda", "pytorch (outside the snapshot)"),
    ("libtorch_cuda", "pytorch (outside the snapshot)"),
];

/// Modules that are the allocation's mechanism, not its owner.
const MECHANISM: [&str; 6] = [
    "libcudart",
    "libcuda.",
    "libcuda-",
    "libcupti",
    "libtoolsinjection",
    "libnvtx",
];

/// The source of allocations made without a program counter (`pc = 0`): the driver or a
/// library made them on its own behalf, with no user call on the stack.
pub(crate) const LIBRARY_INTERNAL: &str = "library-internal";
/// The source of the rest.
pub(crate) const OTHER: &str = "other";

/// The library a module path names, if it is one memtide recognises.
pub(crate) fn library_of_module(module: &str) -> Option<&'static str> {
    let base = module
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(module)
        .to_ascii_lowercase();
    if MECHANISM.iter().any(|m| base.starts_with(m)) {
        return None;
    }
    KNOWN
        .iter()
        .find(|(prefix, _)| base.starts_with(prefix))
        .map(|&(_, name)| name)
}

/// The innermost recognised library on a call chain (`modules`, innermost first).
pub(crate) fn library_of_chain(modules: &[&str]) -> Option<&'static str> {
    modules.iter().find_map(|m| library_of_module(m))
}

/// The source of an allocation whose chain names no library: `library-internal` when its
/// program counter is 0, else `other`.
pub(crate) fn without_library(pc: u64) -> &'static str {
    if pc == 0 {
        LIBRARY_INTERNAL
    } else {
        OTHER
    }
}

/// The source of one allocation: the innermost recognised library on its call chain
/// (`modules`, innermost first), else [`without_library`].
#[cfg(test)]
pub(crate) fn source_of(modules: &[&str], pc: u64) -> &'static str {
    library_of_chain(modules).unwrap_or_else(|| without_library(pc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_innermost_known_library_wins_over_the_runtime() {
        let chain = [
            "/usr/local/cuda/lib64/libcudart.so.12",
            "/opt/nccl/lib/libnccl.so.2.21.5",
            "/site-packages/torch/lib/libtorch_cuda.so",
        ];
        assert_eq!(source_of(&chain, 0x7f00), "nccl");
        assert_eq!(
            source_of(&["libcudnn_engines_precompiled.so.9"], 1),
            "cudnn"
        );
        assert_eq!(source_of(&["libcublasLt.so.12"], 1), "cublas");
    }

    #[test]
    fn without_a_library_pc_zero_is_library_internal_else_other() {
        assert_eq!(source_of(&[], 0), LIBRARY_INTERNAL);
        assert_eq!(source_of(&["/home/u/app"], 0x4000), OTHER);
        assert_eq!(source_of(&["libcuda.so.1"], 0), LIBRARY_INTERNAL);
    }
}

//! The explicit default text of the codes that have no explainer of their
//! own (`explain::explainer` says which): their cause and fixes do not depend
//! on the machine, only on the code. A code with an explainer may have an
//! entry too, used when its facts leave the cause or the fixes empty. A test
//! walks every code: one without an explainer and without an entry here fails.

use super::codes::Code;

/// A code's cause and fixes when nothing more specific is known.
pub(crate) struct DefaultText {
    pub cause: &'static str,
    pub fixes: &'static [&'static str],
}

const fn t(cause: &'static str, fixes: &'static [&'static str]) -> DefaultText {
    DefaultText { cause, fixes }
}

/// The default text of `code`, if it has one.
pub(crate) fn default_text(code: Code) -> Option<DefaultText> {
    Some(match code {
        Code::NvccNotFound => t("nvcc is not on PATH, and no CUDA_HOME / NVCC names a toolkit.", &[]),
        Code::DriverNotLoaded => t("Nothing can talk to the NVIDIA kernel driver: the nvidia module is not loaded (Secure Boot refused an unsigned module, the kernel was updated without rebuilding it, or nouveau holds the GPU).", &[]),
        Code::NoDeviceVisible => t("The CUDA driver shows this program no GPU: CUDA_VISIBLE_DEVICES hides them, the container was started without GPUs, /dev/nvidia* is not accessible, or there is none.", &[]),
        Code::CudaHomeInvalid => t(
            "CUDA_HOME (or CUDA_PATH) does not name a toolkit root: it is empty, holds several paths, or points where no bin/nvcc is.",
            &["set CUDA_HOME to exactly one toolkit root, the directory that holds bin/nvcc (e.g. CUDA_HOME=/usr/local/cuda-12.4), or unset it"],
        ),
        Code::ToolkitIncomplete => t(
            "The CUDA toolkit lacks a component a compile needs (a header, cicc, ptxas, the crt), or mixes files of two releases.",
            &["reinstall the toolkit as one release (`cargo cuda toolkit install 13.0`, or the distribution's cuda-toolkit package); `cargo cuda toolkits` shows what each install holds"],
        ),
        Code::PtxasTooOld => t(
            "ptxas is older than the compiler that wrote the PTX (or than the GPU it must target): it does not know that PTX version or target.",
            &["use the ptxas of the same release as the compiler that wrote the PTX, or newer (one toolkit, not a mix)"],
        ),
        Code::SccacheNvccFailed => t("sccache failed while wrapping nvcc, not nvcc itself.", &[]),
        Code::ArchTooNewForNvcc => t(
            "This nvcc does not know the requested GPU architecture: the toolkit is older than the GPU.",
            &["use a toolkit that targets the architecture (`cargo cuda toolkit install 13.0`), or build for an older architecture plus PTX"],
        ),
        Code::ArchDroppedByNvcc => t(
            "This nvcc no longer targets the requested GPU architecture: the toolkit is newer than the last release that supported it.",
            &["remove the architecture from the arch list, or build it with an older toolkit"],
        ),
        Code::ArchInvalid => t(
            "nvcc was given something that is not an architecture name (a typo, an empty value, or a name of another tool).",
            &["use nvcc's spelling: sm_XY or compute_XY (`nvcc --list-gpu-arch` lists them)"],
        ),
        Code::ArchFeatureNeedsHigherTarget => t(
            "The code uses an instruction or type the compile target lacks.",
            &["compile the code for an architecture that has it, or guard it with `#if __CUDA_ARCH__ >= ...` and give older targets a fallback"],
        ),
        Code::ArchNotDetected => t("No GPU was visible to choose the architecture from, so the build had no architecture to compile for.", &[]),
        Code::HostCompilerUnsupported => t(
            "nvcc does not accept this host compiler version: it is newer (or older) than this CUDA release supports.",
            &["point nvcc at a supported host compiler (NVCC_CCBIN or -ccbin), or use a CUDA release that supports this one"],
        ),
        Code::PtxJitCompilerMissing => t("libcuda could not load the driver's PTX JIT library (libnvidia-ptxjitcompiler.so.1).", &[]),
        Code::LibcudaNotFound => t("libcuda, the driver's CUDA library, is not on the loader's path: no NVIDIA driver is installed here, or the program runs where the driver's libraries are not mapped (a container, WSL).", &[]),
        Code::NvmlNotFound => t("libnvidia-ml.so (NVML, part of the driver) could not be loaded: the driver's user-space libraries are missing or not on the loader's path.", &[]),
        Code::DeviceFunctionUnresolved => t(
            "A kernel calls a device function defined in another file, and the build did not link device code across files.",
            &["compile with relocatable device code (-rdc=true, Build::rdc(true)) and device-link the objects, or define the function in the same .cu file"],
        ),
        Code::CompilerKilled => t(
            "A compiler stage was killed with signal 9, which during a build almost always means the out-of-memory killer stopped it.",
            &[
                "build with fewer parallel jobs (CARGO_BUILD_JOBS=2, or NUM_JOBS for the build script): each nvcc stage can need gigabytes",
                "add RAM or swap (or raise the container's memory limit), or split the largest .cu files",
            ],
        ),
        Code::CudaBackendNotBuilt => t(
            "The library the program uses (libtorch, ONNX Runtime, llama.cpp, a Python package) is a CPU-only build, or its CUDA part was not linked: it cannot run anything on the GPU.",
            &[
                "install the framework's CUDA build (a libtorch for cu12x, ONNX Runtime's GPU package or ort's CUDA binaries, llama.cpp built with GGML_CUDA=ON) and point the crate at it (LIBTORCH, ORT_DYLIB_PATH)",
                "for tch-rs, make sure libtorch_cuda is linked: a build.rs like tch-rs's own (`-Wl,--no-as-needed`, `-ltorch_cuda`)",
            ],
        ),
        Code::ContainerDeviceMissing => t(
            "The container runtime was asked to pass in a GPU device node (/dev/nvidia0, /dev/nvidia-uvm, /dev/nvidiactl) that does not exist on the host: no NVIDIA driver is loaded there, nvidia_uvm is not loaded, or the device list was written for another platform.",
            &[
                "on the host, `nvidia-smi` must work; create the nodes with `sudo nvidia-modprobe -u -c=0`",
                "drop explicit `--device /dev/nvidia*` entries and start the container with `--gpus all` (NVIDIA container toolkit), which maps the nodes the host has",
            ],
        ),
        Code::ContainerRuntimeMissing => t(
            "Docker was asked for GPUs (`--gpus`) but has no NVIDIA runtime to provide them: the NVIDIA container toolkit is not installed or not configured.",
            &[
                "install the NVIDIA container toolkit and configure Docker: `sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`",
                "on a machine without an NVIDIA GPU, drop `--gpus`",
            ],
        ),
        Code::TorchCudaVersionMismatch => t(
            "torch.utils.cpp_extension refuses to build: the nvcc it found (CUDA_HOME or PATH) belongs to another CUDA release than the one PyTorch was built with.",
            &[
                "point CUDA_HOME at a toolkit of PyTorch's CUDA version (`python -c 'import torch; print(torch.version.cuda)'` prints it)",
                "or install the PyTorch build for the installed toolkit's CUDA version",
            ],
        ),
        Code::NouveauHoldsGpu => t(
            "Another driver (nouveau, or a framebuffer driver) obtained the GPU first, so the nvidia module is loaded but cannot drive it.",
            &["blacklist nouveau (`blacklist nouveau` and `options nouveau modeset=0` in /etc/modprobe.d/blacklist-nouveau.conf), rebuild the initramfs (`sudo update-initramfs -u`) and reboot"],
        ),
        Code::GpuUnsupportedByDriver => t(
            "The loaded NVIDIA kernel module does not support this GPU: the open kernel modules need a GPU with a GSP (Turing or newer), and legacy GPUs need a legacy driver branch.",
            &[
                "on a pre-Turing GPU, install the proprietary kernel module (not the -open package) of a branch that supports the GPU",
                "for a legacy GPU, install the legacy branch NVIDIA lists for it",
            ],
        ),
        Code::MsbuildCudaIntegrationMissing => t(
            "CMake's Visual Studio generator found the CUDA toolkit but not its MSBuild integration (the CUDA .props/.targets in Visual Studio's BuildCustomizations).",
            &[
                "reinstall CUDA with the Visual Studio Integration component, or copy `extras/visual_studio_integration/MSBuildExtensions/*` into Visual Studio's `MSBuild/Microsoft/VC/<version>/BuildCustomizations`",
                "or use the Ninja generator with CUDACXX pointing at nvcc",
            ],
        ),
        Code::OutOfMemory => t(
            "The GPU ran out of memory: this program (or another process on the same GPU) holds more device memory than the GPU has.",
            &[
                "allocate less (smaller batches or buffers), free device memory earlier, or stop other processes using the GPU (`nvidia-smi` lists them)",
            ],
        ),
        Code::IllegalAddress => t(
            "A kernel faulted: it read or wrote memory it must not (out of bounds, freed or misaligned), and the CUDA context is unusable afterwards.",
            &["run the program under `compute-sanitizer` to find the kernel, thread and address; check index bounds and the buffer sizes passed to the kernel"],
        ),
        Code::CudaCompiledAsCpp => t(
            "A host C++ compiler read CUDA code (`__global__`, `__device__`): the .cu file went to g++/clang++/cl, or a .cpp file went to nvcc without `-x cu`.",
            &["compile .cu files with nvcc (cc-rs: `.cuda(true)`), and give nvcc `-x cu` for CUDA code in .cpp files"],
        ),
        Code::CxxStandardTooOld => t(
            "A CUDA library header (CCCL's Thrust, CUB, libcu++) needs a newer C++ standard than the file is compiled with; CUDA 13's CCCL needs C++17.",
            &["compile with -std=c++17 (Build::std(\"17\"); CMake CUDA_STANDARD 17)"],
        ),
        Code::MathConstantsUndefined => t(
            "The source uses an M_* math constant (M_PI, M_SQRT1_2, ...), which is not standard C++: MSVC defines them only with _USE_MATH_DEFINES, NVRTC not at all.",
            &["compile with -D_USE_MATH_DEFINES (Build::define(\"_USE_MATH_DEFINES\", None)), or define the constant in the source"],
        ),
        Code::KernelExceedsTargetLimit => t(
            "A kernel declares more static shared memory (48 KB per block) or takes more parameter bytes (4 KB before CUDA 12.1, 32,764 bytes after it on sm_70+) than the compiler allows for its target.",
            &["move large shared arrays to dynamic shared memory (`extern __shared__`, cudaFuncSetAttribute above 48 KB), and pass large parameters through device memory"],
        ),
        Code::LaunchOutOfResources => t(
            "The kernel launch asked for more registers or shared memory per block than the GPU has: too many threads per block for the kernel's register use.",
            &["launch fewer threads per block, or cap registers with __launch_bounds__ / -maxrregcount (`-Xptxas -v` shows the usage)"],
        ),
        Code::CudaInitFailed => t(
            "CUDA failed to initialise in this process: CUDA was used before a fork() and again in the child, the driver is not running, or no usable GPU is visible.",
            &["initialise CUDA after fork() (or use spawn), and check that `nvidia-smi` works in the same environment"],
        ),
        Code::KernelNotFound => t(
            "The module has no function by the requested name: a C++ kernel's name is mangled unless declared `extern \"C\"`, a template kernel was never instantiated, or another module was loaded.",
            &["declare the kernel `extern \"C\" __global__` (C++ mangles the name), or load it by its mangled name; the generated module's ENTRIES lists the names"],
        ),
        Code::InvalidKernelImage => t(
            "The driver rejected the bytes given to it as a module: not a cubin, fatbin or PTX it reads (a truncated file, a host object, or a cubin for another GPU).",
            &["load the image cuda-build generated (IMAGE in the generated module), rebuilt for this GPU"],
        ),
        Code::ForwardCompatUnsupported => t(
            "A forward-compatibility libcuda (cuda-compat) was loaded on a GPU that does not support forward compatibility (it is meant for data-center GPUs).",
            &[
                "remove the cuda-compat directory (/usr/local/cuda/compat) from LD_LIBRARY_PATH and /etc/ld.so.conf.d, so the host driver's libcuda is used",
                "upgrade the host driver to one that supports the program's CUDA version (`nvidia-smi` shows it)",
            ],
        ),
        Code::SystemNotReady => t(
            "The system is not ready for CUDA work: on NVSwitch systems (HGX, DGX) the NVIDIA Fabric Manager is not running.",
            &["start the NVIDIA Fabric Manager of exactly the driver's version: `sudo systemctl enable --now nvidia-fabricmanager`"],
        ),
        Code::InvalidDeviceOrdinal => t(
            "The program asked for a GPU index that does not exist among the visible GPUs.",
            &["use a device index below the number of visible GPUs (`nvidia-smi -L`); CUDA_VISIBLE_DEVICES renumbers them from 0"],
        ),
        Code::DeviceUnavailable => t(
            "The GPU is busy or unavailable: another process holds it in exclusive compute mode, or it is in a prohibited or failed state.",
            &["wait for or stop the process holding the GPU, or set the compute mode back: `sudo nvidia-smi -c DEFAULT`"],
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::explain::{explain, explainer, Explainer};
    use crate::diagnose::scan::{Fact, Hit, Scan};
    use crate::diagnose::Context;

    /// Every code the engine gives has an explainer or an explicit default
    /// text; none falls back to its title and the generic pointer.
    #[test]
    fn no_code_falls_back_silently() {
        let mut silent = Vec::new();
        for &code in Code::ALL {
            if let Explainer::Default = explainer(code) {
                let t = default_text(code).unwrap_or_else(|| {
                    panic!(
                        "{code} has no explainer and no default text: it would fall back silently"
                    )
                });
                assert!(!t.cause.is_empty() && !t.fixes.is_empty(), "{code}");
            }
            // Through the engine, with nothing but the code known.
            let mut scan = Scan::default();
            scan.hits.push(Hit {
                code,
                offset: 0,
                evidence: "x".into(),
                fact: Fact::None,
                confidence: 0.9,
            });
            let d = &explain(scan, &Context::default())[0];
            let title = code.doc().map(|d| format!("{}.", d.title));
            if Some(&d.cause) == title.as_ref() {
                silent.push(format!("{code}: the cause is only the title"));
            }
            if !d
                .fix
                .iter()
                .any(|f| !f.starts_with("see `cargo cuda explain"))
            {
                silent.push(format!("{code}: only the generic pointer as a fix"));
            }
        }
        assert!(silent.is_empty(), "silent defaults:\n{}", silent.join("\n"));
    }
}

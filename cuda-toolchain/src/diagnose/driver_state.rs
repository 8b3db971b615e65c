//! The driver's state lost (after suspend/resume, a GPU reset, an Xid
//! fault) and the message that cannot tell it from a kernel fault:
//! `unspecified launch failure` (719). Alone, 719 is a hint below 0.5 that
//! names both causes and the check that separates them; with a resume or
//! an Xid in the log it is the driver's state.

use super::codes::Code;
use super::scan::{Fact, LineCx};
use super::view::{push_unique, Finding, View};
use super::Diagnosis;

/// The check that tells a kernel fault from a broken driver state.
const TRIVIAL_PROGRAM: &str = "run a trivial CUDA program in the same environment (`nvidia-smi`, cuda-samples' deviceQuery, or `python -c \"import torch; torch.zeros(1).cuda()\"`)";

/// Context: lines that show the machine resumed from suspend or the GPU
/// faulted. They make later generic errors the driver's state.
pub(crate) fn context(cx: &mut LineCx) {
    let l = cx.line;
    let lower = l.to_ascii_lowercase();
    let resumed = [
        "after suspend",
        "from suspend",
        "suspend/resume",
        "suspend and resume",
        "resume from sleep",
        "resuming from sleep",
        "resumed from sleep",
        "after resume",
        "from hibernat",
        "after hibernat",
        "wake from sleep",
        "woke from sleep",
        "pm: suspend",
        "systemd-sleep",
    ]
    .iter()
    .any(|w| lower.contains(w));
    let fallen = lower.contains("fallen off the bus");
    let xid = l.contains("NVRM: Xid") || l.contains("Xid (PCI:");
    if !(resumed || fallen || xid) {
        return;
    }
    if cx.scan.driver_fault.is_none() {
        cx.scan.driver_fault = Some(super::scan::evidence(l));
    }
    if fallen {
        cx.hit_as(
            Code::DriverStateLost,
            Fact::Note("The kernel log says the GPU has fallen off the bus (Xid 79): the driver lost the GPU; every CUDA call fails until it is reset or the machine rebooted. Repeated, it points at power, cooling or the PCIe slot."),
            0.85,
        );
    }
}

/// `driver-state-lost`.
pub(super) fn explain(f: &Finding, view: &View, d: &mut Diagnosis) {
    let fault = view.scan.driver_fault.clone();
    if d.cause.is_empty() && !f.facts.iter().any(|x| matches!(x, Fact::Note(_))) {
        d.cause = match &fault {
            Some(line) => format!("CUDA calls fail with an error that names no cause, and the log shows why the driver's state is gone: `{line}`."),
            None => "CUDA calls fail with an error that names no cause: the driver lost the GPU's state (after suspend/resume, a GPU reset or an Xid fault).".into(),
        };
    }
    d.fix.push("reload the UVM module with no CUDA program running: `sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm`, or reboot".into());
    d.fix.push("on a laptop or desktop that suspends, enable NVIDIA's suspend services (`sudo systemctl enable nvidia-suspend nvidia-resume nvidia-hibernate`) with the module option NVreg_PreserveVideoMemoryAllocations=1".into());
    d.fix.push(
        "`dmesg | grep -i -E 'xid|nvrm'` shows GPU faults; repeated Xid 79 means power or hardware"
            .into(),
    );
    push_unique(
        &mut d.alternatives,
        format!("illegal-address: if a trivial program still works ({TRIVIAL_PROGRAM}), the program's own kernel faulted; run it under compute-sanitizer."),
    );
}

/// `illegal-address`: decisive for 700 and 716; for `unspecified launch
/// failure` (719) alone it names both causes and the check between them.
pub(super) fn explain_launch_failure(f: &Finding, _view: &View, d: &mut Diagnosis) {
    let only_719 = f
        .facts
        .iter()
        .filter_map(|x| match x {
            Fact::Cuda { err, .. } => Some(err.num),
            _ => None,
        })
        .all(|n| n == 719)
        && f.facts.iter().any(|x| matches!(x, Fact::Cuda { .. }));
    if !only_719 {
        return;
    }
    d.cause = "`unspecified launch failure` (719): a kernel stopped abnormally, or the driver lost the GPU's state; the message alone cannot tell which.".into();
    d.fix.push(format!("{TRIVIAL_PROGRAM}: if it fails too, the driver's state is broken (driver-state-lost): reload nvidia_uvm (`sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm`) or reboot"));
    d.fix.push("if it works, run the failing program under `compute-sanitizer` to find the kernel, thread and address".into());
    push_unique(
        &mut d.alternatives,
        "driver-state-lost: common after suspend/resume or an Xid fault in `dmesg`; then even trivial kernels fail.".into(),
    );
}

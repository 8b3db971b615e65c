//! The sample workload kernels. OWNER: workload helper.

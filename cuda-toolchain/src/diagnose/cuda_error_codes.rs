//! Which diagnosis a CUDA error points to: the table (`crate::cuda_errors`,
//! below both the probe and diagnose) names each row's code by its stable
//! spelling; this reads it as a [`Code`].

use super::codes::Code;
use crate::cuda_errors::CudaError;

impl CudaError {
    /// The diagnosis code this error maps to.
    pub(crate) fn code(&self) -> Code {
        Code::parse(self.code_name).unwrap_or(Code::Other(self.code_name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cuda_error_names_a_known_code() {
        for e in crate::cuda_errors::ERRORS {
            assert!(
                Code::ALL.contains(&e.code()),
                "CUDA error {} names `{}`, which is not a diagnosis code",
                e.num,
                e.code_name
            );
        }
    }
}
